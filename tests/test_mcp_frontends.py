"""What the chat app shows of MCP servers: a running tool's progress on its block (in a sub-agent's block
too), a server's form (elicitation) as a dialog, `/mcp restart`, and prompts whose messages keep their roles.

The app is the real one on a real ChatSession against the fake model server; agent events are fed to the
turn's real view as a turn would yield them, and forms are answered by pressing keys in the dialog.
"""

from __future__ import annotations

from zeph_cli.agent.events import (
    SubagentProgress,
    SubagentStarted,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
)
from zeph_cli.frontends.event_handler import dispatch
from zeph_cli.frontends.tui.subagent_view import SubagentEntry
from zeph_cli.frontends.tui.transcript import ToolEntry
from zeph_cli.frontends.tui.turn_view import TurnView
from zeph_cli.messages import ToolCallPart, ToolResultPart
from tests.test_tui_app import SIZE, entries, model, open_app, workspace  # noqa: F401  (fixtures)

# ---- progress ----------------------------------------------------------------------------------------


def started(call_id: str, name: str = "everything__trigger-long-running-operation") -> ToolCallStarted:
    return ToolCallStarted(ToolCallPart(call_id, name, {"duration": 5, "steps": 5}), "read", "")


def finished(call_id: str, name: str = "everything__trigger-long-running-operation") -> ToolCallFinished:
    return ToolCallFinished(ToolCallPart(call_id, name, {}), ToolResultPart(call_id, "Long running operation completed."),
                            "auto", "done")


async def test_a_running_tools_progress_replaces_running_on_its_block_until_it_finishes(fake_server, model, workspace):
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            view = TurnView(app)
            await dispatch(started("c1"), view)
            await pilot.pause()
            (block,) = entries(app, ToolEntry)
            assert block.title.endswith("· running…")
            await dispatch(ToolCallProgress("c1", "Step 2 of 5", 2, 5), view)
            assert block.title.endswith("· Step 2 of 5 · 40%")
            await dispatch(ToolCallProgress("c1", "", 3, None), view)  # a count with no total, no message
            assert block.title.endswith("· running… · 3")
            await dispatch(ToolCallProgress("c1", "[b]not markup[/b]\nsecond line", None, None), view)
            assert block.title.endswith("· \\[b]not markup\\[/b] second line")  # the server's words, one line, literal
            await pilot.pause()
            assert "[b]not markup[/b] second line" in str(block.query_one("CollapsibleTitle").render())
            await dispatch(finished("c1"), view)
            await dispatch(ToolCallProgress("c1", "late", 5, 5), view)  # after its result: dropped
            assert block.title.endswith("· done")
    finally:
        await session.aclose()


async def test_a_tool_inside_a_subagents_block_shows_its_progress_too(fake_server, model, workspace):
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            view = TurnView(app)
            await dispatch(ToolCallStarted(ToolCallPart("t1", "task", {"description": "Wait", "prompt": "wait"}),
                                           "read", "Wait"), view)
            await dispatch(SubagentStarted("t1", "Wait", 99, "agent"), view)
            await dispatch(SubagentProgress("t1", started("c9")), view)
            await dispatch(SubagentProgress("t1", ToolCallProgress("c9", "warming up", 1, 4)), view)
            await pilot.pause()
            (block,) = entries(app, SubagentEntry)
            (inner,) = block.query(ToolEntry)
            assert inner.title.endswith("· warming up · 25%")
    finally:
        await session.aclose()
