"""What the memory tools need of long-term memory, as protocols.

Invariant: imports nothing from the package, so the tool context can name the
accessor without importing the tools that use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class SavedMemory(Protocol):
    @property
    def id(self) -> int: ...

    @property
    def scope(self) -> str: ...

    @property
    def content(self) -> str: ...

    @property
    def confidence(self) -> float: ...


class FoundMemory(Protocol):
    @property
    def id(self) -> int: ...

    @property
    def scope(self) -> str: ...

    @property
    def content(self) -> str: ...

    @property
    def confidence(self) -> float: ...

    @property
    def score(self) -> float: ...


class MemoryAccess(Protocol):
    """What the memory tools need: long-term memory as seen from this session's place."""

    def default_scope(self) -> str: ...

    def save(
        self, content: str, scope: str | None = None, confidence: float = 1.0, source: str = "tool"
    ) -> tuple[SavedMemory, bool]: ...

    def search(self, query: str, limit: int) -> tuple[Sequence[FoundMemory], str | None]: ...
