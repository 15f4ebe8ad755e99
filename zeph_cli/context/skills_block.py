"""The skills layer: `<available_skills>` (matched skills) and `<other_skills>` (the rest), within an allowance.

Invariant: pure. Matched skills appear best first, each whole — its full body
(`full`) or its name, description and triggers (`compact`); the rest of the
catalog is listed by description only (a skill the injection scan flagged, by
name only). When the layer would exceed its
allowance, the list of other skills is shortened first (to a quarter of the
allowance), then the lowest-ranked matched skills go compact, then they move
to the list: the block never cuts a skill's text in the middle. A skill body
cannot close the tags that frame it. Nothing in the layer points to load_skill
unless the model is offered it: without it, matched skills go in full or not at
all, and no list of other skills is sent (the model could not read one).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from .blocks import Block, Fitted, Placement, Room, Shrink

PROMPT_MODES = ("full", "compact", "auto")
AUTO_COMPACT_BELOW = 8192  # spec: auto is compact when the remaining context budget is below 8,192 tokens
SKILLS_SHARE = 0.15  # of the prompt's budget, for both blocks together
UNBUDGETED_SKILLS_TOKENS = 6000  # the cap when there is no budget to take a share of
DESCRIPTION_CHARS = 240  # a description in <other_skills> is cut to this

AVAILABLE_HEADER = (
    "Skills matched to the user's message: instructions the user or this project wrote for tasks like this one. "
    "Follow a skill when it fits the task; the rules above still come first. "
    "load_skill(name) returns a skill's full text and lists its files."
)
OTHER_HEADER = "Other skills, by description; call load_skill(name) when one fits the task."
NO_LOADER_HEADER = (
    "Skills matched to the user's message: instructions the user or this project wrote for tasks like this one. "
    "Follow a skill when it fits the task; the rules above still come first."
)


class SkillLike(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def triggers(self) -> tuple[str, ...]: ...

    @property
    def body(self) -> str: ...


@dataclass(frozen=True)
class SkillsInput:
    """The skills a turn matched (best first) and the rest of the catalog."""
    matched: tuple[SkillLike, ...]  # best first
    others: tuple[SkillLike, ...]
    prompt_mode: str = "auto"
    loadable: bool = True  # load_skill is offered to the model this turn


@dataclass(frozen=True)
class SkillsBlock:
    """The rendered skills layer and which skills went in, in which form."""
    text: str = ""
    mode: str = ""  # the form matched skills were asked in (full or compact)
    full: tuple[str, ...] = ()
    compact: tuple[str, ...] = ()
    listed: tuple[str, ...] = ()
    unlisted: int = 0  # skills neither shown nor listed for lack of room
    left_out: tuple[str, ...] = ()  # matched skills too long to go in full without load_skill to read them

    @property
    def detail(self) -> str:
        parts = []
        if self.full:
            parts.append(f"{len(self.full)} full")
        if self.compact:
            parts.append(f"{len(self.compact)} compact")
        if self.listed:
            parts.append(f"{len(self.listed)} listed")
        if self.unlisted:
            parts.append(f"{self.unlisted} not listed")
        if self.left_out:
            parts.append(f"{len(self.left_out)} matched left out (no room in full, no load_skill)")
        return ", ".join(parts)


def resolve_mode(prompt_mode: str, remaining_tokens: int | None) -> str:
    """`full` or `compact`: `auto` is compact when the remaining budget is known and under 8,192 tokens."""
    if prompt_mode in ("full", "compact"):
        return prompt_mode
    return "compact" if remaining_tokens is not None and remaining_tokens < AUTO_COMPACT_BELOW else "full"


_CLOSING = re.compile(r"</\s*(available_skills|other_skills|skill|instructions|description|triggers)\s*>", re.IGNORECASE)


def _quiet(text: str) -> str:
    """Text with the tags that frame it defused, so a skill cannot end its own block."""
    return _CLOSING.sub(lambda m: "&lt;/" + m.group(1) + "&gt;", text.strip())


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def render_skill(skill: SkillLike, form: str) -> str:
    lines = [f'<skill name="{skill.name}">', f"<description>{_quiet(_one_line(skill.description, 1024))}</description>"]
    if skill.triggers:
        lines.append(f"<triggers>{_quiet(', '.join(skill.triggers))}</triggers>")
    if form == "full" and skill.body.strip():
        lines += ["<instructions>", _quiet(skill.body), "</instructions>"]
    lines.append("</skill>")
    return "\n".join(lines)


def _available(matched: Sequence[tuple[SkillLike, str]], header: str = AVAILABLE_HEADER) -> str:
    if not matched:
        return ""
    return "\n".join(["<available_skills>", header, *(render_skill(s, f) for s, f in matched), "</available_skills>"])


FLAGGED_DESCRIPTION = "(its text matched a prompt-injection pattern; description withheld — load_skill shows it)"


def _listed_description(skill: SkillLike) -> str:
    """A listed skill's description; withheld for a skill the injection scan flagged, whose description
    may carry the injection itself."""
    if getattr(skill, "flags", ()):
        return FLAGGED_DESCRIPTION
    return _quiet(_one_line(skill.description, DESCRIPTION_CHARS))


def _other(listed: Sequence[SkillLike], unlisted: int) -> str:
    if not listed and not unlisted:
        return ""
    lines = ["<other_skills>", OTHER_HEADER]
    lines += [f"- {s.name}: {_listed_description(s)}" for s in listed]
    if unlisted:
        lines.append(f"- ({unlisted} more; load_skill with any name lists them all)")
    lines.append("</other_skills>")
    return "\n".join(lines)


def _join(*parts: str) -> str:
    return "\n\n".join(p for p in parts if p)


def fit_skills(
    skills: SkillsInput,
    *,
    mode: str,
    allowance: int,
    measure: Callable[[str], int],
) -> SkillsBlock:
    """The layer for `skills` in `mode` (full or compact) within `allowance` tokens as `measure` counts them;
    without load_skill (`skills.loadable` false), matched skills in full, as many as fit, and nothing else."""
    if not skills.loadable:
        return _without_loader(skills, allowance, measure)
    if allowance <= 0 or not (skills.matched or skills.others):
        return SkillsBlock(mode=mode, unlisted=len(skills.matched) + len(skills.others))
    others = list(skills.others)
    # The list of other skills first, within a quarter of the allowance.
    listed: list[SkillLike] = []
    for skill in others:
        if measure(_other([*listed, skill], len(others) - len(listed) - 1)) > max(allowance // 4, 1):
            break
        listed.append(skill)
    unlisted = len(others) - len(listed)
    other_text = _other(listed, unlisted)
    forms = [(s, mode) for s in skills.matched]
    while True:
        text = _join(_available(forms), other_text)
        if measure(text) <= allowance or not forms:
            break
        full_at = [i for i, (_, f) in enumerate(forms) if f == "full"]
        if full_at:
            i = full_at[-1]
            forms[i] = (forms[i][0], "compact")
            continue
        forms.pop()  # the lowest-ranked matched skill goes: counted among those not listed
        unlisted += 1
        other_text = _other(listed, unlisted)
    if not forms and measure(text) > allowance:
        text, listed, unlisted = "", [], len(skills.matched) + len(others)
    return SkillsBlock(
        text=text,
        mode=mode,
        full=tuple(s.name for s, f in forms if f == "full"),
        compact=tuple(s.name for s, f in forms if f == "compact"),
        listed=tuple(s.name for s in listed),
        unlisted=unlisted,
    )


def _without_loader(skills: SkillsInput, allowance: int, measure: Callable[[str], int]) -> SkillsBlock:
    """Matched skills in full, best first, each one that fits within `allowance` (a longer one is left out, a
    shorter one after it still goes in); no list of the others: without load_skill, neither a compact skill
    nor a listed one could be read."""
    kept: list[SkillLike] = []
    left_out: list[str] = []
    for skill in skills.matched:
        if allowance > 0 and measure(_available([(s, "full") for s in [*kept, skill]], NO_LOADER_HEADER)) <= allowance:
            kept.append(skill)
        else:
            left_out.append(skill.name)
    return SkillsBlock(
        text=_available([(s, "full") for s in kept], NO_LOADER_HEADER),
        mode="full",
        full=tuple(s.name for s in kept),
        left_out=tuple(left_out),
    )


SKILLS_BLOCK = "skills"


@dataclass(frozen=True)
class SkillsEntries:
    """A turn's skills as a block's entries: in full or compact form (`auto`: compact when the room left is
    small), within the room given; `loader` is the tool that loads a skill, when the request offers it."""
    skills: SkillsInput
    loader: str

    def __bool__(self) -> bool:
        return True

    def fit(self, room: Room) -> Fitted:
        skills = SkillsInput(self.skills.matched, self.skills.others, self.skills.prompt_mode, self.loader in room.tools)
        mode = "full" if not skills.loadable else resolve_mode(skills.prompt_mode, room.remaining)
        block = fit_skills(skills, mode=mode, allowance=room.allowance, measure=room.measure)
        shown = tuple((n, "full") for n in block.full) + tuple((n, "compact") for n in block.compact)
        return Fitted(block.text, block.detail, shown)


def skills_block(skills: SkillsInput, loader: str, order: int) -> Block:
    """The skills layer: the last system layer, within its share of the budget."""
    return Block(
        SKILLS_BLOCK, SkillsEntries(skills, loader), Placement.SYSTEM, order, share=SKILLS_SHARE,
        cap=UNBUDGETED_SKILLS_TOKENS, shrink=Shrink.COMPACT, stable=False,
    )
