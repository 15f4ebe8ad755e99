"""How the `zeph` process ends once its command has finished.

Invariant: the exit code and everything the command wrote are kept. The exit
handlers (`atexit`, including `weakref.finalize` clean-ups and logging's flush)
run, stdout and stderr are flushed, then the process leaves without the
interpreter's teardown: freeing the thousands of classes a provider SDK defines
takes 0.1–0.2 s and does nothing a finished command needs (the store's commits
are durable the moment they are made; zeph is safe under `kill -9`). While a
thread other than the main one is still running, the normal exit is used, which
waits for it — unless that thread was marked `abandon_at_exit` (work nobody
waits for any more, such as loading a model the command never used: leaving
without teardown is safe under it, where the normal exit would wait for it or
free what it uses). A last flush that fails for want of room turns exit code 0
into 1; a reader that has gone (a closed pipe) does not.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import weakref
from typing import NoReturn

_abandoned: "weakref.WeakSet[threading.Thread]" = weakref.WeakSet()


def abandon_at_exit(thread: threading.Thread) -> None:
    """`thread` need not finish before the process leaves (see the module's invariant)."""
    _abandoned.add(thread)


def _others_running() -> bool:
    main = threading.main_thread()
    return any(
        t is not main and not t.daemon and t.is_alive() and t not in _abandoned for t in threading.enumerate()
    )


def _flush(stream) -> bool:
    """Flush a standard stream; False when what it held could not be written (a full disk), True also when
    its reader has gone (a closed pipe, as after `| head`: the rest is dropped) or it is closed."""
    try:
        if stream is not None:
            stream.flush()
    except (BrokenPipeError, ValueError):
        pass
    except OSError:
        return False
    return True


def leave(code: int) -> NoReturn:
    """End the process with `code` after the command is done (see the module's invariant)."""
    if _others_running():
        sys.exit(code)
    atexit._run_exitfuncs()
    written = _flush(sys.stdout) & _flush(sys.stderr)
    os._exit(code if written or code else 1)
