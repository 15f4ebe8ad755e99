"""Waiting for work with a time limit, without ever losing the caller's cancellation.

Invariant: `within(work, timeout)` runs `work` as its own task and gives its
result, or raises `TimeoutError` once `timeout` seconds have passed (the task
cancelled and waited for first). When the caller is cancelled (Ctrl+C in `zeph
ask`, Esc in the chat app) the task is cancelled and waited for — so what it
does when cancelled, such as telling an MCP server to stop a call, is done —
and the caller's `CancelledError` goes on, even when the task had finished in
the same moment. `asyncio.wait_for` on Python 3.11 returns that result instead
and the cancellation is lost: the turn went on as if Ctrl+C had not been pressed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def within(work: Awaitable[T], timeout: float | None) -> T:
    """`work`'s result within `timeout` seconds (None: no limit); see the module's invariant."""
    task = asyncio.ensure_future(work)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)  # never swallows a cancellation of the caller
    except asyncio.CancelledError:
        await _stopped(task)
        raise
    if not done:
        await _stopped(task)
        raise TimeoutError
    return task.result()


async def _stopped(task: asyncio.Future[T]) -> None:
    """Cancel `task` and wait until it has ended; whatever it ended with is dropped."""
    task.cancel()
    await asyncio.wait({task})
    if not task.cancelled():
        task.exception()  # retrieved: a late failure is not logged as never retrieved
