"""Where the ``shardscope`` executable is: the CPU backend's ranks run ``shardscope worker``."""

import os
import shutil

_HERE = os.path.dirname(os.path.abspath(__file__))


def shardscope_binary() -> str:
    """The shardscope executable: $SHARDSCOPE_BINARY, the one installed with this package,
    the one of the build tree this package sits in, else shardscope on $PATH; "" if none."""
    env = os.environ.get("SHARDSCOPE_BINARY")
    if env:
        return env
    for candidate in (
        os.path.join(_HERE, "bin", "shardscope"),  # cmake --install
        os.path.join(_HERE, os.pardir, os.pardir, "shardscope"),  # build/python/shardscope
    ):
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.normpath(candidate)
    return shutil.which("shardscope") or ""
