"""What search_code needs of the code index, as a protocol.

Invariant: imports nothing from the feature, so the tool context can name the code index without
importing it (tools/ never imports features/ at run time).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol


class CodeHit(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def symbol(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def score(self) -> float: ...


class CodeSearchAccess(Protocol):
    @property
    def root(self) -> Path: ...

    async def search(self, query: str, k: int = 8, *,
                     exclude: Callable[[str, int, int], bool] | None = None) -> Sequence[CodeHit]: ...
