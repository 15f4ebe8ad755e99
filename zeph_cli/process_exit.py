"""How the `zeph` process ends once its command has finished.

Invariant: the exit code and everything the command wrote are kept. The exit
handlers (`atexit`, including `weakref.finalize` clean-ups and logging's flush)
run, stdout and stderr are flushed, then the process leaves without the
interpreter's teardown: freeing the thousands of classes a provider SDK defines
takes 0.1–0.2 s and does nothing a finished command needs (the store's commits
are durable the moment they are made; zeph is safe under `kill -9`). While a
thread other than the main one is still running, the normal exit is used, which
waits for it.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def _others_running() -> bool:
    main = threading.main_thread()
    return any(t is not main and not t.daemon and t.is_alive() for t in threading.enumerate())


def _flush(stream) -> None:
    """Flush a standard stream; a reader that has gone (a closed pipe, as after `| head`) drops the rest."""
    try:
        if stream is not None:
            stream.flush()
    except (OSError, ValueError):  # a broken pipe, or a closed or detached stream: nothing can be written
        pass


def leave(code: int) -> NoReturn:
    """End the process with `code` after the command is done (see the module's invariant)."""
    if _others_running():
        sys.exit(code)
    atexit._run_exitfuncs()
    _flush(sys.stdout)
    _flush(sys.stderr)
    os._exit(code)
