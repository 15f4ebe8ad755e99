"""The turn loop against a wire-level fake server: persistence order, budget, calibration."""

from __future__ import annotations

from contextlib import aclosing
from pathlib import Path


from zeph_cli.agent import Agent, AgentWarning, ContextPrepared, ReplyDelta, TurnFailed, TurnFinished, TurnStarted
from zeph_cli.config import load_config
from zeph_cli.paths import database_path
from zeph_cli.providers import create_provider, resolve_settings
from zeph_cli.store import ConversationStore, open_database
from tests.agent_helpers import AGENTS, close_agents  # noqa: F401  (autouse fixture)
from tests.fakes import openai_wire




def make_agent(fake_server, tmp_path: Path, **env: str) -> Agent:
    environ = {"ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": fake_server.url + "/v1",
               "ZEPH_LLM_MODEL": "gpt-4o", "ZEPH_LLM_MAX_RETRIES": "0", **env}
    config = load_config(env=environ).config
    provider = create_provider(resolve_settings(config, environ))
    store = ConversationStore(open_database(database_path()))
    agent = Agent(config=config, store=store, provider=provider, cwd=tmp_path)
    AGENTS.append(agent)
    return agent


async def collect(agent: Agent, conversation, prompt: str):
    return [event async for event in agent.run_turn(conversation, prompt)]


async def test_a_turn_persists_prompt_then_reply(fake_server, tmp_path):
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Hi ", "there"])))
    agent = make_agent(fake_server, tmp_path)
    conversation = agent.new_conversation("hello")
    events = await collect(agent, conversation, "hello")
    kinds = [type(e) for e in events]
    assert kinds[0] is TurnStarted and kinds[1] is ContextPrepared and kinds[-1] is TurnFinished
    assert "".join(e.text for e in events if isinstance(e, ReplyDelta)) == "Hi there"
    rows = agent.store.history(conversation.id)
    assert [(r.role, r.message.content) for r in rows] == [("user", "hello"), ("assistant", "Hi there")]
    assert rows[1].metadata["usage"]["input_tokens"] == 12 and rows[1].metadata["stop_reason"] == "stop"
    assert all(r.token_count and r.token_counter == "cl100k_base" for r in rows)


async def test_a_caller_that_stops_reading_mid_reply_keeps_what_arrived_marked_partial(fake_server, tmp_path):
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Once ", "upon ", "a ", "time"])))
    agent = make_agent(fake_server, tmp_path)
    conversation = agent.new_conversation("story")
    async with aclosing(agent.run_turn(conversation, "story")) as events:
        async for event in events:
            if isinstance(event, ReplyDelta) and event.text == "upon ":
                break  # as `zeph ask` does when its reader closes the pipe
    rows = agent.store.history(conversation.id)
    assert [(r.role, r.message.content) for r in rows] == [("user", "story"), ("assistant", "Once upon ")]
    assert rows[1].metadata["partial"] is True and rows[1].metadata["error"] == "stopped"


async def test_the_prompt_is_stored_before_the_provider_answers(fake_server, tmp_path):
    fake_server.queue(openai_wire.server_error())
    agent = make_agent(fake_server, tmp_path)
    conversation = agent.new_conversation("q")
    events = await collect(agent, conversation, "a question that must survive")
    assert isinstance(events[-1], TurnFailed)
    assert [r.message.content for r in agent.store.history(conversation.id)] == ["a question that must survive"]


async def test_history_is_sent_in_order_on_the_next_turn(fake_server, tmp_path):
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["One."])))
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Two."])))
    agent = make_agent(fake_server, tmp_path)
    conversation = agent.new_conversation("first")
    await collect(agent, conversation, "first")
    await collect(agent, conversation, "second")
    sent = fake_server.requests_to("/v1/chat/completions")[1].json["messages"]
    assert [(m["role"], m["content"]) for m in sent if m["role"] != "system"] == [
        ("user", "first"), ("assistant", "One."), ("user", "second")]


async def test_auto_budget_is_the_model_window(fake_server, tmp_path):
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["ok"])))
    agent = make_agent(fake_server, tmp_path)
    events = await collect(agent, agent.new_conversation("x"), "x")
    report = next(e.report for e in events if isinstance(e, ContextPrepared))
    assert report.budget == 128_000 and report.window == 128_000  # gpt-4o's window; 0 = auto
    assert report.reserved_for_response == 25_600


