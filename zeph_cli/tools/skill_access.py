"""What load_skill needs of the skills, as protocols.

Invariant: imports nothing from the package, so the tool context can name the
skills without importing them (tools/ never imports skills/ at run time).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class SkillView(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def body(self) -> str: ...

    @property
    def folder(self) -> Path: ...

    @property
    def flags(self) -> tuple[str, ...]: ...


class SkillAccess(Protocol):
    def get(self, name: str) -> SkillView | None: ...

    def names(self) -> list[str]: ...
