"""The task list beside the chat transcript, driven by Textual's pilot on a real ChatSession against the fake
server: hidden while there is no list, filled live while the turn that wrote it still runs, folded away
and back with Ctrl+T and /tasks, and shown again when the session is reopened."""

from __future__ import annotations

from pathlib import Path

import pytest

from zeph_cli.frontends.tui.screens import ConfirmScreen
from zeph_cli.frontends.tui.task_list import TaskList
from zeph_cli.frontends.tui.transcript import Notice
from tests.scripted_model import ScriptedModel
from tests.test_tui_app import SIZE, answer_confirmation, entries, open_app, send, settle


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def model(fake_server) -> ScriptedModel:
    scripted = ScriptedModel()
    fake_server.respond_with(scripted)
    return scripted


def items(*triples: tuple[str, str, str]) -> dict:
    return {"items": [{"id": i, "text": t, "status": s} for i, t, s in triples]}


async def asked(pilot, app) -> None:
    """Wait until the turn asks for an approval (it waits there until answered)."""
    for _ in range(500):  # a busy machine is slow to push the dialog
        await pilot.pause(0.02)
        if isinstance(app.screen, ConfirmScreen):
            return
    raise AssertionError("no approval was asked")


def panel_text(app) -> str:
    return str(app.query_one(TaskList).render())


async def test_the_checklist_updates_live_during_the_turn_and_folds_away(fake_server, model, workspace):
    model.say("Hello.")
    model.call(("call_1", "todo_write", items(("1", "write the file", "in_progress"), ("2", "check it", "pending"))))
    model.call(("call_2", "bash", {"command": "echo done > out.txt"}))  # asks: the turn waits here
    model.call(("call_3", "todo_write", items(("1", "write the file", "completed"), ("2", "check it", "in_progress"))))
    model.say("Written and checked.")
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            panel = app.query_one(TaskList)
            await send(pilot, app, "hi")
            assert not panel.display  # no list: no panel
            await send(pilot, app, "write the file, then check it", wait=False)
            await asked(pilot, app)  # the turn waits on the bash call's approval: the list is already shown
            assert panel.display and "Tasks 0/2" in panel_text(app)
            assert "◐ write the file" in panel_text(app) and "○ check it" in panel_text(app)
            await answer_confirmation(pilot, app, "y")
            await settle(pilot, app)
            assert "Tasks 1/2" in panel_text(app) and "● write the file" in panel_text(app)
            assert "◐ check it" in panel_text(app)
            assert panel.region.x > app.transcript.region.x  # beside the transcript, on its right
            await pilot.press("ctrl+t")
            await pilot.pause()
            assert not panel.display
            await send(pilot, app, "/tasks")
            assert panel.display
    finally:
        await session.aclose()
    app, session = await open_app(fake_server, workspace, session_id=session.conversation.id)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert app.query_one(TaskList).display and "Tasks 1/2" in panel_text(app)  # kept with the session
    finally:
        await session.aclose()


async def test_folding_an_empty_list_says_why_nothing_shows(fake_server, model, workspace):
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "/tasks")
            assert not app.query_one(TaskList).display
            assert any("no task list in this session yet" in n.text for n in entries(app, Notice))
    finally:
        await session.aclose()
