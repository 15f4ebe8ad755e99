"""What the chat app shows of MCP servers: a running tool's progress on its block (in a sub-agent's block
too), a server's form (elicitation) as a dialog, `/mcp restart`, and prompts whose messages keep their roles.

The app is the real one on a real ChatSession against the fake model server; agent events are fed to the
turn's real view as a turn would yield them, and forms are answered by pressing keys in the dialog.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest
from textual.widgets import Button, Checkbox, Input, Select, Static

from zeph_cli.agent.events import (
    SubagentProgress,
    SubagentStarted,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
)
from zeph_cli.features.mcp.manager import McpManager
from zeph_cli.frontends.event_handler import dispatch
from zeph_cli.frontends.tui.app import TuiElicitor
from zeph_cli.frontends.tui.elicit_screen import ElicitScreen
from zeph_cli.frontends.tui.subagent_view import SubagentEntry
from zeph_cli.frontends.tui.transcript import AssistantEntry, Notice, ToolEntry, UserEntry
from zeph_cli.frontends.tui.turn_view import TurnView
from zeph_cli.messages import ToolCallPart, ToolResultPart
from zeph_cli.tools.elicitation import ElicitationAnswer, ElicitationField, ElicitationRequest
from tests.mcp_reference import EVERYTHING, needs_node_servers
from tests.scripted_model import CHAT_PATH
from tests.test_tui_app import SIZE, entries, model, open_app, send, settle, workspace  # noqa: F401  (fixtures)

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


# ---- a server's form (elicitation) -------------------------------------------------------------------


FORM = ElicitationRequest("everything", "Please provide inputs for the following fields:", (
    ElicitationField("name", "string", title="String", description="Your full, legal name", required=True),
    ElicitationField("check", "boolean", title="Boolean", description="Agree to the terms and conditions"),
    ElicitationField("email", "string", title="String with email format", format="email"),
    ElicitationField("integer", "integer", title="Integer", minimum=1, maximum=100, default=42),
    ElicitationField("hero", "enum", title="Titled Single Select Enum", choices=("hero-1", "hero-2"),
                     choice_titles=("Superman", "Green Lantern"), default="hero-1"),
    ElicitationField("pet", "enum", title="Pet", choices=("cat", "dog")),  # not required, no default: left out
))


async def asked(pilot, app, request: ElicitationRequest) -> asyncio.Task[ElicitationAnswer]:
    """The app's elicitor asked `request` (as a server's connection asks it), its dialog on screen."""
    elicitor = TuiElicitor()
    elicitor.app = app
    task = asyncio.ensure_future(elicitor(request))
    for _ in range(500):  # a bound on a hang
        await pilot.pause(0.01)
        if isinstance(app.screen, ElicitScreen) and app.focused is not None and app.focused.screen is app.screen:
            return task  # mounted, its first input focused
    raise AssertionError("the dialog did not open")


async def answer(pilot, task: asyncio.Task[ElicitationAnswer]) -> ElicitationAnswer:
    await pilot.pause()
    return await asyncio.wait_for(task, timeout=30)  # a bound on a hang


async def press(pilot, app, button: str) -> None:
    """Press the dialog's button (as a click or enter on it does)."""
    app.screen.query_one(f"#{button}", Button).press()
    await pilot.pause()


def error_line(app) -> str:
    return str(app.screen.query_one("#error", Static).render())


