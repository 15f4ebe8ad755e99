"""The cyclic garbage collector while zeph starts.

Invariant: collection is paused only while start-up runs, and is back on once the agent is built
(`paused_collection()` ends, however it ends). Start-up imports a provider SDK and the store and
creates some hundred thousand objects that live as long as the process; the collector would walk
them again and again while they are made and find nothing to free. Only in the `zeph` process
itself (`freeze_after_start_up()`, called by its entry point) does the pause begin before the
agent is built (`pause_for_start_up()`, by `zeph ask`, before its imports), and only for a
one-shot command (`paused_collection(freeze=True)`) are start-up's objects then frozen, so later
collections do not walk them either: frozen objects are never freed, and a chat session that
switches its model must be able to free the old one. An embedding process (tests, a library
user) keeps its collector as it was, paused only while `build_agent` runs.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_own_process = False
_paused_early = False


def freeze_after_start_up() -> None:
    """Called by the `zeph` entry point: this process is zeph's own."""
    global _own_process
    _own_process = True


def pause_for_start_up() -> None:
    """In zeph's own process, pause collection now, until the agent is built (a command that builds
    none ends the process first)."""
    global _paused_early
    if _own_process and gc.isenabled():
        gc.disable()
        _paused_early = True


@contextmanager
def paused_collection(*, freeze: bool = False) -> Iterator[None]:
    """Collection off inside; `freeze` (a one-shot command): what exists at the end is frozen, in
    zeph's own process only."""
    global _paused_early
    was_enabled = gc.isenabled() or _paused_early
    gc.disable()
    try:
        yield
    finally:
        _paused_early = False
        if was_enabled:
            if freeze and _own_process:
                gc.freeze()
            gc.enable()
