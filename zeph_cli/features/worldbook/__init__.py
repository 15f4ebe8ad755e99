"""The worldbook: entries the user writes, sent when their keywords come up in the recent messages (or
always), at a chosen place in the request; and a session's isolation switch.

Invariant: the entries live in the `worldbook_entries` table (`store.py`); a turn reads them only
through `turn.py`, and the command line and the chat app change them only through `WorldbookStore`.
"""

from .. import ChatCommand, CommandGroup, Feature
from ...context.blocks import Registration


def _on(session) -> bool:
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
