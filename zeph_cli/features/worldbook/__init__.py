"""The worldbook: entries the user writes, sent when their keywords come up in the recent messages (or
always), at a chosen place in the request; and a session's isolation switch.

Invariant: the entries live in the `worldbook_entries` table (`store.py`); a turn reads them only
through `turn.py`, and the command line and the chat app change them only through `WorldbookStore`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...lazy_names import lazy_names
from .. import ChatCommand, CommandGroup, Feature
from ...context.blocks import Registration


# What the core uses of this feature, imported from its module when first asked for (`feature.name`).
_HOME = {
    "WorldbookTurn": "turn",
    "Worldbook": "turn",
}
__getattr__, __dir__ = lazy_names(__name__, _HOME)

if TYPE_CHECKING:
    from ...agent.source_host import SourceHost
    from .turn import WorldbookTurn as WorldbookTurn
    from .turn import Worldbook as Worldbook


def _on(session: SourceHost) -> bool:
    return session.config.worldbook.enabled


FEATURE = Feature(
    "worldbook",
    sources=(Registration(f"{__name__}.source", "WorldbookSource", _on),),
    command_group=CommandGroup("worldbook", f"{__name__}.commands", "worldbook_app"),
    chat_commands=(
        ChatCommand("worldbook", "[isolate on|off]", "List the worldbook entries in force, or switch isolation.",
                    (f"{__name__}.chat_commands", "worldbook_command")),
    ),
)
