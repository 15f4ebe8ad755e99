"""The tool loop end to end: real SDK clients against the wire fakes of all three APIs.

Each wire API gets the same story: the model asks for a tool, zeph runs it (or
refuses it), sends the result back in that API's own shape, and the model
answers. Cancellation mid-tool leaves a history every provider accepts.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from zeph_cli.agent import (
    Agent,
    AgentWarning,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
)
from zeph_cli.config import load_config
from zeph_cli.paths import database_path
from zeph_cli.providers import create_provider, resolve_settings
from zeph_cli.store import ConversationStore, ToolLog, open_database
from zeph_cli.tools.permissions import ApprovalDecision, approve_all
from tests.agent_helpers import AGENTS, close_agents  # noqa: F401  (autouse fixture)
from tests.fakes import anthropic_wire, ollama_wire, openai_wire

# ---- one adapter per wire API ------------------------------------------------------


@dataclass
class Wire:
    name: str
    path: str
    env: Callable[[str], dict[str, str]]
    tool_reply: Callable[[list[tuple[str, str, dict[str, Any]]]], Any]
    text_reply: Callable[[str], Any]
    # The tool results (call id or tool name, content) a recorded request sends back.
    sent_results: Callable[[dict[str, Any]], list[tuple[str, str]]]
    sent_tool_names: Callable[[dict[str, Any]], list[str]]


def _openai_results(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["tool_call_id"], m["content"]) for m in body["messages"] if m["role"] == "tool"]


def _anthropic_results(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (block["tool_use_id"], block["content"])
        for message in body["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_result"
    ]


def _ollama_results(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m.get("tool_name", ""), m["content"]) for m in body["messages"] if m["role"] == "tool"]


OPENAI = Wire(
    "compatible",
    "/v1/chat/completions",
    lambda url: {"ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": url + "/v1", "ZEPH_LLM_MODEL": "gpt-4o"},
    lambda calls: openai_wire.stream_response(
        openai_wire.tool_call_chunks([(cid, name, [json.dumps(args)]) for cid, name, args in calls])
    ),
    lambda text: openai_wire.stream_response(openai_wire.text_chunks([text])),
    _openai_results,
    lambda body: [t["function"]["name"] for t in body.get("tools", [])],
)
ANTHROPIC = Wire(
    "anthropic",
    "/v1/messages",
    lambda url: {"ZEPH_LLM_PROVIDER": "anthropic", "ZEPH_LLM_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-test"},
    lambda calls: anthropic_wire.sse_response(
        anthropic_wire.tool_events([(cid, name, [json.dumps(args)]) for cid, name, args in calls])
    ),
    lambda text: anthropic_wire.sse_response(anthropic_wire.text_events([text])),
    _anthropic_results,
    lambda body: [t["name"] for t in body.get("tools", [])],
)
OLLAMA = Wire(
    "ollama",
    "/api/chat",
    lambda url: {"ZEPH_LLM_PROVIDER": "ollama", "ZEPH_LLM_BASE_URL": url, "ZEPH_LLM_MODEL": ollama_wire.MODEL},
    lambda calls: ollama_wire.chat_stream(
        tool_calls=[ollama_wire.tool_call(name, args, index=i) for i, (_, name, args) in enumerate(calls)]
    ),
    lambda text: ollama_wire.chat_stream(text),
    _ollama_results,
    lambda body: [t["function"]["name"] for t in body.get("tools") or []],
)
WIRES = [OPENAI, ANTHROPIC, OLLAMA]



@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("the answer is 42\n", encoding="utf-8")
    return root


def make_agent(wire: Wire, fake_server, workspace: Path, *, approver=None, mode: str | None = None, **env: str) -> Agent:
    if wire is OLLAMA:
        fake_server.route("/api/show", ollama_wire.show_reply())
    environ = {"ZEPH_LLM_MAX_RETRIES": "0", **wire.env(fake_server.url), **env}
    config = load_config(env=environ).config
    provider = create_provider(resolve_settings(config, environ))
    store = ConversationStore(open_database(database_path()))
    agent = Agent(config=config, store=store, provider=provider, cwd=workspace, approver=approver, mode=mode)
    AGENTS.append(agent)
    return agent


async def run(agent: Agent, conversation, prompt: str) -> list:
    return [event async for event in agent.run_turn(conversation, prompt)]


def roles(agent: Agent, conversation) -> list[str]:
    return [row.role for row in agent.store.history(conversation.id)]


# ---- the loop on every wire API ------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
async def test_tool_call_result_then_final_answer(wire, fake_server, workspace):
    fake_server.queue(wire.tool_reply([("call_read1", "read_file", {"path": "notes.txt"})]), path=wire.path)
    fake_server.queue(wire.text_reply("The file says 42."), path=wire.path)
    agent = make_agent(wire, fake_server, workspace)
    conversation = agent.new_conversation("what does notes.txt say?")
    events = await run(agent, conversation, "what does notes.txt say?")

    started = [e for e in events if isinstance(e, ToolCallStarted)]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [(e.call.name, e.subject) for e in started] == [("read_file", "notes.txt")]
    assert finished[0].decision == "auto" and not finished[0].result.is_error
    assert isinstance(events[-1], TurnFinished) and events[-1].text == "The file says 42."

    first, second = fake_server.requests_to(wire.path)
    assert "read_file" in wire.sent_tool_names(first.json) and "bash" in wire.sent_tool_names(first.json)
    (key, content), = wire.sent_results(second.json)
    assert "the answer is 42" in content
    assert content.startswith('<tool_output tool="read_file" untrusted="true">')
    assert key in ("read_file", finished[0].call.id)
    assert roles(agent, conversation) == ["user", "assistant", "tool", "assistant"]
    stored_call = agent.store.history(conversation.id)[1].message.tool_calls[0]
    assert stored_call.name == "read_file" and stored_call.arguments == {"path": "notes.txt"}


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
async def test_several_calls_in_one_reply_run_in_order(wire, fake_server, workspace):
    (workspace / "a.txt").write_text("alpha\n", encoding="utf-8")
    (workspace / "b.txt").write_text("beta\n", encoding="utf-8")
    calls = [("call_a", "read_file", {"path": "a.txt"}), ("call_b", "read_file", {"path": "b.txt"})]
    fake_server.queue(wire.tool_reply(calls), path=wire.path)
    fake_server.queue(wire.text_reply("alpha and beta"), path=wire.path)
    agent = make_agent(wire, fake_server, workspace)
    conversation = agent.new_conversation("read both")
    events = await run(agent, conversation, "read both")
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [e.call.arguments["path"] for e in finished] == ["a.txt", "b.txt"]
    results = wire.sent_results(fake_server.requests_to(wire.path)[1].json)
    assert ["alpha" in results[0][1], "beta" in results[1][1]] == [True, True]
    assert roles(agent, conversation) == ["user", "assistant", "tool", "tool", "assistant"]


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
async def test_cancellation_mid_tool_leaves_a_valid_history(wire, fake_server, workspace):
    fake_server.queue(
        wire.tool_reply([("call_slow", "bash", {"command": "sleep 30"}), ("call_next", "read_file", {"path": "notes.txt"})]),
        path=wire.path,
    )
    agent = make_agent(wire, fake_server, workspace, approver=approve_all)
    conversation = agent.new_conversation("slow")
    seen: list = []

    async def consume():
        async for event in agent.run_turn(conversation, "run the slow thing"):
            seen.append(event)

    task = asyncio.create_task(consume())
    for _ in range(1500):  # 30 s at most: a bound on a hang
        await asyncio.sleep(0.02)
        if any(isinstance(e, ToolCallStarted) for e in seen):
            break
    await asyncio.sleep(0.2)  # the shell is running now
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    rows = agent.store.history(conversation.id)
    assert [r.role for r in rows] == ["user", "assistant", "tool", "tool"]
    results = [r.message.tool_results[0] for r in rows[2:]]
    call_ids = [c.id for c in rows[1].message.tool_calls]
    assert [r.tool_call_id for r in results] == call_ids
    assert all(r.is_error and "interrupted" in r.content for r in results)
    decisions = [run.decision for run in ToolLog(agent.store.db).runs(conversation.id)]
    assert decisions == ["interrupted", "interrupted"]

    # The next turn sends every call with its result, which each API requires.
    fake_server.queue(wire.text_reply("ok, stopped"), path=wire.path)
    events = await run(agent, conversation, "never mind")
    assert isinstance(events[-1], TurnFinished) and events[-1].text == "ok, stopped"
    sent = wire.sent_results(fake_server.requests_to(wire.path)[-1].json)
    assert len(sent) == 2 and all("interrupted" in content for _, content in sent)


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
async def test_write_tool_without_anyone_to_approve_is_denied_and_the_model_told(wire, fake_server, workspace):
    fake_server.queue(
        wire.tool_reply([("call_w", "write_file", {"path": "new.txt", "content": "x"})]), path=wire.path
    )
    fake_server.queue(wire.text_reply("I could not write it."), path=wire.path)
    agent = make_agent(wire, fake_server, workspace)  # no approver: nobody to ask
    conversation = agent.new_conversation("write")
    events = await run(agent, conversation, "write new.txt")
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished[0].decision == "denied"
    assert not (workspace / "new.txt").exists()
    (_, content), = wire.sent_results(fake_server.requests_to(wire.path)[1].json)
    assert "did not approve" in content
    assert events[-1].text == "I could not write it."


# ---- decisions ------------------------------------------------------------------------


async def test_blocked_command_is_refused_even_when_everything_is_approved(fake_server, workspace):
    fake_server.queue(OPENAI.tool_reply([("call_rm", "bash", {"command": "echo hi && rm -rf ~"})]))
    fake_server.queue(OPENAI.text_reply("refused"))
    asked: list = []

    async def approver(request):
        asked.append(request)
        return ApprovalDecision("yes")

    agent = make_agent(OPENAI, fake_server, workspace, approver=approver)
    conversation = agent.new_conversation("x")
    events = await run(agent, conversation, "clean up")
    finished = [e for e in events if isinstance(e, ToolCallFinished)][0]
    assert finished.decision == "blocked" and finished.result.content.startswith("Blocked:")
    assert asked == []  # never even asked
    run_row, = ToolLog(agent.store.db).runs(conversation.id)
    assert (run_row.tool, run_row.decision, run_row.arguments) == ("bash", "blocked", {"command": "echo hi && rm -rf ~"})


async def test_approval_request_carries_the_command_and_answers_are_recorded(fake_server, workspace):
    fake_server.queue(OPENAI.tool_reply([("call_1", "bash", {"command": "echo one"})]))
    fake_server.queue(OPENAI.tool_reply([("call_2", "bash", {"command": "echo two"})]))
    fake_server.queue(OPENAI.tool_reply([("call_3", "bash", {"command": "echo three"})]))
    fake_server.queue(OPENAI.text_reply("done"))
    answers = iter(["always", "no-such-answer-is-used"])
    asked: list = []

    async def approver(request):
        asked.append(request)
        return ApprovalDecision(next(answers))

    agent = make_agent(OPENAI, fake_server, workspace, approver=approver)
    conversation = agent.new_conversation("x")
    events = await run(agent, conversation, "echo")
    assert [(r.tool, r.kind, r.subject) for r in asked] == [("bash", "exec", "echo one")]  # "always" covers the rest
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [e.decision for e in finished] == ["approved", "allowed", "allowed"]
    assert [e.result.content.strip() for e in finished] == ["one", "two", "three"]
    runs = ToolLog(agent.store.db).runs(conversation.id)
    assert [(r.decision, r.exit_code) for r in runs] == [("approved", 0), ("allowed", 0), ("allowed", 0)]
    assert all(r.duration_ms is not None and r.duration_ms >= 0 for r in runs)


async def test_config_allow_and_deny_rules(fake_server, workspace):
    fake_server.queue(OPENAI.tool_reply([("call_1", "bash", {"command": "echo allowed"})]))
    fake_server.queue(OPENAI.tool_reply([("call_2", "bash", {"command": "git push origin main"})]))
    fake_server.queue(OPENAI.tool_reply([("call_3", "bash", {"command": "echo allowed; touch x"})]))
    fake_server.queue(OPENAI.text_reply("done"))
    agent = make_agent(
        OPENAI, fake_server, workspace, ZEPH_TOOLS_ALLOW="bash:echo *", ZEPH_TOOLS_DENY="bash:git push*"
    )
    conversation = agent.new_conversation("x")
    events = await run(agent, conversation, "go")
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    # echo runs without asking; git push is refused by rule; a compound with an unlisted part must ask (nobody: denied)
    assert [e.decision for e in finished] == ["allowed", "denied", "denied"]
    assert "tools.deny" in finished[1].result.content
    assert "did not approve" in finished[2].result.content
    assert not (workspace / "x").exists()


async def test_unknown_tool_and_bad_arguments_get_error_results(fake_server, workspace):
    fake_server.queue(
        openai_wire.stream_response(
            openai_wire.tool_call_chunks(
                [("call_1", "launch_rocket", ["{}"]), ("call_2", "read_file", ['{"path": ']), ("call_3", "read_file", ["{}"])]
            )
        )
    )
    fake_server.queue(OPENAI.text_reply("sorry"))
    agent = make_agent(OPENAI, fake_server, workspace)
    conversation = agent.new_conversation("x")
    events = await run(agent, conversation, "go")
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [e.decision for e in finished] == ["invalid", "invalid", "invalid"]
    assert "no tool named 'launch_rocket'" in finished[0].result.content
    assert "not valid JSON" in finished[1].result.content
    assert "missing required argument 'path'" in finished[2].result.content
    assert events[-1].text == "sorry"


async def test_read_only_modes_do_not_offer_write_or_exec_tools(fake_server, workspace):
    fake_server.queue(OPENAI.text_reply("planned"))
    fake_server.queue(OPENAI.text_reply("answered"))
    agent = make_agent(OPENAI, fake_server, workspace, mode="plan")
    conversation = agent.new_conversation("x")
    await run(agent, conversation, "plan it")
    agent.set_mode("ask")
    await run(agent, conversation, "ask it")
    for request, mode in zip(fake_server.requests_to(OPENAI.path), ("plan", "ask")):
        names = OPENAI.sent_tool_names(request.json)
        assert sorted(names) == [
            "compress_context", "find_path", "grep", "list_directory", "memory_search", "read_file", "read_overflow",
            "task",  # a read-only session's sub-agents are read-only
            *(["todo_write"] if mode == "plan" else []),  # the plan's steps as a task list; ask answers one question
        ]
        system = "\n".join(m["content"] for m in request.json["messages"] if m["role"] == "system")
        assert f"Mode: {mode}." in system


async def test_a_model_asking_for_a_tool_it_was_not_offered_is_refused(fake_server, workspace):
    fake_server.queue(OPENAI.tool_reply([("call_1", "write_file", {"path": "x.txt", "content": "x"})]))
    fake_server.queue(OPENAI.text_reply("ok"))
    agent = make_agent(OPENAI, fake_server, workspace, approver=approve_all, mode="ask")
    conversation = agent.new_conversation("x")
    events = await run(agent, conversation, "write")
    finished = [e for e in events if isinstance(e, ToolCallFinished)][0]
    assert finished.decision == "invalid" and not (workspace / "x.txt").exists()


async def test_the_iteration_limit_stops_the_turn_with_every_call_answered(fake_server, workspace):
    for i in range(3):
        fake_server.queue(OPENAI.tool_reply([(f"call_{i}x", "list_directory", {})]))
    agent = make_agent(OPENAI, fake_server, workspace, ZEPH_AGENT_MAX_TOOL_ITERATIONS="2")
    conversation = agent.new_conversation("x")
    events = await run(agent, conversation, "loop forever")
    assert isinstance(events[-1], TurnFinished) and events[-1].stop_reason == "max_tool_iterations"
    warnings = [e.text for e in events if isinstance(e, AgentWarning)]
    assert any("stopped after 2 tool rounds" in w and "agent.max_tool_iterations" in w for w in warnings)
    assert len(fake_server.requests_to(OPENAI.path)) == 3
    rows = agent.store.history(conversation.id)
    calls = [c.id for r in rows for c in r.message.tool_calls]
    results = [p.tool_call_id for r in rows for p in r.message.tool_results]
    assert calls == results and len(calls) == 3
    assert "limit of 2 tool rounds" in rows[-1].message.tool_results[0].content


async def test_ollama_model_without_tool_support_runs_without_tools_and_says_so_once(fake_server, workspace):
    fake_server.queue(
        ollama_wire.error(400, f"registry.ollama.ai/library/{ollama_wire.MODEL} does not support tools"),
        path="/api/chat",
    )
    fake_server.queue(OLLAMA.text_reply("plain answer"), path="/api/chat")
    fake_server.queue(OLLAMA.text_reply("second answer"), path="/api/chat")
    agent = make_agent(OLLAMA, fake_server, workspace)
    conversation = agent.new_conversation("x")
    first = await run(agent, conversation, "hi")
    second = await run(agent, conversation, "again")
    warnings = [e.text for e in first + second if isinstance(e, AgentWarning)]
    assert len([w for w in warnings if "without tools" in w]) == 1
    assert first[-1].text == "plain answer" and second[-1].text == "second answer"
    requests = fake_server.requests_to("/api/chat")
    assert requests[0].json.get("tools") and not requests[1].json.get("tools") and not requests[2].json.get("tools")
    system = "\n".join(m["content"] for m in requests[1].json["messages"] if m["role"] == "system")
    assert "No tools are available" in system


# ---- tool output on its way to the model ----------------------------------------------------


async def test_secrets_in_tool_output_never_reach_the_model_or_the_database(fake_server, workspace):
    secret = "sk-ant-api03-" + "A1b2C3d4" * 6
    (workspace / ".env").write_text(f"ANTHROPIC_API_KEY={secret}\nDEBUG=1\n", encoding="utf-8")
    fake_server.queue(OPENAI.tool_reply([("call_env", "read_file", {"path": ".env"})]))
    fake_server.queue(OPENAI.text_reply("there is a key"))
    agent = make_agent(OPENAI, fake_server, workspace)
    conversation = agent.new_conversation("x")
    await run(agent, conversation, "show .env")
    (_, content), = OPENAI.sent_results(fake_server.requests_to(OPENAI.path)[1].json)
    assert secret not in content and "[REDACTED]" in content and "DEBUG=1" in content
    dump = "\n".join(str(row) for row in agent.store.db.query("select * from messages"))
    assert secret not in dump


async def test_a_secret_in_the_models_own_call_runs_for_real_but_is_stored_redacted(fake_server, workspace):
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    arguments = {"path": "deploy.env", "content": f"GITHUB_TOKEN={token}\nREGION=eu\n"}
    fake_server.queue(OPENAI.tool_reply([("call_env", "write_file", arguments)]))
    fake_server.queue(OPENAI.text_reply("written"))
    agent = make_agent(OPENAI, fake_server, workspace, approver=approve_all)
    conversation = agent.new_conversation("x")
    await run(agent, conversation, "write the deploy env")
    assert (workspace / "deploy.env").read_text(encoding="utf-8") == f"GITHUB_TOKEN={token}\nREGION=eu\n"
    stored_call, = [call for row in agent.store.history(conversation.id) for call in row.message.tool_calls]
    assert stored_call.arguments == {"path": "deploy.env", "content": "GITHUB_TOKEN=[REDACTED]\nREGION=eu\n"}
    for table in ("messages", "tool_runs"):
        rows = "\n".join(str(row) for row in agent.store.db.query(f"select * from {table}"))
        assert "REGION=eu" in rows and token not in rows, table
    replayed = [m for m in fake_server.requests_to(OPENAI.path)[1].json["messages"] if m["role"] == "assistant"]
    assert "[REDACTED]" in replayed[0]["tool_calls"][0]["function"]["arguments"]
    assert token not in json.dumps(replayed)


async def test_long_output_is_cut_and_read_overflow_pages_through_it(fake_server, workspace):
    command = "for i in $(seq 1 20000); do echo line-$i; done"
    fake_server.queue(OPENAI.tool_reply([("call_big", "bash", {"command": command})]))
    agent = make_agent(OPENAI, fake_server, workspace, approver=approve_all)
    conversation = agent.new_conversation("x")

    # After the cut output, the model asks for a page of the full text by the id in the marker.
    events: list = []
    async for event in agent.run_turn(conversation, "big"):
        events.append(event)
        if isinstance(event, ToolCallFinished) and event.call.name == "bash":
            content = event.result.content
            assert len(content) < 31_000 and "line-1\n" in content and "line-20000" in content
            output_id = content.split('read_overflow(id="')[1].split('"')[0]
            fake_server.queue(OPENAI.tool_reply([("call_page", "read_overflow", {"id": output_id, "offset": 10000, "limit": 3})]))
            fake_server.queue(OPENAI.text_reply("seen"))
    page = [e for e in events if isinstance(e, ToolCallFinished) and e.call.name == "read_overflow"][0]
    assert "line-10000\nline-10001\nline-10002" in page.result.content
    assert "line-10003" not in page.result.content
    assert events[-1].text == "seen"


async def test_summarize_output_replaces_a_long_output_with_an_llm_summary(fake_server, workspace):
    command = "for i in $(seq 1 20000); do echo row-$i; done"
    fake_server.queue(OPENAI.tool_reply([("call_big", "bash", {"command": command})]))
    fake_server.queue(openai_wire.json_response(openai_wire.completion(content="20000 rows, row-1 to row-20000, exit 0")))
    fake_server.queue(OPENAI.text_reply("done"))
    agent = make_agent(OPENAI, fake_server, workspace, approver=approve_all, ZEPH_TOOLS_SUMMARIZE_OUTPUT="true")
    conversation = agent.new_conversation("x")
    events = await run(agent, conversation, "big")
    finished = [e for e in events if isinstance(e, ToolCallFinished)][0]
    assert "20000 rows, row-1 to row-20000" in finished.result.content
    assert "read_overflow" in finished.result.content
    summary_request = fake_server.requests_to(OPENAI.path)[1].json
    assert summary_request.get("stream") in (None, False) and "tools" not in summary_request
    assert "every file path" in summary_request["messages"][0]["content"]


async def test_a_failing_summarizer_falls_back_to_truncation(fake_server, workspace):
    command = "for i in $(seq 1 20000); do echo row-$i; done"
    fake_server.queue(OPENAI.tool_reply([("call_big", "bash", {"command": command})]))
    fake_server.queue(openai_wire.server_error())
    fake_server.queue(OPENAI.text_reply("done"))
    agent = make_agent(OPENAI, fake_server, workspace, approver=approve_all, ZEPH_TOOLS_SUMMARIZE_OUTPUT="true")
    conversation = agent.new_conversation("x")
    events = await run(agent, conversation, "big")
    finished = [e for e in events if isinstance(e, ToolCallFinished)][0]
    assert "row-1\n" in finished.result.content and "row-20000" in finished.result.content
    assert "removed" in finished.result.content
    assert events[-1].text == "done"


# ---- persistence ------------------------------------------------------------------------------


async def test_a_conversation_with_tools_resumes_on_another_provider(fake_server, workspace):
    fake_server.queue(OLLAMA.tool_reply([("", "read_file", {"path": "notes.txt"})]), path=OLLAMA.path)
    fake_server.queue(OLLAMA.text_reply("42"), path=OLLAMA.path)
    ollama_agent = make_agent(OLLAMA, fake_server, workspace)
    conversation = ollama_agent.new_conversation("x")
    await run(ollama_agent, conversation, "read it")
    call_id = ollama_agent.store.history(conversation.id)[1].message.tool_calls[0].id
    assert call_id.startswith("call_") and len(call_id) > 10  # a unique id, not Ollama's missing one

    fake_server.queue(ANTHROPIC.text_reply("still 42"), path=ANTHROPIC.path)
    claude = make_agent(ANTHROPIC, fake_server, workspace)
    events = await run(claude, claude.store.get_conversation(conversation.id), "and now?")
    assert events[-1].text == "still 42"
    body = fake_server.requests_to(ANTHROPIC.path)[-1].json
    uses = [b for m in body["messages"] for b in (m["content"] if isinstance(m["content"], list) else []) if b["type"] == "tool_use"]
    assert [u["id"] for u in uses] == [call_id]
    assert [key for key, _ in ANTHROPIC.sent_results(body)] == [call_id]

    fake_server.queue(OPENAI.text_reply("yes 42"), path=OPENAI.path)
    gpt = make_agent(OPENAI, fake_server, workspace)
    await run(gpt, gpt.store.get_conversation(conversation.id), "sure?")
    sent = fake_server.requests_to(OPENAI.path)[-1].json["messages"]
    assistant_calls = [c["id"] for m in sent if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert assistant_calls == [call_id] and [k for k, _ in _openai_results({"messages": sent})] == [call_id]


async def test_tool_call_ids_repeated_by_a_model_are_made_unique(fake_server, workspace):
    fake_server.queue(OPENAI.tool_reply([("dup", "list_directory", {})]))
    fake_server.queue(OPENAI.tool_reply([("dup", "list_directory", {})]))
    fake_server.queue(OPENAI.text_reply("ok"))
    agent = make_agent(OPENAI, fake_server, workspace)
    conversation = agent.new_conversation("x")
    await run(agent, conversation, "go")
    ids = [c.id for r in agent.store.history(conversation.id) for c in r.message.tool_calls]
    assert len(ids) == 2 and len(set(ids)) == 2 and ids[0] == "dup"


async def test_tools_work_without_streaming(fake_server, workspace):
    fake_server.queue(
        anthropic_wire.message_json(
            [anthropic_wire.text_block("Reading."), anthropic_wire.tool_use_block("toolu_01A", "read_file", {"path": "notes.txt"})],
            stop_reason="tool_use",
        ),
        path=ANTHROPIC.path,
    )
    fake_server.queue(anthropic_wire.message_json([anthropic_wire.text_block("42.")]), path=ANTHROPIC.path)
    agent = make_agent(ANTHROPIC, fake_server, workspace)
    conversation = agent.new_conversation("x")
    events = [e async for e in agent.run_turn(conversation, "read", stream=False)]
    assert events[-1].text == "42." and events[-1].stop_reason == "stop"
    (key, content), = ANTHROPIC.sent_results(fake_server.requests_to(ANTHROPIC.path)[1].json)
    assert key == "toolu_01A" and "the answer is 42" in content
    assert agent.store.history(conversation.id)[1].metadata["stop_reason"] == "tool_calls"


async def test_the_embedded_model_runs_without_tools_and_says_so_once(workspace):
    environ = {"ZEPH_LLM_PROVIDER": "local", "ZEPH_LLM_MAX_TOKENS": "4"}
    config = load_config(env=environ).config
    provider = create_provider(resolve_settings(config, environ))
    agent = Agent(config=config, store=ConversationStore(open_database(database_path())), provider=provider, cwd=workspace)
    AGENTS.append(agent)
    conversation = agent.new_conversation("x")
    first = await run(agent, conversation, "Say hi")
    second = await run(agent, conversation, "Again")
    warnings = [e.text for e in first + second if isinstance(e, AgentWarning)]
    assert [w for w in warnings if "without tools" in w] == [
        f"running without tools: local ({agent.model_label}) has no tool calling; "
        "file and shell tools need anthropic, openai, a compatible server or ollama"
    ]
    assert agent.offered_tools().names() == []
    messages, report, _ = agent.context_for(conversation)
    assert "No tools are available" in messages[0].content + "".join(m.content for m in messages if m.role == "system")
    assert report.block("tools") is None