async def test_a_servers_form_is_a_dialog_whose_values_are_checked_before_they_are_sent(fake_server, model, workspace):
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=(100, 45)) as pilot:
            task = await asked(pilot, app, FORM)
            screen = app.screen
            text = " ".join(str(w.render()) for w in screen.query(Static))
            assert "MCP server everything asks you:" in text and "Please provide inputs" in text
            assert "String (name) *" in text and "Your full, legal name" in text
            assert screen.query_one("#field-3", Input).value == "42"  # the default, to edit
            assert screen.query_one("#field-4", Select).value == "hero-1"
            assert screen.query_one("#field-5", Select).value is Select.NULL

            await press(pilot, app, "accept")  # the required name is empty: one line says so, the dialog stays
            assert "String is required" in error_line(app) and not task.done()
            assert app.focused is screen.query_one("#field-0", Input)
            await pilot.press(*"Ada Lovelace")
            screen.query_one("#field-2", Input).value = "not-an-email"
            screen.query_one("#field-3", Input).value = "101"
            await pilot.press("enter")  # enter in a box accepts, when everything is right
            assert "String with email format takes an email address" in error_line(app) and not task.done()
            screen.query_one("#field-2", Input).value = "ada@example.org"
            await press(pilot, app, "accept")
            assert "Integer is at most 100" in error_line(app) and not task.done()
            screen.query_one("#field-3", Input).value = "7"
            screen.query_one("#field-1", Checkbox).value = True
            screen.query_one("#field-4", Select).value = "hero-2"
            await press(pilot, app, "accept")
            result = await answer(pilot, task)
            assert result == ElicitationAnswer("accept", {"name": "Ada Lovelace", "check": True, "email": "ada@example.org",
                                                          "integer": 7, "hero": "hero-2"})
            assert not isinstance(app.screen, ElicitScreen)
    finally:
        await session.aclose()


async def test_escape_cancels_a_form_and_decline_declines_it(fake_server, model, workspace):
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=(100, 45)) as pilot:
            task = await asked(pilot, app, FORM)
            await pilot.press("escape")
            assert await answer(pilot, task) == ElicitationAnswer("cancel")
            task = await asked(pilot, app, FORM)
            await press(pilot, app, "decline")
            assert await answer(pilot, task) == ElicitationAnswer("decline")
            confirm = ElicitationRequest("everything", "Go ahead?")  # no fields: a plain confirmation
            task = await asked(pilot, app, confirm)
            assert app.focused is app.screen.query_one("#accept")
            await pilot.press("enter")
            assert await answer(pilot, task) == ElicitationAnswer("accept", {})
    finally:
        await session.aclose()


async def test_two_forms_at_once_are_asked_one_after_the_other(fake_server, model, workspace):
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=(100, 45)) as pilot:
            first = await asked(pilot, app, ElicitationRequest("one", "First?"))
            elicitor = TuiElicitor()
            elicitor.app = app
            second = asyncio.ensure_future(elicitor(ElicitationRequest("two", "Second?")))
            await pilot.pause()
            assert [s.request.server_id for s in app.screen_stack if isinstance(s, ElicitScreen)] == ["one"]
            await press(pilot, app, "decline")
            assert await answer(pilot, first) == ElicitationAnswer("decline")
            for _ in range(500):  # a bound on a hang
                await pilot.pause(0.01)
                if isinstance(app.screen, ElicitScreen):
                    break
            assert app.screen.request.server_id == "two"
            await pilot.press("escape")
            assert await answer(pilot, second) == ElicitationAnswer("cancel")
    finally:
        await session.aclose()


async def test_a_form_the_server_stops_waiting_for_is_taken_down(fake_server, model, workspace):
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=(100, 45)) as pilot:
            task = await asked(pilot, app, FORM)
            task.cancel()
            await pilot.pause()
            await asyncio.gather(task, return_exceptions=True)
            await pilot.pause()
            assert not isinstance(app.screen, ElicitScreen)
    finally:
        await session.aclose()


async def test_the_chat_apps_elicitor_reaches_the_servers_hooks_and_stays_after_a_model_switch(fake_server, model, workspace,
                                                                                              tmp_path):
    import sys

    from zeph_cli.agent.chat_session import ChatSession
    from zeph_cli.config import load_config
    from zeph_cli.frontends.tui.app import TuiApprover
    from tests.test_tui_app import environment

    config = tmp_path / "mcp.toml"
    config.write_text(f'[[mcp.servers]]\nid = "quiet"\ncommand = "{sys.executable}"\nargs = ["-c", "pass"]\n')
    env = environment(fake_server, ZEPH_CONFIG=str(config))
    elicitor = TuiElicitor()
    session = await ChatSession.open(load_config(env=env), env=env, cwd=workspace, approver=TuiApprover(),
                                     elicitor=elicitor)
    try:
        assert session.agent.mcp is not None and session.agent.mcp.hooks.elicit is elicitor
        await session.set_model("gpt-4o-mini")  # a new agent, with new MCP servers
        assert session.agent.mcp is not None and session.agent.mcp.hooks.elicit is elicitor
    finally:
        await session.aclose()


