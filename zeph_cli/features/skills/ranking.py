"""Scoring skills against a message, and picking the ones that go into `<available_skills>`.

Invariant: the scoring and picking functions are pure. A skill's score is the
larger of its embedding similarity to the message (cosine of the message and
"name: description. triggers") and its keyword boost (its name as a word in
the message: 0.9; one of its triggers: 0.85; whole words, any case). Picked
are at most `limit` unflagged skills scoring at least `min_score` and at least
`RELATIVE_FLOOR` × the best score, best first. `SkillVectors` caches each
skill's vector by (embedder model, text hash), so an unchanged skill is
embedded once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from ..memory.text_vectors import TextVectors
from .model import Skill, SkillMatch

if TYPE_CHECKING:
    from ..memory.embedders.base import Embedder

NAME_BOOST = 0.9
TRIGGER_BOOST = 0.85
RELATIVE_FLOOR = 0.6


def skill_text(skill: Skill) -> str:
    """What a skill is embedded as."""
    text = f"{skill.name.replace('-', ' ').replace('_', ' ')}: {skill.description}"
    return f"{text}. {', '.join(skill.triggers)}" if skill.triggers else text


@lru_cache(maxsize=1024)
def _word_pattern(phrase: str) -> re.Pattern[str]:
    """`phrase` as whole words, any case; `-`, `_` and spaces between its words are interchangeable,
    and a plural `s`/`es` is allowed at the end."""
    words = [re.escape(w) for w in re.split(r"[\s_-]+", phrase.strip()) if w]
    body = r"[\s_-]+".join(words)
    return re.compile(rf"(?<![\w-]){body}(?:e?s)?(?![\w-])", re.IGNORECASE)


def keyword_hit(skill: Skill, message: str) -> tuple[float, str] | None:
    """(boost, reason) when the skill's name or one of its triggers is in the message."""
    if _word_pattern(skill.name).search(message):
        return NAME_BOOST, "name"
    for trigger in skill.triggers:
        if _word_pattern(trigger).search(message):
            return TRIGGER_BOOST, f"trigger {trigger!r}"
    return None


def score_skills(
    skills: Sequence[Skill], message: str, similarity: Mapping[str, float] | None
) -> list[SkillMatch]:
    """Every skill's score against `message`, best first (`similarity` by skill name; None = keywords only)."""
    scored = []
    for skill in skills:
        similar = similarity.get(skill.name, 0.0) if similarity is not None else 0.0
        hit = keyword_hit(skill, message)
        if hit is not None and hit[0] >= similar:
            scored.append(SkillMatch(skill, hit[0], hit[1]))
        else:
            scored.append(SkillMatch(skill, max(similar, 0.0), "similar"))
    scored.sort(key=lambda m: (-m.score, m.skill.name))
    return scored


def pick(scored: Sequence[SkillMatch], *, limit: int, min_score: float) -> tuple[SkillMatch, ...]:
    """The matches that go into `<available_skills>`: unflagged, above both floors, at most `limit`."""
    eligible = [m for m in scored if not m.skill.flags]
    if not eligible or limit <= 0:
        return ()
    best = max(m.score for m in eligible)
    floor = max(min_score, RELATIVE_FLOOR * best)
    return tuple(m for m in eligible if m.score >= floor and m.score > 0)[:limit]


class SkillVectors:
    """Skill vectors cached by (embedder model, text): an unchanged skill is embedded once."""

    def __init__(self) -> None:
        self._texts = TextVectors()

    @property
    def embedded(self) -> int:
        return self._texts.embedded

    def similarity(self, embedder: "Embedder", skills: Sequence[Skill], message: str) -> dict[str, float]:
        """Cosine similarity of `message` to each skill, by name (synchronous: call it in a thread)."""
        scores = self._texts.similarities(embedder, [skill_text(skill) for skill in skills], message)
        return {skill.name: score for skill, score in zip(skills, scores)}
