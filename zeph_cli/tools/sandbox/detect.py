"""Which sandbox backends work here: each probed in a child, once per process.

Invariant: a probe runs at most once per process (the answer is cached for
every agent and thread) and only when a sandboxed command or a state report
first needs it, so start-up pays nothing.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from .bubblewrap import probe_bubblewrap
from .landlock_backend import probe_landlock
from .seatbelt import probe_seatbelt

__all__ = ["BACKEND_CHOICES", "bubblewrap_status", "filesystem_backend"]

BACKEND_CHOICES = ("auto", "landlock", "seatbelt", "none")

T = TypeVar("T")


def _once(probe: Callable[[], T]) -> Callable[[], T]:
    lock = threading.Lock()
    cached = functools.cache(probe)

    @functools.wraps(probe)
    def run() -> T:
        with lock:
            return cached()

    return run


landlock_problem = _once(probe_landlock)
seatbelt_problem = _once(probe_seatbelt)
bubblewrap_status = _once(probe_bubblewrap)


def filesystem_backend(choice: str = "auto") -> tuple[str | None, str | None]:
    """(backend, None) for the backend that confines writes here, or (None, why none does).

    `choice` "auto" picks by platform; "landlock" or "seatbelt" insists on one; "none" uses no backend.
    """
    if choice not in BACKEND_CHOICES:
        raise ValueError(f"unknown sandbox backend {choice!r}: expected one of {', '.join(BACKEND_CHOICES)}")
    if choice == "none":
        return None, "no sandbox backend was chosen"
    if choice == "auto":
        if sys.platform.startswith("linux"):
            choice = "landlock"
        elif sys.platform == "darwin":
            choice = "seatbelt"
        else:
            return None, f"no sandbox backend for {sys.platform}"
    problem = landlock_problem() if choice == "landlock" else seatbelt_problem()
    return (None, problem) if problem else (choice, None)
