"""The chat app's sub-agent block, driven by Textual's pilot on a real ChatSession against the fake server:
a `task` call shows as one collapsed block titled with its job and tokens, which expands to the
sub-agent's own transcript while it runs."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from textual.widgets import Static

from zeph_cli.agent.chat_session import ChatSession
from zeph_cli.config import load_config
from zeph_cli.frontends.tui.app import TuiApprover, ZephApp
from zeph_cli.frontends.tui.subagent_view import SubagentEntry
from zeph_cli.frontends.tui.transcript import AssistantEntry, Notice, ToolEntry
from tests.fakes.server import RecordedRequest
from tests.test_subagents import Script, text_reply, tool_reply

SIZE = (100, 32)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("the answer is 42\n", encoding="utf-8")
    return root


async def open_app(fake_server, workspace: Path) -> tuple[ZephApp, ChatSession]:
    import os

    env = {**os.environ, "ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": fake_server.url + "/v1",
           "ZEPH_LLM_MODEL": "gpt-4o", "ZEPH_LLM_MAX_RETRIES": "0"}
    approver = TuiApprover()
    session = await ChatSession.open(load_config(env=env), env=env, cwd=workspace, approver=approver)
    app = ZephApp(session)
    approver.app = app
    return app, session


async def test_a_task_call_is_a_block_that_expands_to_the_subagents_transcript_as_it_runs(fake_server, workspace):
    release = threading.Event()

    def hold(request: RecordedRequest, key: str, n: int) -> None:
        if key == "JOB-TUI" and n == 2:
            release.wait(30)  # the sub-agent's answer waits until the test has looked at the running block

    script = Script(
        parent=[tool_reply(("call_task", "task", {"description": "Read the notes", "prompt": "JOB-TUI: read notes.txt"})),
                text_reply("The notes say 42.")],
        children={"JOB-TUI": [tool_reply(("call_read", "read_file", {"path": "notes.txt"}), usage=(300, 20, 0)),
                              text_reply("notes.txt holds the answer 42.", usage=(3000, 10, 0))]},
        hold=hold,
    )
    fake_server.respond_with(script)
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            app.prompt.text = "what do the notes say?"
            app.prompt.focus()
            await pilot.press("enter")

            def block() -> SubagentEntry | None:
                found = [e for e in app.transcript.entries() if isinstance(e, SubagentEntry)]
                return found[0] if found else None

            for _ in range(1500):  # 30 s at most: a bound on a hang
                await pilot.pause(0.02)
                entry = block()
                if entry is not None and entry.query(ToolEntry):
                    break
            entry = block()
            assert entry is not None and entry.collapsed
            # While it runs: the title says the job, that it runs, and the tokens so far; inside, its read_file.
            assert entry.title.startswith("⧉ Read the notes · running…")
            assert "300 in · 20 out" in entry.title
            (inner,) = entry.query(ToolEntry)
            assert inner.tool_name == "read_file" and inner.subject == "notes.txt"
            assert [e for e in app.transcript.entries() if isinstance(e, ToolEntry)] == []  # no separate task row
            release.set()
            if app.worker is not None:
                await app.workers.wait_for_complete([app.worker])
            await pilot.pause()

            assert entry.title.startswith("⧉ Read the notes · done · 3,300 in · 30 out · session ")
            replies = [str(s.render()) for s in entry.query(Static) if s.has_class("reply")]
            assert replies == ["notes.txt holds the answer 42."]
            assert not entry.query(Notice)  # nothing went wrong inside
            assert "the answer is 42" in inner.output
            # Collapsed, its transcript is hidden; a click on the title expands it.
            assert not inner.display or not entry.query_one(type(entry).Contents).display
            await pilot.click(entry.query_one("CollapsibleTitle"))
            await pilot.pause()
            assert not entry.collapsed and entry.query_one(type(entry).Contents).display
            assert [e.text for e in app.transcript.entries() if isinstance(e, AssistantEntry)] == ["The notes say 42."]
    finally:
        release.set()
        await session.aclose()
        await asyncio.sleep(0)


async def test_escape_cancels_the_subagent_with_the_turn_and_both_sessions_stay_valid(fake_server, workspace):
    release = threading.Event()

    def hold(request: RecordedRequest, key: str, n: int) -> None:
        if key == "JOB-STOP" and n == 2:
            release.wait(30)  # the sub-agent's second request hangs until the test is over

    script = Script(
        parent=[tool_reply(("call_task", "task", {"description": "Slow job", "prompt": "JOB-STOP: read notes.txt"}))],
        children={"JOB-STOP": [tool_reply(("call_read", "read_file", {"path": "notes.txt"})), text_reply("late")]},
        hold=hold,
    )
    fake_server.respond_with(script)
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            app.prompt.text = "start the slow job"
            app.prompt.focus()
            await pilot.press("enter")
            for _ in range(1500):  # 30 s at most: a bound on a hang
                await pilot.pause(0.02)
                if len(script.seen["JOB-STOP"]) == 2:
                    break
            assert len(script.seen["JOB-STOP"]) == 2  # the sub-agent waits for its second reply
            await pilot.press("escape")
            if app.worker is not None:
                try:
                    await app.workers.wait_for_complete([app.worker])
                except Exception:  # noqa: BLE001 — a cancelled worker
                    pass
            await pilot.pause()
            (entry,) = [e for e in app.transcript.entries() if isinstance(e, SubagentEntry)]
            assert " · cancelled" in entry.title
            store = session.store
            parent_rows = store.history(session.conversation.id)
            assert [r.role for r in parent_rows] == ["user", "assistant", "tool"]
            assert "Not completed" in parent_rows[2].message.tool_results[0].content
            (child,) = store.subagent_sessions(session.conversation.id)
            child_rows = store.history(child.id)
            assert [r.role for r in child_rows] == ["user", "assistant", "tool"]
            assert "the answer is 42" in child_rows[2].message.tool_results[0].content
            assert not app.busy
    finally:
        release.set()
        await session.aclose()


async def test_a_subagents_bash_call_asks_naming_the_subagent(fake_server, workspace):
    from zeph_cli.frontends.tui.screens import ConfirmScreen

    script = Script(
        parent=[tool_reply(("call_task", "task", {"description": "Make  the\nfile",
                                                  "prompt": "JOB-ASK: write a file"})),
                text_reply("written")],
        children={"JOB-ASK": [tool_reply(("call_bash", "bash", {"command": "echo hi > out.txt"})),
                              text_reply("done")]},
    )
    fake_server.respond_with(script)
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            app.prompt.text = "make the file"
            app.prompt.focus()
            await pilot.press("enter")
            for _ in range(1500):  # 30 s at most: a bound on a hang
                await pilot.pause(0.02)
                if isinstance(app.screen, ConfirmScreen) and app.screen.query("#asker"):
                    break
            assert isinstance(app.screen, ConfirmScreen)
            assert str(app.screen.query_one("#asker").render()) == "asked by sub-agent: Make the file"
            assert str(app.screen.query_one("#detail").render()) == "$ echo hi > out.txt"
            await pilot.press("y")
            if app.worker is not None:
                await app.workers.wait_for_complete([app.worker])
            await pilot.pause()
            assert (workspace / "out.txt").read_text() == "hi\n"
            (entry,) = [e for e in app.transcript.entries() if isinstance(e, SubagentEntry)]
            assert entry.title.startswith("⧉ Make the file · done")
    finally:
        await session.aclose()


MARKUP = "Fix [/] and [b]bold[/b] [/$x [a=@b] [$var] [@click=app.quit]q[/] \\"


async def test_what_the_model_wrote_shows_as_written_never_as_markup(fake_server, workspace):
    script = Script(
        parent=[tool_reply(("call_task", "task", {"description": MARKUP, "prompt": f"JOB-MARKUP: {MARKUP}"})),
                text_reply("ok")],
        children={"JOB-MARKUP": [tool_reply(("call_read", "read_file", {"path": "[/]notes.txt"})),
                                 text_reply(f"answer {MARKUP}")]},
    )
    fake_server.respond_with(script)
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            app.prompt.text = "go"
            app.prompt.focus()
            await pilot.press("enter")
            if app.worker is not None:
                await app.workers.wait_for_complete([app.worker])
            await pilot.pause()
            assert app.is_running
            (entry,) = [e for e in app.transcript.entries() if isinstance(e, SubagentEntry)]
            shown = str(entry.query_one("CollapsibleTitle").render())
            assert shown.startswith(f"▶ ⧉ {MARKUP.rstrip()} · done")
            assert str(entry.query_one(".job", Static).render()) == f"JOB-MARKUP: {MARKUP}"
            (inner,) = entry.query(ToolEntry)
            assert str(inner.query_one("CollapsibleTitle").render()).startswith("▶ ⏺ read_file [/]notes.txt · ")
            replies = [str(s.render()) for s in entry.query(Static) if s.has_class("reply")]
            assert replies == [f"answer {MARKUP}"]
    finally:
        await session.aclose()


def test_a_subagent_block_takes_markup_in_every_field_as_text():
    from textual.content import Content

    entry = SubagentEntry(MARKUP, {"prompt": MARKUP}, status=MARKUP, output=MARKUP, failed=True)
    assert Content.from_text(entry._title_text()).plain == f"⧉ {MARKUP.rstrip()} · {MARKUP}"
    assert Content.from_text(entry.replica()._title_text()).plain == f"⧉ {MARKUP.rstrip()} · {MARKUP}"
