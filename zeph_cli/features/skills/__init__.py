"""Skills: folders with a SKILL.md (front matter + Markdown body) from the user's and the project's
skill dirs, ranked against each message; the matched ones reach the prompt, the rest are listed.

Invariant: nothing here imports the `mcp` SDK, Textual or a provider SDK; numpy only through the
embedder; PyYAML only when a SKILL.md is read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...lazy_names import lazy_names
from ...context.blocks import Registration
from .. import ChatCommand, CommandGroup, Feature, Isolation
from .tool_specs import LOAD_SKILL

# What the core uses of this feature, imported from its module when first asked for (`feature.name`).
_HOME = {
    "service_for": "service",
    "places_for": "folders",
    "skill_folders": "folders",
}
__getattr__, __dir__ = lazy_names(__name__, _HOME)

if TYPE_CHECKING:
    from ...agent.source_host import SourceHost
    from .folders import places_for as places_for, skill_folders as skill_folders
    from .service import service_for as service_for


def _on(session: SourceHost) -> bool:
    return session.extras.skills is not None


def _matched(session: SourceHost) -> bool:
    """load_skill is offered while the turn has skills to name (matched or listed)."""
    return session.extras.skills_input() is not None


FEATURE = Feature(
    "skills",
    sources=(Registration(f"{__name__}.source", "SkillsSource", _on),),
    tools=(LOAD_SKILL,),
    tools_offered=_matched,
    command_group=CommandGroup("skills", f"{__name__}.commands", "skills_app"),
    chat_commands=(
        ChatCommand("skills", "[NAME]", "List the skills (last turn's matches marked), or show one.",
                    (f"{__name__}.chat_commands", "skills_command")),
    ),
    isolation=Isolation(frozenset({"skills"}), frozenset({"skill tools"}), ("skills", "skill tools")),
)
