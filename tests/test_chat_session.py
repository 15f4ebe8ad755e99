"""ChatSession, the TUI's service object, against the fake OpenAI-compatible server and a real database."""

from __future__ import annotations

import json

import os
from pathlib import Path

import pytest

from zeph_cli.agent.chat_session import (
    AssistantItem,
    ChatSession,
    DividerItem,
    ToolItem,
    UserItem,
    build_transcript,
)
from zeph_cli.config import load_config
from zeph_cli.errors import AuthenticationError, ConfigError, NotFound, UsageError, ZephError
from zeph_cli.agent.events import CompactionFinished, TurnFinished, TurnStarted
from zeph_cli.messages import Message, ToolCallPart, ToolResultPart
from zeph_cli.paths import database_path
from zeph_cli.store.export import conversation_markdown
from zeph_cli.store import CompactionStore, ConversationStore, StoredMessage, open_database
from zeph_cli.tools.permissions import approve_all
from tests.scripted_model import CHAT_PATH, ScriptedModel

OPENED: list[ChatSession] = []


@pytest.fixture(autouse=True)
async def close_sessions():
    yield
    while OPENED:
        await OPENED.pop().aclose()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    lines = [f"line {i}: the quick brown fox jumps over the lazy dog" for i in range(40)]
    (root / "notes.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.fixture
def model(fake_server) -> ScriptedModel:
    scripted = ScriptedModel()
    fake_server.respond_with(scripted)
    return scripted


@pytest.fixture
def env(compatible) -> dict[str, str]:
    return {**os.environ, **compatible}


async def open_session(env: dict[str, str], workspace: Path, **options) -> ChatSession:
    session = await ChatSession.open(load_config(env=env), env=env, cwd=workspace, approver=approve_all, **options)
    OPENED.append(session)
    return session


async def turn(session: ChatSession, prompt: str, **options) -> list:
    return [event async for event in session.run(prompt, **options)]


def chat_requests(fake_server) -> list[dict]:
    return [r.json for r in fake_server.requests_to(CHAT_PATH) if r.json.get("stream")]


def non_system(body: dict) -> list[tuple[str, str]]:
    return [(m["role"], m.get("content") or "") for m in body["messages"] if m["role"] != "system"]


def system_text(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")


def long_reply(i: int) -> str:
    return f"Answer {i}: " + " ".join(f"point {i}.{k} is settled and written down" for k in range(25))


# ---- opening ------------------------------------------------------------------------------


async def test_a_new_session_starts_on_the_first_prompt_titled_from_it(model, env, workspace):
    session = await open_session(env, workspace)
    assert session.conversation is None and session.transcript() == []
    header = session.header()
    assert (header.provider, header.model, header.mode, header.title) == ("compatible", "gpt-4o", "agent", "")

    model.say("Hello back.")
    events = await turn(session, "Hello there, what is in this folder?")
    assert isinstance(events[0], TurnStarted) and isinstance(events[-1], TurnFinished)
    assert session.conversation is not None
    assert session.header().title == "Hello there, what is in this folder?"
    items = session.transcript()
    assert [(type(i), i.text) for i in items] == [
        (UserItem, "Hello there, what is in this folder?"), (AssistantItem, "Hello back.")]
    assert items[1].model == "gpt-4o" and not items[1].partial


async def test_continue_resumes_the_latest_session_and_an_id_resumes_that_one(model, env, workspace):
    with pytest.raises(NotFound, match="no previous session to continue"):
        await open_session(env, workspace, continue_last=True)
    first = await open_session(env, workspace)
    model.say("one")
    await turn(first, "first session")
    first.new()
    model.say("two")
    await turn(first, "second session")
    second_id = first.conversation.id
    first_id = second_id - 1

    latest = await open_session(env, workspace, continue_last=True)
    assert latest.conversation.id == second_id
    assert [i.text for i in latest.transcript()] == ["second session", "two"]
    by_id = await open_session(env, workspace, session_id=first_id)
    assert by_id.conversation.id == first_id and by_id.header().title == "first session"
    with pytest.raises(NotFound, match="no session with id 999"):
        await open_session(env, workspace, session_id=999)
    with pytest.raises(UsageError, match="not both"):
        await open_session(env, workspace, session_id=first_id, continue_last=True)


async def test_open_reports_provider_problems_as_one_line_errors(env, workspace):
    with pytest.raises(ConfigError, match="unknown provider 'nowhere'"):
        await open_session({**env, "ZEPH_LLM_PROVIDER": "nowhere"}, workspace)
    with pytest.raises(AuthenticationError, match="OPENAI_API_KEY"):
        await open_session({**env, "ZEPH_LLM_PROVIDER": "openai"}, workspace)
    with pytest.raises(UsageError, match="unknown mode 'chaos'"):
        await open_session(env, workspace, mode="chaos")
    assert (await open_session(env, workspace, mode="plan")).header().mode == "plan"


# ---- the transcript ---------------------------------------------------------------------------


async def test_a_tool_call_is_shown_with_its_result(model, env, workspace):
    session = await open_session(env, workspace)
    model.call(("call_read1", "read_file", {"path": "notes.txt"}))
    model.say("The notes have 40 lines.")
    await turn(session, "how long are my notes?")
    items = session.transcript()
    assert [i.kind for i in items] == ["user", "tool", "assistant"]
    tool = items[1]
    assert isinstance(tool, ToolItem)
    assert (tool.name, tool.arguments, tool.call_id) == ("read_file", {"path": "notes.txt"}, "call_read1")
    assert "line 39: the quick brown fox" in tool.result and not tool.is_error
    assert tool.decision == "auto" and tool.summary and tool.duration_ms is not None
    assert tool.result_message_id > tool.message_id
    assert items[2].text == "The notes have 40 lines."


def stored(message_id: int, message: Message, **metadata) -> StoredMessage:
    return StoredMessage(message_id, 1, message, f"t{message_id}", metadata=metadata)


def test_a_reused_call_id_is_paired_with_the_result_stored_after_each_call():
    call = lambda n: Message("assistant", (ToolCallPart("call_x", "bash", {"command": f"echo {n}"}),))  # noqa: E731
    result = lambda n: Message("tool", (ToolResultPart("call_x", f"out {n}", "bash"),))  # noqa: E731
    rows = [stored(1, call(1)), stored(2, result(1), decision="allowed", exit_code=0),
            stored(3, call(2)), stored(4, result(2), decision="denied")]
    items = build_transcript(rows, lambda m: 0)
    assert [(i.arguments["command"], i.result, i.decision, i.exit_code) for i in items] == [
        ("echo 1", "out 1", "allowed", 0), ("echo 2", "out 2", "denied", None)]


def test_a_reply_stopped_by_the_length_limit_is_marked_cut():
    rows = [stored(1, Message.user("count")), stored(2, Message.assistant("one, two, thr"), stop_reason="length"),
            stored(3, Message.user("again")), stored(4, Message.assistant("done."), stop_reason="stop")]
    items = build_transcript(rows, lambda m: 0)
    assert [(i.kind, getattr(i, "cut", None)) for i in items] == [
        ("user", None), ("assistant", True), ("user", None), ("assistant", False)]


async def test_compact_leaves_a_divider_after_the_compacted_messages(model, env, workspace):
    session = await open_session(env, workspace)
    assert [e async for e in session.compact()] == []  # nothing to compact before the first prompt
    for i in range(4):
        model.say(long_reply(i))
        await turn(session, f"question {i}")
    events = [e async for e in session.compact()]
    (finished,) = [e for e in events if isinstance(e, CompactionFinished) and e.result.kind == "manual"]
    assert finished.result.messages_compacted == 4  # the last 4 are the preserved tail

    rows = session.store.history(session.conversation.id)
    (summary,) = [r for r in rows if not r.user_visible]
    originals = [r for r in rows if r.id in summary.metadata["summary_of"]]
    saved = sum(r.token_count for r in originals) - summary.token_count
    assert saved > 0
    items = session.transcript()
    assert [i.kind for i in items] == ["user", "assistant", "user", "assistant", "divider",
                                       "user", "assistant", "user", "assistant"]
    divider = items[4]
    assert isinstance(divider, DividerItem) and divider.reason == "compaction"
    assert divider.text == f"4 messages compacted · ~{saved:,} tokens saved"
    assert (divider.messages, divider.tokens_saved, divider.message_id) == (4, saved, summary.id)


# ---- clearing the context ---------------------------------------------------------------------


async def test_clear_hides_the_history_from_the_agent_but_not_from_the_user(model, fake_server, env, workspace):
    session = await open_session(env, workspace)
    assert session.clear() == 0  # no session yet
    model.say("Paris.")
    await turn(session, "capital of France?")
    model.say("Rome.")
    await turn(session, "capital of Italy?")
    session_id = session.conversation.id

    assert session.clear() == 4
    assert session.clear() == 0  # nothing left to hide: no second marker
    assert session.context_report().history_messages == 0
    model.say("Fresh start.")
    await turn(session, "what did I ask before?")
    sent = chat_requests(fake_server)[-1]
    assert non_system(sent) == [("user", "what did I ask before?")]
    assert "France" not in str(sent["messages"]) and "Rome" not in str(sent["messages"])

    assert session.conversation.id == session_id
    items = session.transcript()
    assert [i.kind for i in items] == ["user", "assistant", "user", "assistant", "divider", "user", "assistant"]
    assert (items[4].reason, items[4].text) == ("clear", "context cleared")
    exported = session.export().read_text(encoding="utf-8")
    assert exported.index("capital of Italy?") < exported.index("Context cleared") < exported.index("what did I ask before?")


def test_clear_agent_context_hides_every_agent_visible_row_in_one_step(tmp_path):
    store = ConversationStore(open_database(tmp_path / "zeph.db"))
    compaction = CompactionStore(store.db)
    try:
        conversation = store.create_conversation(provider="p", model="m", cwd="/", title="t")
        other = store.create_conversation(provider="p", model="m", cwd="/", title="other")
        ids = [store.add_message(conversation.id, Message.user(f"q{i}")).id for i in range(3)]
        store.add_message(other.id, Message.user("untouched"))
        compaction.replace_with_summary(conversation.id, ids[:2], Message.context("summary"))
        with pytest.raises(NotFound, match="no session with id 999"):
            compaction.clear_agent_context(999)

        assert compaction.clear_agent_context(conversation.id) == 2  # the summary and q2
        rows = store.history(conversation.id)
        assert not any(r.agent_visible for r in rows) and all(r.compacted_at for r in rows[:-1])
        assert [(r.message.content, r.user_visible) for r in rows] == [
            ("q0", True), ("summary", False), ("q1", True), ("q2", True), ("context cleared", True)]
        assert rows[-1].role == "context" and rows[-1].metadata == {"marker": "clear"}
        assert [r.agent_visible for r in store.history(other.id)] == [True]
        assert compaction.clear_agent_context(conversation.id) == 0
        assert len(store.history(conversation.id)) == 5
    finally:
        store.close()
    reopened = ConversationStore(open_database(tmp_path / "zeph.db"))
    try:
        assert reopened.history(conversation.id, agent_visible=True) == []
        markdown = conversation_markdown(conversation, reopened.history(conversation.id, user_visible=True))
        assert "## Context" not in markdown and markdown.rstrip().endswith("*Context cleared: the messages above are no longer sent to the model.*")
    finally:
        reopened.close()


# ---- sessions ---------------------------------------------------------------------------------


async def test_sessions_lists_recent_ones_and_searches_titles_and_messages(model, env, workspace):
    session = await open_session(env, workspace)
    for prompt, reply in (("alpha project setup", "done"), ("beta deployment", "the zebra crossing is ready"),
                          ("gamma notes", "nothing about alphabets")):
        session.new()
        model.say(reply)
        await turn(session, prompt)
    listed = session.sessions()
    assert [s.title for s in listed] == ["gamma notes", "beta deployment", "alpha project setup"]
    assert all(s.message_count == 2 and s.provider == "compatible" and s.model == "gpt-4o" for s in listed)
    assert [s.title for s in session.sessions(limit=1)] == ["gamma notes"]

    assert [s.title for s in session.sessions("alp")] == ["alpha project setup"]  # part of a title word
    (hit,) = session.sessions("zebra")
    assert hit.title == "beta deployment" and "[zebra]" in hit.snippet
    assert session.sessions("nothing-like-this") == []


async def test_switch_changes_the_current_session(model, fake_server, env, workspace):
    session = await open_session(env, workspace)
    model.say("first reply")
    await turn(session, "first topic")
    first_id = session.conversation.id
    session.new()
    assert session.conversation is None
    model.say("second reply")
    await turn(session, "second topic")
    with pytest.raises(NotFound, match="no session with id 999"):
        session.switch(999)
    assert session.header().title == "second topic"

    session.switch(first_id)
    assert session.header().title == "first topic"
    model.say("back again")
    await turn(session, "continuing the first")
    assert non_system(chat_requests(fake_server)[-1]) == [
        ("user", "first topic"), ("assistant", "first reply"), ("user", "continuing the first")]
    assert [i.text for i in session.transcript()][-2:] == ["continuing the first", "back again"]


# ---- model, provider, mode, session prompt ------------------------------------------------------


async def test_set_model_changes_the_model_on_the_wire_and_keeps_the_session(model, fake_server, env, workspace):
    session = await open_session(env, workspace)
    model.say("one")
    await turn(session, "hi")
    conversation_id = session.conversation.id
    assert await session.set_model("gpt-4o-mini") == []
    assert session.header().model == "gpt-4o-mini"
    model.say("two")
    await turn(session, "again")
    assert [r["model"] for r in chat_requests(fake_server)] == ["gpt-4o", "gpt-4o-mini"]
    assert session.conversation.id == conversation_id
    assert non_system(chat_requests(fake_server)[-1])[:2] == [("user", "hi"), ("assistant", "one")]
    with pytest.raises(UsageError, match="which model"):
        await session.set_model("  ")


async def test_a_failed_provider_switch_keeps_the_working_provider(model, fake_server, env, workspace):
    session = await open_session(env, workspace)
    provider = session.provider
    with pytest.raises(ConfigError, match="unknown provider 'nope'"):
        await session.set_provider("nope")
    with pytest.raises(AuthenticationError, match="no API key for openai: set OPENAI_API_KEY"):
        await session.set_provider("openai")
    assert session.provider is provider and session.header().provider == "compatible"
    model.say("still here")
    events = await turn(session, "are you there?")
    assert events[-1].text == "still here" and chat_requests(fake_server)[-1]["model"] == "gpt-4o"


async def test_set_provider_uses_that_providers_own_model(model, fake_server, env, workspace, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(
        f'[[llm.providers]]\nname = "second"\ntype = "compatible"\nbase_url = "{fake_server.url}/v1"\nmodel = "second-model"\n',
        encoding="utf-8",
    )
    env = {**env, "ZEPH_CONFIG": str(config)}
    session = await open_session(env, workspace)
    await session.set_model("gpt-4o-mini")
    await session.set_provider("second")
    assert (session.header().provider, session.header().model) == ("second", "second-model")
    model.say("from the second")
    await turn(session, "hello")
    assert chat_requests(fake_server)[-1]["model"] == "second-model"


async def test_set_mode_checks_the_name(env, workspace):
    session = await open_session(env, workspace)
    session.set_mode("ask")
    assert session.header().mode == "ask"
    with pytest.raises(UsageError, match="unknown mode 'write'"):
        session.set_mode("write")
    assert session.header().mode == "ask"


async def test_set_system_reaches_the_next_request_and_empty_text_removes_it(model, fake_server, env, workspace):
    session = await open_session(env, workspace)
    session.set_system("Always answer in French.")
    assert session.context_report().block("topic prompt").tokens > 0  # before the first prompt too
    model.say("Bonjour.")
    await turn(session, "hello")
    assert "Always answer in French." in system_text(chat_requests(fake_server)[-1])
    assert session.conversation.metadata["system"] == "Always answer in French."

    session.set_system("Topic: databases.")
    model.say("Indexes.")
    await turn(session, "what matters?")
    sent = system_text(chat_requests(fake_server)[-1])
    assert "Topic: databases." in sent and "French" not in sent

    session.set_system("")
    model.say("ok")
    await turn(session, "and now?")
    sent = system_text(chat_requests(fake_server)[-1])
    assert "Topic: databases." not in sent and "system" not in session.conversation.metadata


# ---- export and close ---------------------------------------------------------------------------


async def test_export_writes_markdown_and_refuses_to_overwrite(model, env, workspace):
    session = await open_session(env, workspace)
    with pytest.raises(ZephError, match="nothing to export"):
        session.export()
    model.say("The answer is 42.")
    await turn(session, "what is the answer?")
    path = session.export()
    assert path == workspace / f"zeph-session-{session.conversation.id}.md"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# what is the answer?") and "The answer is 42." in text

    path.write_text("my own notes", encoding="utf-8")
    with pytest.raises(ZephError, match=f"{path.name} already exists"):
        session.export()
    assert path.read_text(encoding="utf-8") == "my own notes"
    assert "The answer is 42." in session.export(overwrite=True).read_text(encoding="utf-8")

    (workspace / "notes").mkdir()
    named = session.export(Path("notes/out.md"))  # relative to the session's directory
    assert named == workspace / "notes" / "out.md" and named.is_file()
    with pytest.raises(ZephError, match="cannot write"):
        session.export(Path("missing-dir/out.md"))


async def test_export_as_json_keeps_every_stored_message(model, env, workspace):
    session = await open_session(env, workspace)
    model.say("The answer is 42.")
    await turn(session, "what is the answer?")
    path = session.export(Path("json"))
    assert path == workspace / f"zeph-session-{session.conversation.id}.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    contents = [m["content"] for m in document["messages"]]
    assert "what is the answer?" in contents and "The answer is 42." in contents
    named = session.export(Path("out.JSON"))
    assert json.loads(named.read_text(encoding="utf-8")) == document


async def test_the_guidelines_updater_wakes_in_the_background_and_stops_with_the_session(model, env, workspace):
    import asyncio

    from zeph_cli.context.compaction.guidelines import FailurePair
    from zeph_cli.store.guidelines import GuidelinesStore

    learning = {
        **env,
        "ZEPH_MEMORY_COMPRESSION_GUIDELINES_ENABLED": "true",
        "ZEPH_MEMORY_COMPRESSION_GUIDELINES_UPDATE_THRESHOLD": "2",
        "ZEPH_MEMORY_COMPRESSION_GUIDELINES_UPDATE_INTERVAL_SECS": "1",
    }
    session = await open_session(learning, workspace)
    store = GuidelinesStore(session.store.db)
    store.add_failure(None, FailurePair("[compaction summary]\nthe gist", 'uncertainty "I don\'t recall"'))
    await asyncio.sleep(1.3)
    assert model.count("guidelines") == 0 and store.active() is None  # one loss waits: below the threshold
    store.add_failure(None, FailurePair("[compaction summary]\nthe gist", 'uncertainty "I\'m not sure"'))
    for _ in range(300):  # 30 s at most: a bound on a hang
        if store.active() is not None:
            break
        await asyncio.sleep(0.1)
    assert store.active().text.startswith("1. Keep every FACT- code verbatim.")
    assert model.count("guidelines") == 1 and store.unprocessed_count() == 0
    await session.aclose()
    assert session._learning is not None and session._learning.done()


async def test_aclose_closes_the_store_once(env, workspace):
    session = await open_session(env, workspace)
    await session.aclose()
    await session.aclose()
    with pytest.raises(Exception):
        session.store.list_conversations()
    assert database_path(env).is_file()


# ---- session summaries with the embedded model --------------------------------------------------


async def test_with_the_embedded_model_summaries_are_made_by_a_worker_and_the_model_keeps_the_conversation(
    workspace, monkeypatch
):
    """The embedded model holds one sequence: a summary made in the chat app's process would replace the
    conversation there, and the next turn would read the whole history again."""
    import asyncio

    import zeph_cli.features.session_memory.worker as worker
    from zeph_cli.features.session_memory.store import DigestStore

    started = []
    real_spawn = worker.spawn
    monkeypatch.setattr(worker, "spawn", lambda *args, **kwargs: started.append(real_spawn(*args, **kwargs)))
    env = {**os.environ, "ZEPH_LLM_PROVIDER": "local", "ZEPH_LLM_MAX_TOKENS": "8",
           "ZEPH_MEMORY_CROSS_SESSION_ENABLED": "true", "ZEPH_MEMORY_CROSS_SESSION_MIN_USER_TURNS": "1"}
    session = await open_session(env, workspace)
    await turn(session, "Name a colour.")
    llama = session.agent.provider._llama
    held = llama.input_ids[: llama.n_tokens].tolist()
    assert len(started) == 1 and started[0] is not None
    try:
        code = await asyncio.to_thread(started[0].wait, 120)
    finally:
        if started[0].poll() is None:
            started[0].kill()
    log = database_path(env).parent / "zeph.log"
    assert code == 0, log.read_text() if log.exists() else "no log"
    assert DigestStore(session.store.db).get(session.conversation.id) is not None  # the worker made its attempt
    while session.agent.session_memory.running:  # (a job in this process would have changed the model)
        await asyncio.sleep(0.1)
    assert llama.input_ids[: llama.n_tokens].tolist() == held  # the conversation is still in the model


async def test_with_a_hosted_model_summaries_are_made_in_the_chat_app(model, env, workspace):
    session = await open_session(env, workspace)
    assert not session.agent.session_memory.detached


@pytest.mark.parametrize("main_kind, summary, on_cpu", [
    ("local", None, True),
    ("compatible", None, False),
    ("compatible", {"kind": "local", "model": "small.gguf"}, True),
    ("local", {"kind": "ollama", "model": "m"}, False),
    ("local", {"kind": "local", "model": "small.gguf", "extra": {"device": "cuda"}}, False),  # a GPU: in the app
    ("local", {"kind": "local", "model": "small.gguf", "extra": {"device": "cpu"}}, True),
])
def test_summaries_go_to_a_worker_only_for_the_embedded_model_on_the_cpu(main_kind, summary, on_cpu):
    from types import SimpleNamespace

    from zeph_cli.agent.chat_session import _summaries_by_worker
    from zeph_cli.providers.pool import ProviderPool
    from zeph_cli.providers.settings import ProviderSettings
    from zeph_cli.agent.side_jobs import SideJobs

    main = SimpleNamespace(kind=main_kind, settings=ProviderSettings(kind=main_kind, name=main_kind, model="m"))
    pool = ProviderPool(main, {"summary": ProviderSettings(name="s", **summary)} if summary else {})
    agent = SimpleNamespace(side_jobs=SideJobs(pool, main, lambda: None, 1024, None),
                            session_memory=SimpleNamespace(detached=None))
    _summaries_by_worker(agent)
    assert agent.session_memory.detached is on_cpu


async def test_a_file_attached_while_the_turn_waits_for_the_session_stays_for_the_next_message(
    model, fake_server, env, workspace
):
    from zeph_cli.agent.events import TurnQueued
    from zeph_cli.store.turn_lock import TurnLock, lock_path

    (workspace / "later.txt").write_text("attached while waiting\n", encoding="utf-8")
    session = await open_session(env, workspace)
    model.say("first answer")
    model.say("second answer")
    model.say("third answer")
    await turn(session, "first message")
    other = TurnLock(lock_path(database_path(env), session.conversation.id))
    assert other.try_acquire()  # another zeph runs a turn on the session
    session.stage("notes.txt")
    events = session.run("second message")
    assert isinstance(await anext(events), TurnQueued)
    session.stage("later.txt")  # /attach while the turn waits
    other.release()
    rest = [event async for event in events]
    assert isinstance(rest[0], TurnStarted) and isinstance(rest[-1], TurnFinished)
    sent = non_system(chat_requests(fake_server)[-1])[-1][1]
    assert "line 0: the quick brown fox" in sent and "attached while waiting" not in sent
    assert list(session.staged) == ["later.txt"]  # not sent: kept for the next message
    await turn(session, "third message")
    sent = non_system(chat_requests(fake_server)[-1])[-1][1]
    assert "attached while waiting" in sent and "line 0: the quick" not in sent and not session.staged
