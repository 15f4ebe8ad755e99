"""`/tasks` in the chat app: fold or unfold the task list beside the transcript (as Ctrl+T does).

Invariant: changes only what the app shows; the list itself is the model's (todo_write).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .. import ChatHost


async def tasks_command(host: ChatHost, argument: str) -> None:
    toggle = getattr(host, "toggle_tasks", None)  # the chat app's; a host without a task panel has none
    if toggle is None:
        await host.notice("this chat has no task panel", "warning")
        return
    await toggle()
