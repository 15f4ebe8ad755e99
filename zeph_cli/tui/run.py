"""Starting the chat app: open the session first, so bad config or a missing key ends with one line.

Invariant: the session is opened and closed on the app's own event loop
(provider clients are bound to it), and it is closed however the app ends.
"""

from __future__ import annotations

import os
from typing import Optional

from ..chat_session import ChatSession
from ..config import LoadedConfig
from ..workspace import current_directory
from .app import TuiApprover, ZephApp


async def run_chat(loaded: LoadedConfig, *, continue_last: bool = False, session_id: Optional[int] = None) -> int:
    approver = TuiApprover()
    session = await ChatSession.open(
        loaded,
        env=os.environ,
        cwd=current_directory(),
        approver=approver,
        session_id=session_id,
        continue_last=continue_last,
        mode=loaded.config.agent.mode,
    )
    try:
        app = ZephApp(session)
        approver.app = app
        code = await app.run_async()
        return code or 0
    finally:
        await session.aclose()
