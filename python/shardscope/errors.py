"""The exceptions ShardScope raises, carrying the command line's one-line message.

``InputError`` (a ``ValueError``) is bad input: a config, a plan, a trace, an option; the
command line exits with 2 for it. ``RunError`` (a ``RuntimeError``) is a run that failed
(a rank crashed, a file could not be written). Both derive from ``Error``.
``Cancelled`` is a run stopped by Ctrl-C or a signal: a ``KeyboardInterrupt`` and nothing
else (not an ``Exception``, not an ``Error``), so ``except Exception:`` lets it through as it
lets Ctrl-C through; catch it as ``shardscope.Cancelled`` or ``KeyboardInterrupt``.
Each has ``code``: the status code's name (``"invalid_argument"``, ``"not_found"``, ...).
"""


class Error(Exception):
    """Base of ShardScope's errors (InputError, RunError; not Cancelled)."""

    code: str = "internal"


class InputError(Error, ValueError):
    """Bad input: the message names the file, the experiment or event, and the field."""

    code = "invalid_argument"


class RunError(Error, RuntimeError):
    """A run or a write that failed for a reason other than its input."""


class Cancelled(KeyboardInterrupt):
    """A run stopped by Ctrl-C (SIGINT, SIGTERM or SIGHUP); nothing was left in the store.
    A KeyboardInterrupt only (BaseException's branch), so that ``except Exception:`` does
    not swallow it; ``except KeyboardInterrupt`` and ``except shardscope.Cancelled`` catch it."""

    code: str = "cancelled"