async def test_small_budget_trims_what_is_sent_not_what_is_stored(fake_server, tmp_path):
    # One compaction, then none for the session (its cooldown): trimming keeps the requests in budget.
    agent = make_agent(fake_server, tmp_path, ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS="1500",
                       ZEPH_MEMORY_COMPACTION_COOLDOWN_TURNS="100")
    conversation = agent.new_conversation("long")
    turn = [0]

    def answer(request):
        # Summary side jobs (non-streamed) fail: compaction falls back to its metadata summary.
        # No usage is reported: nothing to calibrate, counts stay as estimated.
        if not request.json.get("stream"):
            return openai_wire.server_error()
        return openai_wire.stream_response(openai_wire.text_chunks([f"reply {turn[0]} " + "word " * 120], usage=None))

    fake_server.respond_with(answer)
    warnings, notes = [], []
    for i in range(8):
        turn[0] = i
        events = await collect(agent, conversation, f"question {i} " + "detail " * 120)
        assert any(isinstance(e, TurnFinished) for e in events)
        warnings += [e.text for e in events if isinstance(e, AgentWarning)]
        notes += [note for e in events if isinstance(e, ContextPrepared) for note in e.report.notes]
        capacity = next(e.report.capacity for e in events if isinstance(e, ContextPrepared))
        assert all(e.report.used_tokens <= capacity for e in events if isinstance(e, ContextPrepared))
    assert any("not sent" in note for note in notes)  # in the report (zeph context, /context) ...
    assert not any("not sent" in w for w in warnings)  # ... not said on every turn
    sent = fake_server.requests_to("/v1/chat/completions")[-1].json["messages"]
    assert sent[-1]["content"].startswith("question 7")
    assert not any(m["content"].startswith("question 0") for m in sent)
    assert len(agent.store.history(conversation.id, user_visible=True)) == 16  # all kept for the user


async def test_calibration_learns_from_reported_usage(fake_server, tmp_path):
    agent = make_agent(fake_server, tmp_path)
    conversation = agent.new_conversation("c")
    await agent.start()
    for _ in range(2):
        # the server reports about twice as many prompt tokens as we estimate
        _, _, raw = agent.context_for(conversation)
        fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["ok"], usage=(2 * raw + 20, 1, 0))))
        await collect(agent, conversation, "calibrate me please")
    calibration = agent.store.calibration("compatible", "gpt-4o")
    assert calibration.samples == 2 and calibration.factor > 1.5
    _, report, raw = agent.context_for(conversation)
    history = report.block("history")
    assert history is not None and history.tokens > 1.5 * (raw - sum(b.tokens for b in report.blocks if b.name != "history"))


async def test_empty_reply_warns_and_stores_nothing(fake_server, tmp_path):
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks([])))
    agent = make_agent(fake_server, tmp_path)
    conversation = agent.new_conversation("e")
    events = await collect(agent, conversation, "e")
    assert any(isinstance(e, AgentWarning) and "empty reply" in e.text for e in events)
    assert [r.role for r in agent.store.history(conversation.id)] == ["user"]



async def test_history_counts_come_from_the_per_message_cache(fake_server, tmp_path):
    """Stored counts are reused turn after turn: a cached count is what the report shows."""
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["short"], usage=None)))
    agent = make_agent(fake_server, tmp_path)
    conversation = agent.new_conversation("c")
    await collect(agent, conversation, "short question")
    _, before, _ = agent.context_for(conversation)
    first = agent.store.history(conversation.id)[0]
    agent.store.set_token_counts([(first.id, first.token_count + 5000, first.token_counter)])
    _, after, raw = agent.context_for(conversation)
    assert after.block("history").tokens == before.block("history").tokens + 5000
    assert raw == after.raw_tokens and raw >= 5000


async def test_no_room_for_tools_is_said_once_per_session_not_once_per_process(fake_server, tmp_path):
    # `zeph ask -c` starts a new process every turn: the warning must not repeat on each.
    replies = lambda request: openai_wire.stream_response(openai_wire.text_chunks(["ok"], usage=None))  # noqa: E731
    fake_server.respond_with(replies)
    first = make_agent(fake_server, tmp_path, ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS="2000")
    conversation = first.new_conversation("small window")
    said = [e.text for e in await collect(first, conversation, "hello") if isinstance(e, AgentWarning)]
    assert len(said) == 1 and said[0].startswith("running without tools: their schemas take")
    assert "more than a quarter of the 1,600-token prompt budget" in said[0]
    assert "tools" not in fake_server.requests_to("/v1/chat/completions")[-1].json
    second = make_agent(fake_server, tmp_path, ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS="2000")
    again = await collect(second, second.store.get_conversation(conversation.id), "and again")
    assert not [e for e in again if isinstance(e, AgentWarning)]
    third = make_agent(fake_server, tmp_path, ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS="2000")
    other = third.new_conversation("another session")
    assert [e for e in await collect(third, other, "hi") if isinstance(e, AgentWarning)]  # a new session hears it