async def test_ctrl_c_during_a_servers_form_cancels_the_turn_and_takes_the_form_down(fake_server, model, workspace):
    from tests.fakes import openai_wire

    pieces = [f"word{i} " for i in range(400)]  # a turn still running when the form comes
    model.chat.append(openai_wire.stream_response(openai_wire.text_chunks(pieces, usage=None), chunk_delay=0.02))
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=(100, 45)) as pilot:
            app.prompt.text = "go"
            await pilot.press("enter")
            task = await asked(pilot, app, FORM)
            assert app.busy
            await pilot.press("ctrl+c")
            assert await answer(pilot, task) == ElicitationAnswer("cancel")
            await settle(pilot, app)
            assert not isinstance(app.screen, ElicitScreen) and not app.busy
    finally:
        await session.aclose()


# ---- /mcp restart and prompts with roles -------------------------------------------------------------


TIME_SERVER = shutil.which("mcp-server-time") or str(Path(sys.executable).parent / "mcp-server-time")
STDIO_FAKE = Path(__file__).parent / "fakes" / "mcp_stdio.py"  # the small SDK server (a prompt with an assistant turn)


async def slash(pilot, app, text: str) -> None:
    """/mcp runs beside the app: wait for it."""
    await send(pilot, app, text, wait=False)
    await app.workers.wait_for_complete()
    await pilot.pause()


@pytest.mark.skipif(not hasattr(McpManager, "restart"), reason="needs McpManager.restart")
@pytest.mark.skipif(not Path(TIME_SERVER).exists(), reason="mcp-server-time is a test dependency")
async def test_mcp_restart_restarts_a_server_and_says_so(fake_server, model, workspace, tmp_path):
    config = tmp_path / "mcp.toml"
    config.write_text(f'[[mcp.servers]]\nid = "time"\ncommand = {json.dumps(TIME_SERVER)}\n')
    app, session = await open_app(fake_server, workspace, env={"ZEPH_CONFIG": str(config)})
    try:
        async with app.run_test(size=SIZE) as pilot:
            await slash(pilot, app, "/mcp restart time")
            assert entries(app, Notice)[-1].text.startswith("MCP server time restarted")
            assert [s.state for s in session.agent.mcp.status()] == ["running"]
            await slash(pilot, app, "/mcp restart clock")
            error = entries(app, Notice)[-1]
            assert error.kind == "error" and "there is no MCP server 'clock' (servers: time)" in error.text
            assert app.prompt.text == "/mcp restart clock"  # given back to correct
            app.prompt.text = ""
            await slash(pilot, app, "/mcp restart")
            assert "/mcp restart needs one server id" in entries(app, Notice)[-1].text
    finally:
        await session.aclose()


@pytest.mark.skipif(not STDIO_FAKE.exists(), reason="needs tests/fakes/mcp_stdio.py")
async def test_a_prompts_earlier_messages_join_the_session_with_their_roles_and_its_last_goes_to_the_box(
    fake_server, model, workspace, tmp_path
):
    from tests.fakes import openai_wire

    config = tmp_path / "mcp.toml"
    config.write_text(f'[[mcp.servers]]\nid = "fake"\ncommand = {json.dumps(sys.executable)}\n'
                      f'args = [{json.dumps(str(STDIO_FAKE))}]\n')
    model.chat.append(openai_wire.stream_response(openai_wire.text_chunks(["Short: it is fast."])))
    app, session = await open_app(fake_server, workspace, env={"ZEPH_CONFIG": str(config)})
    try:
        async with app.run_test(size=SIZE) as pilot:
            await slash(pilot, app, "/mcp fake dialogue topic=Rust")
            assert app.prompt.text == "Then the short version."
            assert [e.text for e in entries(app, UserEntry)] == ["Tell me about Rust."]
            assert [e.text for e in entries(app, AssistantEntry)] == ["Rust is a big subject."]
            assert "2 messages (user, assistant) added to the session" in entries(app, Notice)[-1].text
            await send(pilot, app, app.prompt.text)
            sent = [m for m in fake_server.requests_to(CHAT_PATH)[-1].json["messages"] if m["role"] != "system"]
            assert [(m["role"], m["content"]) for m in sent][-3:] == [
                ("user", "Tell me about Rust."), ("assistant", "Rust is a big subject."), ("user", "Then the short version.")]
            assert entries(app, AssistantEntry)[-1].text == "Short: it is fast."
    finally:
        await session.aclose()


