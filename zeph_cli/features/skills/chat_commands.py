"""`/skills` in the chat app: every skill (the last turn's matches marked), or one skill whole.

Invariant: reads the session's skill service only (never a provider); the service's warnings (a bad
SKILL.md) are said as notices, each once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .. import ChatHost


async def skills_command(host: ChatHost, argument: str) -> None:
    service = host.session.agent.skills
    if service is None:
        await host.notice("skills are not available in this session")
        return
    if argument:
        skill = service.get(argument)
        for warning in service.take_warnings():
            await host.notice(warning, "warning")
        if skill is None:
            await host.notice(f"no skill named {argument!r} (/skills lists them)", "warning")
            return
        await host.show(skill_markdown(skill))
        return
    skills = service.skills()
    for warning in service.take_warnings():
        await host.notice(warning, "warning")
    last = service.last
    matched = {m.skill.name: m for m in last.matched} if last is not None else {}
    await host.show(skills_markdown(skills, matched, service.dirs))


def skills_markdown(skills: Sequence[Any], matched: Mapping[str, Any], folders: Sequence[Any]) -> str:
    """Markdown for /skills: every skill (source, description), those matched on the last turn marked."""
    if not skills:
        where = " or ".join(f"`{folder}`" for folder in folders)
        return f"No skills. A skill is a folder with a SKILL.md in {where}."
    lines = ["| Skill | Source | Last turn | Description |", "|---|---|---|---|"]
    for skill in skills:
        match = matched.get(skill.name)
        mark = f"matched ({match.score:.2f}, {match.reason})" if match is not None else ""
        if skill.flags:
            mark = (mark + " " if mark else "") + "flagged: " + ", ".join(skill.flags)
        text = " ".join(skill.description.split()).replace("|", "\\|")
        lines.append(f"| {skill.name} | {skill.source} | {mark.replace('|', '/')} | {text} |")
    lines += ["", "`/skills NAME` shows one · `zeph skills list` lists them outside the chat."]
    return "\n".join(lines)


def skill_markdown(skill: Any) -> str:
    """Markdown for /skills NAME: where the skill lives, its description and triggers, its body."""
    head = [f"**{skill.name}** ({skill.source}) — `{skill.file}`", "", skill.description]
    if skill.triggers:
        head.append(f"Triggers: {', '.join(skill.triggers)}")
    if skill.flags:
        head.append(f"Flagged by the injection scan: {', '.join(skill.flags)} (never matched automatically)")
    return "\n".join([*head, "", "---", "", skill.body])
