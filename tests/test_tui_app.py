"""The chat app driven by Textual's pilot, on a real ChatSession against the fake server.

Every test runs the real app (`App.run_test()`), a real agent with the openai
SDK, a `ScriptedModel` behind the fake OpenAI-compatible server and a real
SQLite store; they type, press keys and read the widgets.
"""

from __future__ import annotations

import asyncio

from pathlib import Path

import pytest
from textual.worker import WorkerCancelled

from zeph_cli.agent.chat_session import ChatSession
from zeph_cli.config import load_config
from zeph_cli.frontends.render import human_tokens
from zeph_cli.frontends.tui.app import TuiApprover, TuiElicitor, ZephApp
from zeph_cli.frontends.tui.help_panel import HelpPanel
from zeph_cli.frontends.tui.prompt_input import PromptInput
from zeph_cli.frontends.tui.screens import ConfirmScreen, ContextScreen, SessionsScreen
from zeph_cli.frontends.tui.status_bar import StatusBar
from zeph_cli.frontends.tui.transcript import AssistantEntry, Divider, Notice, ToolEntry, UserEntry
from tests.fakes import openai_wire
from tests.scripted_model import CHAT_PATH, ScriptedModel

SIZE = (100, 32)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("the answer is 42\n", encoding="utf-8")
    return root


@pytest.fixture
def model(fake_server) -> ScriptedModel:
    scripted = ScriptedModel()
    fake_server.respond_with(scripted)
    return scripted


def environment(fake_server, **extra: str) -> dict[str, str]:
    import os

    return {
        **os.environ,
        "ZEPH_LLM_PROVIDER": "compatible",
        "ZEPH_LLM_BASE_URL": fake_server.url + "/v1",
        "ZEPH_LLM_MODEL": "gpt-4o",
        "ZEPH_LLM_MAX_RETRIES": "0",
        **extra,
    }


async def open_app(fake_server, workspace: Path, **options) -> tuple[ZephApp, ChatSession]:
    env = environment(fake_server, **options.pop("env", {}))
    approver, elicitor = TuiApprover(), TuiElicitor()  # as the chat app's start (run.py) makes them
    session = await ChatSession.open(load_config(env=env), env=env, cwd=workspace, approver=approver,
                                     elicitor=elicitor, **options)
    app = ZephApp(session)
    approver.app = elicitor.app = app
    return app, session


async def settle(pilot, app: ZephApp) -> None:
    """Wait for the running turn (if any) and for the screen to catch up."""
    if app.worker is not None:
        try:
            await app.workers.wait_for_complete([app.worker])
        except WorkerCancelled:
            pass
    await pilot.pause()


async def send(pilot, app: ZephApp, text: str, *, wait: bool = True) -> None:
    app.prompt.text = text
    app.prompt.focus()
    await pilot.press("enter")
    if wait:
        await settle(pilot, app)


def entries(app: ZephApp, kind: type) -> list:
    return [e for e in app.transcript.entries() if isinstance(e, kind)]


def chat_bodies(fake_server) -> list[dict]:
    return [r.json for r in fake_server.requests_to(CHAT_PATH) if r.json.get("stream")]


# ---- send and stream ---------------------------------------------------------------------


async def test_a_message_is_sent_and_the_reply_streams_in_as_markdown(fake_server, model, workspace):
    model.chat.append(openai_wire.stream_response(openai_wire.text_chunks(["**Hi** ", "there, ", "`code`"], usage=(900, 12, 0))))
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "hello zeph")
            assert [e.text for e in entries(app, UserEntry)] == ["hello zeph"]
            (reply,) = entries(app, AssistantEntry)
            assert reply.text == "**Hi** there, `code`"
            assert chat_bodies(fake_server)[-1]["messages"][-1]["content"] == "hello zeph"
            header = str(app.query_one("#header").render())
            assert "compatible" in header and "gpt-4o" in header and "hello zeph" in header
            line = app.query_one(StatusBar).line()
            assert "context" in line and "/ 102k" in line and "in 900 · out 12" in line  # 128k minus the reply reserve
            assert app.prompt.text == ""
    finally:
        await session.aclose()


