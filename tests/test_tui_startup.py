"""The chat app draws first and opens its session after: typed text waits for it, a failure is one line.

Each test runs the real app (`App.run_test()`) with an opener that waits for
the test's go-ahead before opening a real `ChatSession` (real agent, real
store, the fake OpenAI-compatible server), so what happens before the session
is ready can be seen and driven.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from zeph_cli.agent.chat_session import ChatSession
from zeph_cli.config import load_config
from zeph_cli.errors import StoreError
from zeph_cli.frontends.tui.app import TuiApprover, ZephApp
from zeph_cli.frontends.tui.startup import Startup, failure_line, starting_header
from zeph_cli.frontends.tui.transcript import AssistantEntry, Notice, UserEntry
from tests.test_tui_app import SIZE, chat_bodies, entries, environment, model, workspace  # noqa: F401  (fixtures)


def late_app(env: dict[str, str], workspace: Path) -> tuple[ZephApp, asyncio.Event]:
    """An app whose session opens only once the returned event is set."""
    go = asyncio.Event()
    approver = TuiApprover()
    loaded = load_config(env=env)

    async def opener() -> ChatSession:
        await go.wait()
        return await ChatSession.open(loaded, env=env, cwd=workspace, approver=approver)

    app = ZephApp(opener=opener, header=starting_header(loaded.config))
    approver.app = app
    return app, go


async def wait_until(pilot, condition, timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "timed out"
        await pilot.pause(0.05)


def status_text(app: ZephApp) -> str:
    return str(app.status.render())


async def test_a_message_typed_before_the_session_is_open_is_sent_once_it_is(fake_server, model, workspace):
    model.say("hello back")
    app, go = late_app(environment(fake_server), workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert "starting" in status_text(app)
            assert "new session" in str(app.query_one("#header").render())
            await pilot.press(*"hello", "enter")  # typed, as keys, into the app that is not ready yet
            await pilot.pause(0.2)
            assert app.prompt.text == ""
            assert [e.text for e in entries(app, UserEntry)] == ["hello"]
            assert "your message is sent once it is" in status_text(app)
            assert chat_bodies(fake_server) == []  # nothing could be sent yet
            await pilot.press(*"more")  # the box still takes text while it waits
            assert app.prompt.text == "more"

            go.set()
            await wait_until(pilot, lambda: any(e.text == "hello back" for e in entries(app, AssistantEntry)) and not app.busy)
            bodies = chat_bodies(fake_server)
            assert len(bodies) == 1
            assert bodies[0]["messages"][-1] == {"role": "user", "content": "hello"}
            assert [e.text for e in entries(app, UserEntry)] == ["hello"]  # shown once
            assert app.prompt.text == "more"
            assert "starting" not in status_text(app) and "context" in status_text(app)
            assert "gpt-4o" in str(app.query_one("#header").render())
    finally:
        if app.session is not None:
            await app.session.aclose()


async def test_a_second_message_while_one_waits_stays_in_the_box_and_help_works_at_once(fake_server, model, workspace):
    model.say("first answered")
    app, go = late_app(environment(fake_server), workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await pilot.press(*"first", "enter")
            await pilot.press(*"second", "enter")
            await pilot.pause(0.2)
            assert app.prompt.text == "second"  # not lost, not sent
            assert "already waits" in entries(app, Notice)[-1].text
            app.prompt.text = "/help"
            await pilot.press("enter")
            await pilot.pause(0.2)
            assert app.query("HelpPanel")  # /help needs no session
            go.set()
            await wait_until(pilot, lambda: any(e.text == "first answered" for e in entries(app, AssistantEntry)) and not app.busy)
            assert [b["messages"][-1]["content"] for b in chat_bodies(fake_server)] == ["first"]
    finally:
        if app.session is not None:
            await app.session.aclose()


async def test_esc_takes_a_waiting_message_back_into_the_box(fake_server, model, workspace):
    model.say("edited answered")
    app, go = late_app(environment(fake_server), workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await pilot.press(*"helo", "enter")
            await pilot.pause(0.2)
            await pilot.press("escape")
            await pilot.pause(0.2)
            assert app.prompt.text == "helo" and entries(app, UserEntry) == []
            assert "your message is sent" not in status_text(app)
            app.prompt.text = "hello, edited"
            await pilot.press("enter")
            go.set()
            await wait_until(pilot, lambda: any(e.text == "edited answered" for e in entries(app, AssistantEntry)) and not app.busy)
            assert [b["messages"][-1]["content"] for b in chat_bodies(fake_server)] == ["hello, edited"]
    finally:
        if app.session is not None:
            await app.session.aclose()


async def test_a_command_typed_before_the_session_is_open_runs_once_it_is(fake_server, model, workspace):
    app, go = late_app(environment(fake_server), workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await pilot.press(*"/mode plan", "enter")
            await pilot.pause(0.2)
            assert "runs once zeph has started" in entries(app, Notice)[-1].text
            go.set()
            await wait_until(pilot, lambda: app.startup.ready and "mode plan" in str(app.query_one("#header").render()))
            await pilot.pause()
            assert "context" in status_text(app)  # the gauge, once the command has run
            assert chat_bodies(fake_server) == []
    finally:
        if app.session is not None:
            await app.session.aclose()


async def test_a_store_that_cannot_open_is_one_error_line_and_the_typed_text_comes_back(fake_server, workspace, tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the data directory should be\n")
    app, go = late_app(environment(fake_server, ZEPH_HOME=str(blocker / "zeph")), workspace)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press(*"hello", "enter", *"again")
        go.set()
        await wait_until(pilot, lambda: app.startup.phase == "failed")
        await pilot.pause()
        (error,) = [n for n in entries(app, Notice) if n.kind == "error"]
        assert error.text.startswith("zeph could not start: cannot create the data directory")
        assert str(blocker) in error.text
        assert "\n" not in error.text and "Traceback" not in error.text
        assert isinstance(app.start_exception, StoreError)
        assert app.prompt.text == "hello\nagain"  # given back above what was typed since: nothing is lost
        assert "could not start" in status_text(app)
        await pilot.press("enter")  # sending again says why it cannot, and keeps the text
        await pilot.pause()
        assert app.prompt.text == "hello\nagain"
        assert "could not start" in entries(app, Notice)[-1].text
    assert app.session is None
    assert chat_bodies(fake_server) == []


async def test_an_unknown_provider_is_one_error_line(fake_server, workspace):
    app, go = late_app(environment(fake_server, ZEPH_LLM_PROVIDER="no-such-provider"), workspace)
    go.set()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.startup.phase == "failed")
        await pilot.pause()
        (error,) = [n for n in entries(app, Notice) if n.kind == "error"]
        assert error.text.startswith("zeph could not start: ") and "no-such-provider" in error.text
        assert "\n" not in error.text
    assert app.session is None


def test_startup_keeps_one_waiting_submission_and_names_failures():
    startup = Startup()
    assert startup.hold("one") and not startup.hold("two")
    assert startup.take() == "one" and startup.take() is None
    assert failure_line(StoreError("database is locked")) == "zeph could not start: database is locked"
    line = failure_line(RuntimeError("boom"), "/tmp/zeph.log")
    assert line == "zeph could not start: internal error: RuntimeError: boom (traceback in /tmp/zeph.log)"


def test_the_app_imports_neither_the_agent_nor_an_sdk_nor_the_store_before_its_first_frame():
    code = ("import sys, zeph_cli.frontends.cli.app, zeph_cli.config, zeph_cli.frontends.tui.run; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('openai', 'anthropic', 'httpx', 'sqlite_utils', 'numpy', 'sqlite3') "
            "or m in ('zeph_cli.agent', 'zeph_cli.agent.factory', 'zeph_cli.agent.chat_session', 'zeph_cli.store')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
