"""What a skill is once loaded, and what a turn's matching produced.

Invariant: plain frozen values; a skill's `flags` name the injection patterns
its body matched (empty = clean), and a flagged skill is never in `matched`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

SkillSource = Literal["user", "project", "config path"]


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    triggers: tuple[str, ...]
    tools: tuple[str, ...]
    body: str
    folder: Path
    source: SkillSource
    flags: tuple[str, ...] = ()

    @property
    def file(self) -> Path:
        return self.folder / "SKILL.md"


@dataclass(frozen=True)
class SkillMatch:
    skill: Skill
    score: float
    reason: str  # "name", "trigger 'deploy'" or "similar"


@dataclass(frozen=True)
class TurnSkills:
    matched: tuple[SkillMatch, ...] = ()  # best first
    others: tuple[Skill, ...] = ()  # every skill not matched, flagged ones included, by name
