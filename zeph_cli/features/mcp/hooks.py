"""What the servers' connections report to, and ask of, the rest of zeph: one `ServerHooks` per manager,
shared by its connections.

Invariant: every hook has a harmless default (nothing is reported, elicitation is declined, no roots), so a
connection works alone in a test; the manager and the front ends replace them. Hooks never raise into the
SDK: a connection calls them inside its own guard.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ...tools.elicitation import Elicitor, decline_all


def _nothing(*args: object) -> None:
    return None


@dataclass
class ServerHooks:
    # The user's answer to a server's form (the chat app's dialog, a terminal prompt); declined by default.
    elicit: Elicitor = decline_all
    # The roots a server may work in (the workspace), answered to roots/list.
    roots: Callable[[], list[Path]] = field(default=list)
    # A server's list changed and was listed again: (server id, "tools" | "prompts" | "resources").
    on_change: Callable[[str, str], None] = _nothing
    # A server's log message at or above its log_level: (server id, level, text); warnings and errors
    # also become notices in the chat app.
    on_log: Callable[[str, str, str], None] = _nothing
