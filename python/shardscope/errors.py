"""The exceptions ShardScope raises, carrying the command line's one-line message.

``InputError`` (a ``ValueError``) is bad input: a config, a plan, a trace, an option; the
command line exits with 2 for it. ``RunError`` (a ``RuntimeError``) is a run that failed
(a rank crashed, a file could not be written). ``Cancelled`` (a ``KeyboardInterrupt``) is a
run stopped by Ctrl-C or a signal.
Each has ``code``: the status code's name (``"invalid_argument"``, ``"not_found"``, ...).
"""


class Error(Exception):
    """Base of every ShardScope error."""

    code = "internal"


class InputError(Error, ValueError):
    """Bad input: the message names the file, the experiment or event, and the field."""

    code = "invalid_argument"


class RunError(Error, RuntimeError):
    """A run or a write that failed for a reason other than its input."""


class Cancelled(Error, KeyboardInterrupt):
    """A run stopped by Ctrl-C (SIGINT, SIGTERM or SIGHUP); nothing was left in the store.
    Also a KeyboardInterrupt, so ``except KeyboardInterrupt`` catches it."""

    code = "cancelled"