async def test_the_status_line_counts_streamed_tokens_live_and_estimates_unreported_output(
    fake_server, model, workspace
):
    pieces = ["abcd " * 50 for _ in range(60)]  # 15,000 characters ≈ 3.8k tokens, no usage reported
    # 2.4 s of streaming, about ten redraws (one per REDRAW_SECS): a busy machine that delivers the chunks in
    # bursts still shows the figure at three or more values
    model.chat.append(openai_wire.stream_response(openai_wire.text_chunks(pieces, usage=None), chunk_delay=0.04))
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            status = app.query_one(StatusBar)
            seen: set[str] = set()

            async def watch() -> None:  # started before Enter: pilot.press waits for a quiet app
                while app.worker is None or app.busy:
                    await asyncio.sleep(0.05)
                    line = str(status.render())
                    if "streaming ~" in line:
                        seen.add(line.split("streaming ~")[1].split(" tokens")[0])

            watcher = asyncio.create_task(watch())
            await send(pilot, app, "go", wait=False)
            await asyncio.wait_for(watcher, timeout=30)
            assert len(seen) >= 3  # the drawn figure grew while the reply streamed
            await settle(pilot, app)
            line = status.line()
            assert "out ~3.8k" in line and "streaming" not in line
    finally:
        await session.aclose()


async def test_enter_sends_while_shift_enter_and_ctrl_j_insert_newlines_and_up_recalls(fake_server, model, workspace):
    model.say("ok")
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            app.prompt.focus()
            await pilot.press("a", "ctrl+j", "b", "shift+enter", "c")
            assert app.prompt.text == "a\nb\nc"
            await pilot.press("enter")
            await settle(pilot, app)
            assert entries(app, UserEntry)[0].text == "a\nb\nc"
            await pilot.press("up")
            assert app.prompt.text == "a\nb\nc"  # recalled
    finally:
        await session.aclose()


async def test_page_up_scrolls_back_mid_stream_and_the_view_stays_until_back_at_the_bottom(
    fake_server, model, workspace
):
    lines = [f"line {i}\n\n" for i in range(120)]
    model.chat.append(openai_wire.stream_response(openai_wire.text_chunks(lines, usage=None), chunk_delay=0.03))
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "many lines", wait=False)
            transcript = app.transcript
            while transcript.max_scroll_y < 3 * transcript.size.height:
                await pilot.pause(0.05)
            await pilot.press("pageup")
            await pilot.pause()
            held = transcript.scroll_y
            assert held < transcript.max_scroll_y
            grown = transcript.max_scroll_y
            while transcript.max_scroll_y < grown + 10 and app.busy:
                await pilot.pause(0.05)
            assert transcript.scroll_y == held  # the view stays where the reader put it
            assert app.prompt.text == ""  # the keys went to the transcript, not into the prompt
            while transcript.scroll_y < transcript.max_scroll_y:
                await pilot.press("pagedown")
                await pilot.pause()
            await settle(pilot, app)
            assert transcript.scroll_y == transcript.max_scroll_y  # following the end again
    finally:
        await session.aclose()


# ---- errors and cancellation -------------------------------------------------------------


async def test_a_provider_error_shows_inline_and_the_app_keeps_running(fake_server, model, workspace):
    model.chat.append(openai_wire.server_error())
    model.say("second try works")
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "first")
            errors = [n for n in entries(app, Notice) if n.kind == "error"]
            assert errors and "server had an error" in errors[0].text and "press ↑" in errors[0].text
            await send(pilot, app, "again")
            assert entries(app, AssistantEntry)[-1].text == "second try works"
            sent = chat_bodies(fake_server)[-1]["messages"]
            assert [m["content"] for m in sent if m["role"] == "user"][-1:] == ["again"]
            assert "first" not in [m["content"] for m in sent]  # the unanswered message is not sent again
            await app.load_transcript()  # read back: the user still sees it, marked
            shown = app.transcript.entries()
            assert [type(e) for e in shown][:3] == [UserEntry, Notice, UserEntry]
            assert shown[1].text.startswith("unanswered, not sent again: ")
    finally:
        await session.aclose()


