"""Starting the chat app: its first frame first, then the session (SDK, store, agent) behind it.

Invariant: the session is opened and closed on the app's own event loop
(provider clients are bound to it), and it is closed however the app ends;
the modules it needs are imported after the first frame, off the event loop.
When it could not open, the error is raised again once the app has closed,
so the terminal keeps it as one line and the exit status says so.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from typing import TYPE_CHECKING, Optional

from ...config import LoadedConfig
from .app import TuiApprover, TuiElicitor, ZephApp
from .startup import starting_header

if TYPE_CHECKING:
    from ...agent.chat_session import ChatSession

# What opening a session imports (the agent, the store, the tools; a provider's SDK comes with the agent).
SESSION_MODULES = ("zeph_cli.agent.chat_session", "zeph_cli.agent.workspace")


async def import_session_modules() -> None:
    """Import what opening a session needs in a thread, so the app keeps drawing and reading keys meanwhile;
    on the event loop instead if that thread's import fails (a second attempt names a real problem)."""
    try:
        await asyncio.to_thread(lambda: [importlib.import_module(name) for name in SESSION_MODULES])
    except ImportError:
        for name in SESSION_MODULES:
            importlib.import_module(name)


async def run_chat(loaded: LoadedConfig, *, continue_last: bool = False, session_id: Optional[int] = None) -> int:
    approver = TuiApprover()
    elicitor = TuiElicitor()

    async def open_session() -> "ChatSession":
        await import_session_modules()
        from ...agent.chat_session import ChatSession
        from ...agent.workspace import current_directory

        return await ChatSession.open(
            loaded,
            env=os.environ,
            cwd=current_directory(),
            approver=approver,
            session_id=session_id,
            continue_last=continue_last,
            mode=loaded.config.agent.mode,
            elicitor=elicitor,
        )

    label = f"session {session_id}" if session_id is not None else "last session" if continue_last else "new session"
    app = ZephApp(opener=open_session, header=starting_header(loaded.config, label))
    approver.app = elicitor.app = app
    try:
        code = await app.run_async()
    finally:
        if app.session is not None:  # opened, even if the app was closed before it was shown
            await app.session.aclose()
    if app.start_exception is not None:
        raise app.start_exception
    return code or 0
