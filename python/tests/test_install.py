"""`cmake --install` puts a working package (and the binary its CPU runs need) under a
prefix, importable from there."""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import BUILD, SMALL


def test_installed_package_imports_and_simulates(tmp_path):
    if shutil.which("cmake") is None:
        pytest.skip("no cmake")
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", BUILD, "--prefix", str(prefix)], check=True,
                   capture_output=True)
    site = prefix / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / \
        "dist-packages"
    code = ("import shardscope as ss, shardscope._binary as b; print(ss.__file__); "
            "print(b.shardscope_binary()); "
            f"print(ss.simulate('v2lite_tp2', config={SMALL!r}, decode_steps=1)['ttft_s'])")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SHARDSCOPE_BINARY")}
    env["PYTHONPATH"] = str(site)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    module, binary, ttft = p.stdout.split()
    assert module.startswith(str(site))
    assert binary == str(site / "shardscope" / "bin" / "shardscope")
    assert float(ttft) > 0