async def test_escape_cancels_a_streaming_reply_and_keeps_what_arrived(fake_server, model, workspace):
    pieces = [f"word{i} " for i in range(200)]
    model.chat.append(openai_wire.stream_response(openai_wire.text_chunks(pieces, usage=None), chunk_delay=0.02))
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "tell me a long story", wait=False)
            for _ in range(100):
                await pilot.pause(0.05)
                replies = entries(app, AssistantEntry)
                if replies and "word3" in replies[0].text:
                    break
            await pilot.press("escape")
            await settle(pilot, app)
            (reply,) = entries(app, AssistantEntry)
            assert reply.text.startswith("word0 word1") and "word199" not in reply.text
            assert reply.partial == "cancelled"
            assert any("cancelled" in n.text for n in entries(app, Notice))
            stored = [r for r in session.store.history(session.conversation.id) if r.role == "assistant"]
            assert stored and stored[-1].partial and stored[-1].message.content.startswith("word0")
            assert not app.busy
    finally:
        await session.aclose()


async def test_ctrl_c_copies_a_selection_then_cancels_a_turn_and_a_second_press_quits(
    fake_server, model, workspace, monkeypatch
):
    from textual.selection import Selection

    import zeph_cli.frontends.tui.app as app_module

    monkeypatch.setattr(app_module, "QUIT_WINDOW_SECS", 1.0)
    pieces = [f"word{i} " for i in range(200)]
    model.say("the answer is 42")
    model.chat.append(openai_wire.stream_response(openai_wire.text_chunks(pieces, usage=None), chunk_delay=0.02))
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "question")
            (question,) = entries(app, UserEntry)
            app.screen.selections = {question: Selection(None, None)}  # as a mouse drag over it would
            await pilot.press("ctrl+c")
            await pilot.pause()
            assert app.clipboard == "question" and not app.screen.selections and app.is_running

            await pilot.press("ctrl+c")  # idle, no selection: only says how to quit
            await pilot.pause(1.2)  # past the quit window
            assert app.is_running

            await send(pilot, app, "tell me a long story", wait=False)
            while not entries(app, AssistantEntry)[-1:] or "word3" not in entries(app, AssistantEntry)[-1].text:
                await pilot.pause(0.05)
            await pilot.press("ctrl+c")  # cancels the turn, does not quit
            await settle(pilot, app)
            assert entries(app, AssistantEntry)[-1].partial == "cancelled" and app.is_running
            await pilot.press("ctrl+c")  # a second press quits
            await pilot.pause()
            assert not app.is_running and app.return_value == 0
    finally:
        await session.aclose()


# ---- confirmation ------------------------------------------------------------------------


async def answer_confirmation(pilot, app: ZephApp, key: str) -> str:
    for _ in range(500):  # the dialog is pushed, then composed: wait for both (a busy machine is slow)
        await pilot.pause(0.02)
        if isinstance(app.screen, ConfirmScreen) and app.screen.query("#detail"):
            break
    assert isinstance(app.screen, ConfirmScreen), [n.text for n in entries(app, Notice)] + [
        (t.tool_name, t.status) for t in entries(app, ToolEntry)]
    shown = str(app.screen.query_one("#detail").render())
    await pilot.press(key)
    return shown


async def test_write_and_exec_tools_ask_yes_no_always(fake_server, model, workspace):
    model.call(("call_a", "bash", {"command": "echo first > out.txt"}))
    model.call(("call_b", "bash", {"command": "echo second >> out.txt"}))
    model.say("one approved, one refused")
    model.call(("call_c", "bash", {"command": "echo third >> out.txt"}))
    model.call(("call_d", "bash", {"command": "echo fourth >> out.txt"}))
    model.say("always")
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "write things", wait=False)
            assert "echo first > out.txt" in await answer_confirmation(pilot, app, "y")
            assert "echo second" in await answer_confirmation(pilot, app, "n")
            await settle(pilot, app)
            assert (workspace / "out.txt").read_text() == "first\n"
            tools = entries(app, ToolEntry)
            assert [t.status.split(" ·")[0].split(":")[0] for t in tools] == ["exit 0", "denied"]

            await send(pilot, app, "more", wait=False)
            await answer_confirmation(pilot, app, "a")  # always bash in this session: no second question
            await settle(pilot, app)
            assert not isinstance(app.screen, ConfirmScreen)
            assert (workspace / "out.txt").read_text() == "first\nthird\nfourth\n"
    finally:
        await session.aclose()


# ---- slash commands ----------------------------------------------------------------------


