"""Session summaries and the user profile: made in the background after a reply (`service.py`, or the
worker process `worker.py` for `zeph ask`), kept in the digest tables (`store.py`), shown and edited by
`zeph profile` (`commands.py`).

Invariant: nothing here delays a reply or reaches a provider except through the side jobs it is given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...lazy_names import lazy_names
from ...context.blocks import Registration
from .. import ChatCommand, CommandGroup, Feature, Isolation


# What the core uses of this feature, imported from its module when first asked for (`feature.name`).
_HOME = {
    "SessionMemoryDeps": "service",
    "SessionMemory": "service",
}
__getattr__, __dir__ = lazy_names(__name__, _HOME)

if TYPE_CHECKING:
    from .service import SessionMemoryDeps as SessionMemoryDeps
    from .service import SessionMemory as SessionMemory


FEATURE = Feature(
    "session memory",
    sources=(Registration(f"{__name__}.source", "SessionMemorySource"),),
    command_group=CommandGroup("profile", f"{__name__}.commands", "profile_app"),
    chat_commands=(
        ChatCommand("profile", "[NAME|none|edit TEXT|clear]",
                    "Show the profiles; NAME switches the global prompt; edit/clear the user profile.",
                    (f"{__name__}.chat_commands", "profile_command")),
    ),
    isolation=Isolation(frozenset({"session memory"}), says=("cross-session summaries", "user profile")),
)
