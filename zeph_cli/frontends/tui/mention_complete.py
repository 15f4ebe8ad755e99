"""Completing an `@server:uri` mention typed at the end of the input: server ids after `@`, then the URIs the
server listed after `@server:`.

Invariant: completing never waits: it offers what the manager has listed. The first time a server's URIs
are wanted and it has listed none, one listing of that server starts in the background (starting the
servers first if the session has not yet); when it ends the hints are shown again, and a server that
cannot list (it failed, it has no resources) is said once as a notice.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from .slash import Completion

if TYPE_CHECKING:
    from ...features.mcp.manager import McpManager

# The servers whose listing was asked for, per manager (each is asked once a session).
_asked: weakref.WeakKeyDictionary[McpManager, set[str]] = weakref.WeakKeyDictionary()


def mention_completions(app: Any, text: str) -> list[Completion]:
    """Completions for a mention being typed at the end of `text` (none for any other input)."""
    session = app.session
    manager = session.agent.mcp if session is not None else None
    if manager is None or "@" not in text:
        return []
    from ...features.mcp.mentions import TYPING, complete_mention

    servers = list(manager.connections)
    match = TYPING.search(text)
    if match is not None and match.group(2) is not None and match.group(1) in servers:
        server = match.group(1)
        asked = _asked.setdefault(manager, set())
        if not manager.resource_uris(server) and server not in asked:
            asked.add(server)
            app.run_worker(_list(app, manager, server), group=f"mcp resources {server}", exit_on_error=False)
    return [Completion(value, label, "", about) for value, label, about in
            complete_mention(text, servers, manager.resource_uris)]


async def _list(app: Any, manager: McpManager, server: str) -> None:
    from ...features.mcp.resources import ResourceError
    from .prompt_input import PromptInput

    for note in await app.session.agent.extras.start_mcp():  # this start's notes are said here, not by a turn
        await app.notice(note, "warning")
    try:
        await manager.list_resources(server)
    except ResourceError as exc:
        await app.notice(f"@{server}: {exc}", "warning")
        return
    app.post_message(PromptInput.Edited(app.prompt.text))  # the hints again, now with the URIs