async def test_help_mode_system_and_unknown_commands(fake_server, model, workspace):
    model.say("planned")
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "/help")
            assert entries(app, HelpPanel)
            await send(pilot, app, "/mode plan")
            assert "mode plan" in str(app.query_one("#header").render())
            await send(pilot, app, "/system Answer like a pirate.")
            await send(pilot, app, "/compcat")
            error = [n for n in entries(app, Notice) if n.kind == "error"][-1]
            assert "did you mean /compact" in error.text
            assert app.prompt.text == "/compcat"  # nothing typed is lost
            app.prompt.text = ""
            await send(pilot, app, "plan it")
            body = chat_bodies(fake_server)[-1]
            system = "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")
            assert "Answer like a pirate." in system
            names = {t["function"]["name"] for t in body["tools"]}
            assert "bash" not in names and "read_file" in names  # plan mode: read tools only
    finally:
        await session.aclose()


async def test_enhance_sets_the_sessions_enhancement_prompt_sent_last(fake_server, model, workspace):
    model.say("one")
    model.say("two")
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "/enhance Answer in haiku.")  # before the first prompt: kept for the session
            await send(pilot, app, "first")
            last = chat_bodies(fake_server)[-1]["messages"][-1]
            assert last["role"] == "system" and "<enhanced_prompt>\nAnswer in haiku.\n</enhanced_prompt>" in last["content"]
            await send(pilot, app, "/enhance")
            await send(pilot, app, "second")
            messages = chat_bodies(fake_server)[-1]["messages"]
            assert messages[-1] == {"role": "user", "content": "second"}
            assert not any("<enhanced_prompt>" in (m["content"] or "") for m in messages)
    finally:
        await session.aclose()


def system_of(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")


async def test_profile_lists_and_switches_the_global_prompt(fake_server, model, workspace, tmp_path):
    config = tmp_path / "profiles.toml"
    config.write_text('[prompt.profiles]\nreviewer = "You review code."\nterse = "Be terse."\n')
    model.say("one")
    model.say("two")
    app, session = await open_app(fake_server, workspace, env={"ZEPH_CONFIG": str(config)})
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "/profile")
            listing = entries(app, Notice)[-1].text
            assert "global prompt: none" in listing and "reviewer: You review code." in listing
            await send(pilot, app, "/profile ghost")
            assert "no prompt profile 'ghost'" in entries(app, Notice)[-1].text
            await send(pilot, app, "/profile terse")  # before the first prompt: kept for the session
            await send(pilot, app, "first")
            assert "<system_prompt>\nBe terse.\n</system_prompt>" in system_of(chat_bodies(fake_server)[-1])
            await send(pilot, app, "/profile none")
            await send(pilot, app, "/profile edit Prefers tabs over spaces.")
            await send(pilot, app, "second")
            body = chat_bodies(fake_server)[-1]
            assert "<system_prompt>" not in system_of(body)
            assert any("<user_profile_memory>" in m["content"] and "Prefers tabs over spaces." in m["content"] for m in body["messages"])
            await send(pilot, app, "/profile")
            assert "user profile (updated" in entries(app, Notice)[-1].text and "by you" in entries(app, Notice)[-1].text
            await send(pilot, app, "/profile SHOW")
            assert "user profile (updated" in entries(app, Notice)[-1].text
            from zeph_cli.features.session_memory.store import DigestStore

            DigestStore(session.agent.store.db).discard_profile("generic assistant text (“feel free to”)")
            await send(pilot, app, "/profile")
            listing = entries(app, Notice)[-1].text
            assert "Prefers tabs over spaces." in listing
            assert "the last automatic update was discarded: generic assistant text (“feel free to”)" in listing
            await send(pilot, app, "/profile clear")
            assert entries(app, Notice)[-1].text == "user profile cleared"
            assert session.agent.session_memory.profile() is None or not session.agent.session_memory.profile().text
    finally:
        await session.aclose()


async def test_model_and_provider_switches_and_a_bad_provider_keeps_the_old_one(fake_server, model, workspace):
    model.say("from the other model")
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "/model gpt-4o-mini")
            assert "gpt-4o-mini" in str(app.query_one("#header").render())
            await send(pilot, app, "/provider no-such-provider")
            error = [n for n in entries(app, Notice) if n.kind == "error"][-1]
            assert "no-such-provider" in error.text
            assert "gpt-4o-mini" in str(app.query_one("#header").render())
            app.prompt.text = ""
            await send(pilot, app, "hi")
            assert chat_bodies(fake_server)[-1]["model"] == "gpt-4o-mini"
    finally:
        await session.aclose()


