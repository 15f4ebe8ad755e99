"""Skills for an agent: the catalog kept current, matched to each message.

Invariant: `match` never raises (but for cancellation): a broken embedder falls
back to keyword matching, any other failure to no match, each said as a
warning. Every warning is given once per service by `take_warnings`. The
catalog is re-checked on every call (cheaply: see `SkillCatalog`), so a long
session sees added, edited and removed skills on its next turn. With no skills,
matching waits for nothing. `match` reads the catalog and embeds in threads,
never on the event loop, so a turn that stops waiting for it (a source past
its deadline) goes on at once; one catalog read runs at a time (a lock), so a
read left running and the next caller never share the catalog's state.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ...config import SkillsConfig
from .catalog import SkillCatalog
from .folders import skill_folders
from .model import Skill, TurnSkills
from .ranking import SkillVectors, pick, score_skills

if TYPE_CHECKING:
    from ..memory.embedders.base import Embedder

EmbedderSource = Callable[[], Awaitable["Embedder | None"]]


class SkillService:
    def __init__(
        self,
        config: SkillsConfig,
        *,
        project_root: Path | None,
        user_dir: Path,
        base_dir: Path | None,
        embedder: EmbedderSource | None,
    ) -> None:
        self.config = config
        folders = skill_folders(config, project_root=project_root, user_dir=user_dir, base_dir=base_dir)
        self.dirs = [folder.path for folder in folders]
        self.catalog = SkillCatalog(folders, scan=config.scan_on_load)
        self._embedder = embedder
        self._vectors = SkillVectors()
        self._pending: list[str] = []
        self._said: set[str] = set()
        self._by_name: dict[str, Skill] = {}
        self._lock = threading.Lock()  # the catalog, its skills by name and the warnings: one thread at a time
        self.last: TurnSkills | None = None

    # ---- the catalog ---------------------------------------------------------------------

    def skills(self) -> list[Skill]:
        """Every loadable skill, by name (re-read where changed). Blocking: a turn calls it in a thread."""
        with self._lock:
            return self._read()

    def _read(self) -> list[Skill]:
        try:
            self._by_name, problems = self.catalog.refresh()
        except Exception as exc:  # noqa: BLE001 — an unreadable folder must not break a turn
            problems = [f"skills could not be read: {exc}"]
        for problem in problems:
            self._warn(problem)
        for skill in self._by_name.values():
            if skill.flags:
                self._warn(
                    f"skill {skill.name!r} ({skill.file}) looks like a prompt injection ({', '.join(skill.flags)}): "
                    "it is never matched automatically; load_skill can still read it"
                )
        return sorted(self._by_name.values(), key=lambda s: s.name)

    def get(self, name: str) -> Skill | None:
        return next((skill for skill in self.skills() if skill.name == name), None)

    def names(self) -> list[str]:
        return [skill.name for skill in self.skills()]

    # ---- warnings ------------------------------------------------------------------------

    def _warn(self, text: str) -> None:
        if text not in self._said:
            self._said.add(text)
            self._pending.append(text)

    def _warn_now(self, text: str) -> None:
        with self._lock:
            self._warn(text)

    def take_warnings(self) -> list[str]:
        """Warnings not given before, each once."""
        with self._lock:
            pending, self._pending = self._pending, []
        return pending

    # ---- matching ------------------------------------------------------------------------

    async def match(self, message: str) -> TurnSkills:
        """The skills for this message (`matched`, best first) and all the others (by name)."""
        try:
            skills = await asyncio.to_thread(self.skills)
            matched = await self._matched(skills, message) if skills else ()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 — a turn goes on without skills rather than fail
            self._warn_now(f"skills could not be matched: {exc}")
            skills, matched = sorted(self._by_name.values(), key=lambda s: s.name), ()
        chosen = {m.skill.name for m in matched}
        self.last = TurnSkills(matched, tuple(s for s in skills if s.name not in chosen))
        return self.last

    async def _matched(self, skills: list[Skill], message: str):
        candidates = [s for s in skills if not s.flags]
        if not candidates or self.config.max_active_skills <= 0 or not message.strip():
            return ()
        similarity = await self._similarity(candidates, message)
        scored = score_skills(candidates, message, similarity)
        return pick(scored, limit=self.config.max_active_skills, min_score=self.config.min_score)

    async def _similarity(self, skills: list[Skill], message: str) -> dict[str, float] | None:
        """Embedding similarity by skill name, or None (keywords only). Memory turned off is the user's
        choice and goes unsaid (`zeph context` shows each match's reason); an embedder that fails is said once."""
        if self._embedder is None:
            return None
        embedder = await self._embedder()
        if embedder is None:
            self._warn_now("skills: matching falls back to keywords (the embedder could not load)")
            return None
        try:
            return await asyncio.to_thread(self._vectors.similarity, embedder, skills, message)
        except Exception as exc:  # noqa: BLE001 — EmbeddingError or a broken model: keywords still work
            self._warn_now(f"skills: matching falls back to keywords ({exc})")
            return None


def service_for(loaded, env, cwd: Path, embedder: EmbedderSource | None = None) -> SkillService:
    """The skills as configured by `loaded` (a LoadedConfig) for a session started in `cwd`."""
    from .folders import places_for

    return SkillService(loaded.config.skills, **places_for(loaded, env, cwd), embedder=embedder)