# ---- server-everything in the chat app -------------------------------------------------------------

ASKS_FORMS = importlib.util.find_spec("zeph_cli.features.mcp.elicit") is not None


@needs_node_servers
@pytest.mark.skipif(not ASKS_FORMS, reason="needs the MCP connection's progress and elicitation (features/mcp/elicit.py)")
async def test_server_everythings_progress_shows_on_the_block_and_its_form_is_asked_in_a_dialog(
    fake_server, model, workspace, tmp_path
):
    config = tmp_path / "mcp.toml"
    config.write_text(f'[[mcp.servers]]\nid = "everything"\ncommand = {json.dumps(str(EVERYTHING))}\ntrusted = true\n')
    model.call(("c1", "everything__trigger-long-running-operation", {"duration": 2, "steps": 4}))
    model.say("It ran.")
    model.call(("c2", "everything__trigger-elicitation-request", {}))
    model.say("Thanks.")
    app, session = await open_app(fake_server, workspace, env={"ZEPH_CONFIG": str(config)})
    try:
        async with app.run_test(size=(100, 45)) as pilot:
            await send(pilot, app, "run the long operation", wait=False)
            seen: set[str] = set()
            for _ in range(3000):  # 60 s at most: a bound on a hang
                await pilot.pause(0.02)
                blocks = entries(app, ToolEntry)
                if blocks and "%" in blocks[0].title:
                    seen.add(str(blocks[0].title).rsplit("· ", 1)[-1])
                if not app.busy and app.worker is not None:
                    break
            await settle(pilot, app)
            assert seen and seen <= {"25%", "50%", "75%", "100%"}  # what the server reported, as it reported it
            assert entries(app, ToolEntry)[0].title.endswith("· everything · 1 line")  # its result's summary in place

            await send(pilot, app, "ask me for my details", wait=False)
            for _ in range(3000):  # a bound on a hang
                await pilot.pause(0.02)
                if isinstance(app.screen, ElicitScreen) and app.focused is not None and app.focused.screen is app.screen:
                    break
            screen = app.screen
            assert isinstance(screen, ElicitScreen) and "Please provide inputs" in str(screen.query_one("#message").render())
            await pilot.press(*"Ada Lovelace")  # the required name, the first box
            await press(pilot, app, "accept")
            await settle(pilot, app)
            block = entries(app, ToolEntry)[-1]
            assert "User provided the requested information" in block.output and "- Name: Ada Lovelace" in block.output
            assert entries(app, AssistantEntry)[-1].text == "Thanks."
    finally:
        await session.aclose()


@pytest.mark.skipif(not STDIO_FAKE.exists() or not ASKS_FORMS, reason="needs tests/fakes/mcp_stdio.py and server logs")
async def test_a_servers_warnings_during_a_call_are_notices_under_its_block_and_a_flood_is_one_line(
    fake_server, model, workspace, tmp_path
):
    config = tmp_path / "mcp.toml"
    config.write_text(f'[[mcp.servers]]\nid = "fake"\ncommand = {json.dumps(sys.executable)}\n'
                      f'args = [{json.dumps(str(STDIO_FAKE))}]\ntrusted = true\n')
    model.call(("c1", "fake__log", {"levels": ["info", "warning", "error", "error", "critical", "warning"]}))
    model.say("Logged.")
    app, session = await open_app(fake_server, workspace, env={"ZEPH_CONFIG": str(config)})
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "log some")
            shown = app.transcript.entries()
            start = next(i for i, e in enumerate(shown) if isinstance(e, ToolEntry))
            assert [type(e) for e in shown[start:]] == [ToolEntry, Notice, Notice, Notice, Notice, AssistantEntry]
            assert [n.text for n in shown[start + 1:start + 5]] == [
                "MCP server fake warning: fake: a warning message", "MCP server fake error: fake: a error message",
                "MCP server fake error: fake: a error message", "MCP server fake: 2 more log messages in mcp/fake.log"]
    finally:
        await session.aclose()