async def test_compact_clear_new_export_and_exit(fake_server, model, workspace):
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "/compact")
            assert "nothing to compact" in entries(app, Notice)[-1].text
            for i in range(4):
                model.say(f"answer {i}")
                await send(pilot, app, f"question {i}")
            await send(pilot, app, "/compact")
            dividers = entries(app, Divider)
            assert dividers and "compacted 4 messages" in dividers[-1].text
            assert [e.text for e in entries(app, UserEntry)][:1] == ["question 0"]  # still on screen

            await send(pilot, app, "/clear")
            assert "context cleared" in entries(app, Divider)[-1].text
            model.say("fresh")
            await send(pilot, app, "after clear")
            sent = [m.get("content") for m in chat_bodies(fake_server)[-1]["messages"] if m["role"] != "system"]
            assert sent == ["after clear"]

            await send(pilot, app, "/export")
            exported = workspace / f"zeph-session-{session.conversation.id}.md"
            assert exported.is_file() and "question 0" in exported.read_text()
            await send(pilot, app, "/export notes.md")  # a name, relative to the session's directory
            assert "question 0" in (workspace / "notes.md").read_text()

            await send(pilot, app, "/new")
            assert not entries(app, UserEntry)
            assert "new session" in str(app.query_one("#header").render())
            await send(pilot, app, "/exit", wait=False)
            await pilot.pause()
        assert app.return_value == 0
    finally:
        await session.aclose()


async def test_context_text_shows_the_next_requests_text_in_the_transcript(fake_server, model, workspace):
    from textual.widgets import Markdown

    model.say("Hello there.")
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "first question")
            await send(pilot, app, "/context text")
            await pilot.pause()
            shown = app.query(Markdown).last().source
            assert shown.startswith("```text\n══ base prompt · ") and shown.endswith("\n```")
            places = [shown.index(s) for s in ("══ environment", "══ tools", "══ history", "── user\nfirst question",
                                                "── assistant\nHello there.")]
            assert places == sorted(places)
            assert not isinstance(app.screen, ContextScreen)
    finally:
        await session.aclose()


async def test_context_screen_shows_blocks_and_changes_since_the_last_turn(fake_server, model, workspace):
    model.say("one")
    model.say("two")
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "first")
            await send(pilot, app, "second")
            await send(pilot, app, "/context")
            await pilot.pause()
            assert isinstance(app.screen, ContextScreen)
            from textual.widgets import DataTable

            table = app.screen.query_one(DataTable)
            rows = [table.get_row_at(i) for i in range(table.row_count)]
            names = [r[0] for r in rows]
            assert names[:3] == ["base prompt", "environment", "mode prompt"] and "history" in names
            history = rows[names.index("history")]
            assert history[4].startswith("+")  # history grew since the previous turn
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, ContextScreen)
    finally:
        await session.aclose()


async def test_sessions_picker_switches_and_resume_shows_the_transcript(fake_server, model, workspace):
    model.say("about rivers")
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "tell me about rivers")
            first_id = session.conversation.id
            await send(pilot, app, "/new")
            model.say("about mountains")
            await send(pilot, app, "tell me about mountains")
            await send(pilot, app, "/sessions rivers", wait=False)
            for _ in range(50):
                await pilot.pause(0.02)
                if isinstance(app.screen, SessionsScreen):
                    break
            assert isinstance(app.screen, SessionsScreen)
            await pilot.press("enter")
            await pilot.pause(0.1)
            assert session.conversation.id == first_id
            assert [e.text for e in entries(app, UserEntry)] == ["tell me about rivers"]
    finally:
        await session.aclose()

    resumed, session2 = await open_app(fake_server, workspace, session_id=first_id)
    try:
        async with resumed.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert [e.text for e in entries(resumed, UserEntry)] == ["tell me about rivers"]
            assert [e.text for e in entries(resumed, AssistantEntry)] == ["about rivers"]
    finally:
        await session2.aclose()


