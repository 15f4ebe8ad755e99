"""The cyclic garbage collector while an agent is built.

Invariant: collection is paused only inside `paused_collection()` and is back on
when it ends, however it ends. Building an agent imports a provider SDK and the
store and creates some hundred thousand objects that live as long as the
process; the collector would walk them again and again while they are made and
find nothing to free. In the `zeph` process itself (`freeze_after=True`) they
are then frozen, so later collections do not walk them either; an embedding
process (tests, a library user) keeps its collector exactly as it was.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_freeze = False


def freeze_after_start_up() -> None:
    """Called by the `zeph` entry point: this process is zeph's own."""
    global _freeze
    _freeze = True


@contextmanager
def paused_collection() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if _freeze:
                gc.freeze()
            gc.enable()