async def test_the_gauge_follows_the_context_and_the_compaction_badge_clears(fake_server, model, workspace):
    app, session = await open_app(fake_server, workspace, env={"ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": "4000"})
    try:
        async with app.run_test(size=SIZE) as pilot:
            before = app.query_one(StatusBar).report.context_tokens
            model.say("x " * 300)
            await send(pilot, app, "grow the context please")
            status = app.query_one(StatusBar)
            assert status.report.context_tokens > before + 250
            assert "/ 3.2k" in status.line()  # 4000 minus the 20% reply reserve
            assert status.badge == ""
    finally:
        await session.aclose()


async def test_unknown_prompt_input_keys_do_not_lose_text(fake_server, model, workspace):
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            app.prompt.focus()
            await pilot.press("/", "c", "o", "m")
            assert "/compact" in str(app.query_one("#completions").render())
            await pilot.press("tab")
            assert app.query_one(PromptInput).text == "/compact"
    finally:
        await session.aclose()


# ---- long replies ------------------------------------------------------------------------


def test_a_reply_is_sealed_only_at_a_blank_line_outside_code():
    from zeph_cli.frontends.tui.transcript import seal_point

    assert seal_point("one\n\ntwo") == len("one\n\n")
    assert seal_point("a\n\n```\ncode\n\nmore\n```\nafter") == len("a\n\n")  # not inside the fence
    assert seal_point("```\nopen fence\n\n") == 0
    assert seal_point("no break at all") == 0


async def test_a_long_streamed_reply_is_sealed_in_blocks_and_rendered_completely(fake_server, model, workspace):
    from zeph_cli.frontends.tui.transcript import SEGMENT_CHARS

    paragraphs = [f"Paragraph {i}: " + "words " * 60 + "\n\n" for i in range(40)]
    paragraphs.insert(10, "```python\n" + "print('x')\n\n" * 30 + "```\n\n")
    text = "".join(paragraphs)
    model.chat.append(openai_wire.stream_response(openai_wire.text_chunks(paragraphs, usage=None), chunk_delay=0.01))
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "long please")
            (reply,) = entries(app, AssistantEntry)
            assert reply.text == text.rstrip() or reply.text == text
            assert reply.sealed and len(reply.markdown.source) < len(text) - SEGMENT_CHARS  # most of it sealed
            assert "".join(reply.sealed) + reply.markdown.source == reply.text
            assert all(part.count("```") % 2 == 0 for part in reply.sealed)  # never cut inside code
    finally:
        await session.aclose()


async def test_a_long_reply_that_arrives_before_the_screen_catches_up_is_sealed_too(fake_server, model, workspace):
    """A stream faster than the screen's refresh (or a busy machine) ends before the tail is next rendered:
    the tail is sealed at the end as it would have been while streaming, not left as one live widget."""
    from zeph_cli.frontends.tui.transcript import SEGMENT_CHARS

    paragraphs = [f"Paragraph {i}: " + "words " * 60 + "\n\n" for i in range(40)]
    text = "".join(paragraphs)
    chunks = [paragraphs[0], "".join(paragraphs[1:])]  # the first is rendered at once, the rest waits for a refresh
    model.chat.append(openai_wire.stream_response(openai_wire.text_chunks(chunks, usage=None)))
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "long please")
            (reply,) = entries(app, AssistantEntry)
            assert reply.text in (text, text.rstrip())
            assert reply.sealed and len(reply.markdown.source) < SEGMENT_CHARS
            assert "".join(reply.sealed) + reply.markdown.source == reply.text
    finally:
        await session.aclose()


async def test_long_transcripts_unmount_old_entries_and_bring_them_back(fake_server, model, workspace, monkeypatch):
    from textual.widgets import Button

    import zeph_cli.frontends.tui.transcript as transcript_module

    monkeypatch.setattr(transcript_module, "MAX_MOUNTED", 6)
    monkeypatch.setattr(transcript_module, "SHOW_MORE", 4)
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            for i in range(5):
                model.say(f"answer {i}")
                await send(pilot, app, f"question {i}")
            mounted = [e.text for e in entries(app, (UserEntry, AssistantEntry))]
            assert len(app.transcript.entries()) == 6 and mounted[-1] == "answer 4"
            assert len(app.transcript.unmounted) == 4
            button = app.transcript.query_one("#earlier", Button)
            assert "4 hidden" in str(button.label)
            button.press()
            await pilot.pause()
            shown = [e.text for e in app.transcript.entries()]
            assert shown[:2] == ["question 0", "answer 0"] and not app.transcript.unmounted
            assert not app.transcript.query("#earlier")
    finally:
        await session.aclose()


async def test_older_replies_are_frozen_into_one_block_and_the_newest_stay_markdown(
    fake_server, model, workspace, monkeypatch
):
    from textual.widgets import Markdown, Static

    import zeph_cli.frontends.tui.transcript as transcript_module

    monkeypatch.setattr(transcript_module, "FRESH_ENTRIES", 3)
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            for i in range(4):
                model.say(f"**answer {i}**\n\n- a\n- b")
                await send(pilot, app, f"question {i}")
            replies = entries(app, AssistantEntry)
            assert [r.frozen for r in replies] == [True, True, False, False]
            for old in replies[:2]:
                assert not old.query(Markdown) and len(old.query(Static)) == 1
                assert old.rendered_chars == len(old.text)
            assert replies[-1].query(Markdown) and replies[-1].rendered_chars == len(replies[-1].text)
            app.transcript.scroll_home(animate=False)
            await pilot.pause()
            assert "answer&#160;0" in app.export_screenshot()  # the frozen block draws the reply
    finally:
        await session.aclose()
    resumed_app, resumed = await open_app(fake_server, workspace, continue_last=True)
    try:
        async with resumed_app.run_test(size=SIZE):
            replies = entries(resumed_app, AssistantEntry)
            assert [r.frozen for r in replies] == [True, True, False, False]  # composed frozen, never as Markdown
            assert [r.text.split("\n")[0] for r in replies] == [f"**answer {i}**" for i in range(4)]
    finally:
        await resumed.aclose()


async def test_the_probe_shows_its_badge_while_it_validates(fake_server, model, workspace):
    app, session = await open_app(fake_server, workspace, env={"ZEPH_MEMORY_COMPRESSION_PROBE_ENABLED": "true"})
    badges: list[str] = []
    try:
        async with app.run_test(size=SIZE) as pilot:
            status = app.query_one(StatusBar)
            original = status.show_badge
            status.show_badge = lambda text: (badges.append(text), original(text))[1]
            for i in range(4):
                model.say(f"answer {i} with FACT-P{i}")
                await send(pilot, app, f"question {i} FACT-P{i}")
            await send(pilot, app, "/compact")
            assert "Validating compaction quality…" in badges
            assert badges[-1] == ""  # cleared when done
            assert "probe Pass" in entries(app, Divider)[-1].text
    finally:
        await session.aclose()


# ---- the reply's marks: cut by the length limit, usage estimated --------------------------


async def test_a_reply_cut_by_the_length_limit_gets_a_notice_under_it(fake_server, model, workspace):
    events = openai_wire.text_chunks(["One, two, thr"], finish_reason="length", usage=(900, 9, 0))
    model.chat.append(openai_wire.stream_response(events))  # as many tokens as it was allowed
    model.say("Done.")
    app, session = await open_app(fake_server, workspace, env={"ZEPH_LLM_MAX_TOKENS": "9"})
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "count")
            shown = app.transcript.entries()
            assert isinstance(shown[-2], AssistantEntry) and shown[-2].text == "One, two, thr"
            notice = shown[-1]
            assert isinstance(notice, Notice) and notice.kind == "warning"
            assert "length limit of 9 tokens" in notice.text and "llm.max_tokens" in notice.text
            await send(pilot, app, "again")  # a reply that ended normally has no such notice
            assert isinstance(app.transcript.entries()[-1], AssistantEntry)
            assert len([n for n in entries(app, Notice) if "length limit" in n.text]) == 1
            await app.load_transcript()  # read back from the store, the cut reply keeps its mark
            shown = app.transcript.entries()
            assert [type(e) for e in shown] == [UserEntry, AssistantEntry, Notice, UserEntry, AssistantEntry]
            assert "length limit" in shown[2].text and "llm.max_tokens" in shown[2].text
    finally:
        await session.aclose()


async def test_unreported_input_is_the_request_estimate_marked(fake_server, model, workspace):
    model.chat.append(openai_wire.stream_response(openai_wire.text_chunks(["word " * 40], usage=None)))
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            sent: list = []
            original = app.status.show_usage

            def spy(usage, request_tokens=None):
                sent.append(request_tokens)
                original(usage, request_tokens)

            app.status.show_usage = spy
            await send(pilot, app, "talk")
            (request_tokens,) = sent
            assert request_tokens > 500  # the request's own estimate: zeph's system prompt alone is more
            line = app.status.line()
            assert f"in ~{human_tokens(request_tokens)} · out ~50" in line
            assert "in 0" not in line and "out 0" not in line
    finally:
        await session.aclose()


# ---- surroundings that fail: the project file, the database -------------------------------


async def test_a_project_file_too_big_is_a_warning_in_the_chat_app(fake_server, model, workspace):
    (workspace / "ZEPH.md").write_bytes(b"x" * 1_000_001)
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            warnings = [n.text for n in entries(app, Notice) if n.kind == "warning"]
            assert any(str(workspace / "ZEPH.md") in w and "not used as project context" in w for w in warnings), warnings
    finally:
        await session.aclose()


async def test_a_prompt_the_locked_database_cannot_take_goes_back_to_the_input(fake_server, model, workspace):
    import os
    import sqlite3

    model.say("never asked")
    app, session = await open_app(fake_server, workspace)
    holder = sqlite3.connect(Path(os.environ["ZEPH_HOME"]) / "zeph.db", isolation_level=None)
    try:
        async with app.run_test(size=SIZE) as pilot:
            holder.execute("BEGIN IMMEDIATE")
            await send(pilot, app, "typed while another writer holds the lock")
            errors = [n.text for n in entries(app, Notice) if n.kind == "error"]
            assert errors and "stayed locked" in errors[-1]
            assert app.prompt.text == "typed while another writer holds the lock"
            holder.execute("ROLLBACK")
            await send(pilot, app, app.prompt.text)  # sent again once the lock is gone
            assert entries(app, AssistantEntry)[-1].text == "never asked"
    finally:
        holder.close()
        await session.aclose()


async def test_a_message_waits_for_another_zephs_turn_and_escape_gives_it_back(fake_server, model, workspace):
    """Another zeph runs a turn on the session: the app says it waits, sends when it ends; Esc while it
    waits puts the message back in the input box and stores nothing."""
    from zeph_cli.store.turn_lock import TurnLock, lock_path
    import os

    model.say("first answer")
    model.say("answer after the wait")
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "first message")
            session_id = session.conversation.id
            other = TurnLock(lock_path(Path(os.environ["ZEPH_HOME"]) / "zeph.db", session_id))
            assert other.try_acquire()  # another zeph's turn on this session
            await send(pilot, app, "typed while the other turn runs", wait=False)
            for _ in range(100):
                await pilot.pause(0.05)
                if "waiting for another zeph" in app.status.badge:
                    break
            assert f"waiting for another zeph's turn on session {session_id}" in app.status.badge
            await pilot.press("escape")
            await settle(pilot, app)
            assert app.prompt.text == "typed while the other turn runs"
            assert [r.message.content for r in session.store.history(session_id)] == ["first message", "first answer"]
            await send(pilot, app, app.prompt.text, wait=False)
            await pilot.pause(0.3)
            assert app.busy  # still waiting
            other.release()
            await settle(pilot, app)
            assert app.status.badge == ""
            assert entries(app, AssistantEntry)[-1].text == "answer after the wait"
            assert [r.message.content for r in session.store.history(session_id)][-2:] == [
                "typed while the other turn runs", "answer after the wait"]
    finally:
        await session.aclose()


async def test_clear_while_another_zeph_runs_a_turn_on_the_session_hides_nothing_and_says_why(
    fake_server, model, workspace
):
    from zeph_cli.store.turn_lock import TurnLock, lock_path
    import os

    model.say("an answer")
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "a message")
            other = TurnLock(lock_path(Path(os.environ["ZEPH_HOME"]) / "zeph.db", session.conversation.id))
            assert other.try_acquire()
            await send(pilot, app, "/clear")
            errors = [n.text for n in entries(app, Notice) if n.kind == "error"]
            assert errors and "another zeph is running a turn on session" in errors[-1]
            assert all(r.agent_visible for r in session.store.history(session.conversation.id))
            other.release()
            await send(pilot, app, "/clear")
            assert not any(r.agent_visible for r in session.store.history(session.conversation.id))
    finally:
        await session.aclose()
