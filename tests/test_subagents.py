"""Sub-agents end to end: the task tool runs a child agent in its own stored session, with the real openai
SDK against the wire fake and a real SQLite store.

The fake server tells the parent's requests from a sub-agent's by the tools they offer: a sub-agent at
the default `max_depth` (1) is not offered `task`. Concurrency is shown by the server holding both
sub-agents' first requests until both have arrived (the wait is only a bound on a hang).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from zeph_cli.agent import Agent, AgentServices, ToolCallFinished, ToolCallStarted, TurnFinished
from zeph_cli.agent.events import SubagentFinished, SubagentProgress, SubagentStarted
from zeph_cli.config import load_config
from zeph_cli.paths import database_path
from zeph_cli.providers import create_provider, resolve_settings
from zeph_cli.providers.summary import side_job_settings
from zeph_cli.store import ConversationStore, open_database
from zeph_cli.store.conversations import SUBAGENT_KEY
from zeph_cli.tools.permissions import approve_all
from tests.agent_helpers import AGENTS, close_agents  # noqa: F401  (autouse fixture)
from tests.fakes import openai_wire
from tests.fakes.server import FakeResponse, RecordedRequest

PATH = "/v1/chat/completions"
CLOCK = datetime(2026, 3, 1, 9, 30, tzinfo=timezone.utc)


def tool_reply(*calls: tuple[str, str, dict[str, Any]], usage: tuple[int, int, int] = (80, 40, 0)) -> FakeResponse:
    chunks = openai_wire.tool_call_chunks([(cid, name, [json.dumps(args)]) for cid, name, args in calls], usage=usage)
    return openai_wire.stream_response(chunks)


def text_reply(text: str, usage: tuple[int, int, int] = (12, 5, 0)) -> FakeResponse:
    return openai_wire.stream_response(openai_wire.text_chunks([text], usage=usage))


def offered(request: RecordedRequest) -> list[str]:
    return [t["function"]["name"] for t in request.json.get("tools", [])]


def is_child(request: RecordedRequest) -> bool:
    return "task" not in offered(request)


def user_text(request: RecordedRequest) -> str:
    return "\n".join(str(m.get("content")) for m in request.json["messages"] if m["role"] == "user")


class Script:
    """Answers the parent's requests and each sub-agent's (told apart by `key`) from their own lists."""

    def __init__(self, parent: list[FakeResponse], children: dict[str, list[FakeResponse]],
                 hold: Callable[[RecordedRequest, str, int], None] = lambda request, key, n: None) -> None:
        self.parent, self.children, self.hold = parent, children, hold
        self.seen: dict[str, list[RecordedRequest]] = defaultdict(list)
        self.lock = threading.Lock()

    def key(self, request: RecordedRequest) -> str:
        if not is_child(request):
            return "parent"
        text = user_text(request)
        return next(name for name in self.children if name in text)

    def __call__(self, request: RecordedRequest) -> FakeResponse | None:
        if request.method != "POST":
            return None
        key = self.key(request)
        with self.lock:
            self.seen[key].append(request)
            n = len(self.seen[key])
        self.hold(request, key, n)
        replies = self.parent if key == "parent" else self.children[key]
        return replies.pop(0)


def make_agent(fake_server, workspace: Path, *, approver=None, mode: str | None = None, **env: str) -> Agent:
    environ = {
        "ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": fake_server.url + "/v1", "ZEPH_LLM_MODEL": "gpt-4o",
        "ZEPH_LLM_MAX_RETRIES": "0", "ZEPH_MEMORY_SEMANTIC_ENABLED": "false", **env,
    }
    config = load_config(env=environ).config
    settings = resolve_settings(config, environ)
    provider = create_provider(settings)
    store = ConversationStore(open_database(database_path()))
    agent = Agent(config=config, store=store, provider=provider, cwd=workspace, approver=approver, mode=mode,
                  services=AgentServices(helper_settings=side_job_settings(config, environ, settings),
                                         clock=lambda: CLOCK))
    AGENTS.append(agent)
    return agent


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "alpha.py").write_text("ALPHA_SECRET_DETAIL = 1\ndef alpha():\n    return 'a'\n", encoding="utf-8")
    (root / "beta.py").write_text("BETA_SECRET_DETAIL = 2\ndef beta():\n    return 'b'\n", encoding="utf-8")
    return root


async def run(agent: Agent, conversation, prompt: str) -> list:
    return [event async for event in agent.run_turn(conversation, prompt)]


def assert_every_call_answered(agent: Agent, conversation_id: int) -> None:
    """Every stored tool call has exactly one stored result, and every result answers a call."""
    rows = agent.store.history(conversation_id)
    calls = [call.id for row in rows for call in row.message.tool_calls]
    results = [result.tool_call_id for row in rows for result in row.message.tool_results]
    assert sorted(calls) == sorted(results) and len(set(calls)) == len(calls)


SUMMARY = "alpha.py defines alpha(), beta.py defines beta(); both are tiny."


async def test_task_runs_a_subagent_that_reads_files_and_returns_only_its_summary(fake_server, workspace):
    job = "JOB-READ: read alpha.py and beta.py and summarize what they define."
    script = Script(
        parent=[tool_reply(("call_task", "task", {"description": "Summarize two files", "prompt": job})),
                text_reply("They define alpha and beta.")],
        children={"JOB-READ": [
            tool_reply(("call_a", "read_file", {"path": "alpha.py"}), ("call_b", "read_file", {"path": "beta.py"})),
            text_reply(SUMMARY),
        ]},
    )
    fake_server.respond_with(script)
    agent = make_agent(fake_server, workspace)
    conversation = agent.new_conversation("what is in this project?")
    events = await run(agent, conversation, "what is in this project?")

    assert isinstance(events[-1], TurnFinished) and events[-1].text == "They define alpha and beta."
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [(e.call.name, e.decision, e.result.is_error) for e in finished] == [("task", "auto", False)]
    assert finished[0].result.content.strip().endswith(SUMMARY + "\n</tool_output>") or SUMMARY in finished[0].result.content

    # The child read the files in its own session, linked to the parent's session and task call.
    started = next(e for e in events if isinstance(e, SubagentStarted))
    child = agent.store.get_conversation(started.conversation_id)
    assert child.metadata[SUBAGENT_KEY]["parent"] == conversation.id
    assert child.metadata[SUBAGENT_KEY]["call_id"] == "call_task"
    child_rows = agent.store.history(child.id)
    assert [r.role for r in child_rows] == ["user", "assistant", "tool", "tool", "assistant"]
    assert child_rows[0].message.content == job
    assert "ALPHA_SECRET_DETAIL" in child_rows[2].message.tool_results[0].content
    assert child_rows[-1].message.content == SUMMARY
    assert_every_call_answered(agent, child.id)
    progress = [e.event for e in events if isinstance(e, SubagentProgress)]
    assert [e.call.name for e in progress if isinstance(e, ToolCallStarted)] == ["read_file", "read_file"]

    # The parent's next request grows by the task call and its result, the summary, and nothing else.
    first, second = script.seen["parent"]
    before, after = first.json["messages"], second.json["messages"]
    added = [m for m in after if m not in before]
    assert [m["role"] for m in added] == ["assistant", "tool"]
    assert added[0]["tool_calls"][0]["function"]["name"] == "task"
    assert SUMMARY in added[1]["content"]
    assert len(added[1]["content"]) < len(SUMMARY) + 120  # the summary in its tool_output wrapper
    assert all(m in after for m in before)
    body = json.dumps(second.json)
    assert "ALPHA_SECRET_DETAIL" not in body and "BETA_SECRET_DETAIL" not in body
    # The child's requests carry the job alone: nothing of the parent's conversation.
    child_first = script.seen["JOB-READ"][0].json
    assert "what is in this project?" not in json.dumps(child_first)
    assert_every_call_answered(agent, conversation.id)

    # Its tokens are reported with the parent's turn.
    done = next(e for e in events if isinstance(e, SubagentFinished))
    assert (done.outcome, done.rounds) == ("done", 1)
    assert (done.usage.input_tokens, done.usage.output_tokens) == (80 + 12, 40 + 5)


async def test_a_subagent_gets_a_share_of_the_budget_and_the_parent_provider(fake_server, workspace):
    script = Script(
        parent=[tool_reply(("call_t", "task", {"description": "d", "prompt": "JOB-BUDGET"})), text_reply("ok")],
        children={"JOB-BUDGET": [text_reply("nothing to do")]},
    )
    fake_server.respond_with(script)
    agent = make_agent(fake_server, workspace, ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS="20000",
                       ZEPH_AGENT_SUBAGENTS_BUDGET_SHARE="0.25")
    conversation = agent.new_conversation("x")
    built: list[Agent] = []
    original = type(agent.subagents).build

    def build(self, mode, call_id, description=""):
        child = original(self, mode, call_id, description)
        built.append(child)
        return child

    type(agent.subagents).build = build  # type: ignore[method-assign]
    try:
        await run(agent, conversation, "x")
    finally:
        type(agent.subagents).build = original  # type: ignore[method-assign]
    (child,) = built
    assert child.budget().total == 5000
    assert child.provider is agent.provider
    assert child.depth == 1 and child.mode == "agent"
    assert not child.config.memory.semantic.enabled and not child.config.memory.long_term.enabled


async def test_depth_beyond_max_depth_is_refused_with_a_clear_tool_error(fake_server, workspace):
    script = Script(
        parent=[tool_reply(("call_t", "task", {"description": "outer", "prompt": "JOB-NEST: start another"})),
                text_reply("done")],
        children={"JOB-NEST": [
            tool_reply(("call_inner", "task", {"description": "inner", "prompt": "deeper"})),
            text_reply("could not nest"),
        ]},
    )
    fake_server.respond_with(script)
    agent = make_agent(fake_server, workspace)
    conversation = agent.new_conversation("nest")
    events = await run(agent, conversation, "nest")
    assert isinstance(events[-1], TurnFinished)
    # Not offered to the child...
    assert "task" not in offered(script.seen["JOB-NEST"][0]) and "read_file" in offered(script.seen["JOB-NEST"][0])
    # ...and refused when called anyway, naming the setting.
    inner = [e.event for e in events if isinstance(e, SubagentProgress) and isinstance(e.event, ToolCallFinished)]
    (refused,) = inner
    assert refused.result.is_error and refused.decision == "invalid"
    assert "max_depth = 1" in refused.result.content and "[agent.subagents]" not in refused.result.content
    assert "agent.subagents max_depth" in refused.result.content
    # Only one child session was made.
    assert len(agent.store.subagent_sessions(conversation.id)) == 1


async def test_max_depth_zero_leaves_the_task_tool_out(fake_server, workspace):
    fake_server.queue(tool_reply(("call_t", "task", {"description": "d", "prompt": "p"})), text_reply("fine"))
    agent = make_agent(fake_server, workspace, ZEPH_AGENT_SUBAGENTS_MAX_DEPTH="0")
    conversation = agent.new_conversation("x")
    events = await run(agent, conversation, "x")
    assert "task" not in offered(fake_server.requests_to(PATH)[0])
    (finished,) = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished.result.is_error and "max_depth = 0" in finished.result.content


async def test_unknown_tools_in_the_subset_are_a_clear_tool_error(fake_server, workspace):
    fake_server.queue(
        tool_reply(("call_t", "task", {"description": "d", "prompt": "p", "tools": ["read_file", "teleport"]})),
        text_reply("ok"),
    )
    agent = make_agent(fake_server, workspace)
    conversation = agent.new_conversation("x")
    events = await run(agent, conversation, "x")
    (finished,) = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished.result.is_error
    assert "'teleport'" in finished.result.content and "Available: read_file" in finished.result.content


async def test_the_subset_restricts_the_subagent_tools(fake_server, workspace):
    script = Script(
        parent=[tool_reply(("call_t", "task", {"description": "d", "prompt": "JOB-SUB", "tools": ["grep", "read_file"]})),
                text_reply("ok")],
        children={"JOB-SUB": [text_reply("done")]},
    )
    fake_server.respond_with(script)
    agent = make_agent(fake_server, workspace)
    await run(agent, agent.new_conversation("x"), "x")
    assert offered(script.seen["JOB-SUB"][0]) == ["read_file", "grep"]  # in the usual order


async def test_an_ask_mode_session_starts_only_read_only_subagents(fake_server, workspace):
    script = Script(
        parent=[tool_reply(("call_w", "task", {"description": "d", "prompt": "JOB-W", "mode": "agent"}),
                           ("call_r", "task", {"description": "d", "prompt": "JOB-R"})),
                text_reply("ok")],
        children={"JOB-R": [text_reply("read only")]},
    )
    fake_server.respond_with(script)
    agent = make_agent(fake_server, workspace, mode="ask")
    events = await run(agent, agent.new_conversation("x"), "x")
    assert "task" in offered(script.seen["parent"][0])
    finished = {e.call.id: e for e in events if isinstance(e, ToolCallFinished)}
    assert finished["call_w"].result.is_error and "mode 'agent' is not allowed" in finished["call_w"].result.content
    assert not finished["call_r"].result.is_error
    names = offered(script.seen["JOB-R"][0])
    assert "read_file" in names and "write_file" not in names and "bash" not in names


async def test_two_task_calls_in_one_round_run_concurrently(fake_server, workspace):
    both = threading.Barrier(2, timeout=20)  # a bound on a hang: run one after the other, they never meet

    def hold(request: RecordedRequest, key: str, n: int) -> None:
        if key != "parent" and n == 1:
            both.wait()  # each sub-agent's first request waits here for the other's

    script = Script(
        parent=[tool_reply(("call_one", "task", {"description": "first", "prompt": "JOB-ONE"}),
                           ("call_two", "task", {"description": "second", "prompt": "JOB-TWO"})),
                text_reply("both done")],
        children={"JOB-ONE": [text_reply("one found")], "JOB-TWO": [text_reply("two found")]},
        hold=hold,
    )
    fake_server.respond_with(script)
    agent = make_agent(fake_server, workspace)
    conversation = agent.new_conversation("two jobs")
    events = await run(agent, conversation, "two jobs")
    assert isinstance(events[-1], TurnFinished) and events[-1].text == "both done"
    assert not both.broken
    # One stored result per call, in the order of the calls.
    rows = agent.store.history(conversation.id)
    assert [r.role for r in rows] == ["user", "assistant", "tool", "tool", "assistant"]
    assert [r.message.tool_results[0].tool_call_id for r in rows[2:4]] == ["call_one", "call_two"]
    assert "one found" in rows[2].message.tool_results[0].content
    assert "two found" in rows[3].message.tool_results[0].content
    assert len(agent.store.subagent_sessions(conversation.id)) == 2


async def test_concurrency_one_runs_the_subagents_one_after_the_other(fake_server, workspace):
    order: list[str] = []

    def hold(request: RecordedRequest, key: str, n: int) -> None:
        order.append(key)

    script = Script(
        parent=[tool_reply(("call_one", "task", {"description": "first", "prompt": "JOB-ONE"}),
                           ("call_two", "task", {"description": "second", "prompt": "JOB-TWO"})),
                text_reply("both done")],
        children={"JOB-ONE": [tool_reply(("c1", "read_file", {"path": "alpha.py"})), text_reply("one")],
                  "JOB-TWO": [tool_reply(("c2", "read_file", {"path": "beta.py"})), text_reply("two")]},
        hold=hold,
    )
    fake_server.respond_with(script)
    agent = make_agent(fake_server, workspace, ZEPH_AGENT_SUBAGENTS_CONCURRENCY="1")
    await run(agent, agent.new_conversation("x"), "x")
    children = [k for k in order if k != "parent"]
    assert children in (["JOB-ONE"] * 2 + ["JOB-TWO"] * 2, ["JOB-TWO"] * 2 + ["JOB-ONE"] * 2)


async def test_cancelling_the_parent_cancels_the_subagent_and_both_sessions_stay_consistent(fake_server, workspace):
    script = Script(
        parent=[tool_reply(("call_task", "task", {"description": "slow job", "prompt": "JOB-SLOW"}))],
        children={"JOB-SLOW": [
            tool_reply(("call_read", "read_file", {"path": "alpha.py"})),
            tool_reply(("call_sleep", "bash", {"command": "sleep 30"}), ("call_after", "read_file", {"path": "beta.py"})),
        ]},
    )
    fake_server.respond_with(script)
    agent = make_agent(fake_server, workspace, approver=approve_all, ZEPH_TOOLS_SANDBOX_ENABLED="false")
    conversation = agent.new_conversation("slow")
    seen: list = []

    async def consume():
        async for event in agent.run_turn(conversation, "run the slow job"):
            seen.append(event)

    def sleeping() -> bool:
        return any(isinstance(e, SubagentProgress) and isinstance(e.event, ToolCallStarted)
                   and e.event.call.name == "bash" for e in seen)

    task = asyncio.create_task(consume())
    for _ in range(1500):  # 30 s at most: a bound on a hang
        await asyncio.sleep(0.02)
        if sleeping():
            break
    assert sleeping()
    await asyncio.sleep(0.2)  # the shell runs now
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    # The parent: its task call answered "not completed".
    rows = agent.store.history(conversation.id)
    assert [r.role for r in rows] == ["user", "assistant", "tool"]
    (result,) = rows[2].message.tool_results
    assert result.tool_call_id == "call_task" and result.is_error and "Not completed" in result.content
    assert_every_call_answered(agent, conversation.id)

    # The child kept what it did: the first round's real result, the second round's calls answered.
    (child,) = agent.store.subagent_sessions(conversation.id)
    child_rows = agent.store.history(child.id)
    assert [r.role for r in child_rows] == ["user", "assistant", "tool", "assistant", "tool", "tool"]
    assert "ALPHA_SECRET_DETAIL" in child_rows[2].message.tool_results[0].content
    later = [r.message.tool_results[0] for r in child_rows[4:]]
    assert [r.tool_call_id for r in later] == ["call_sleep", "call_after"]
    assert all(r.is_error and "interrupted" in r.content for r in later)
    assert_every_call_answered(agent, child.id)
    done = [e for e in seen if isinstance(e, SubagentFinished)]
    assert done == [] or done[0].outcome == "cancelled"

    # The next parent turn is valid: every call with its result.
    fake_server.respond_with(lambda request: text_reply("ok, stopped") if request.method == "POST" else None)
    events = await run(agent, conversation, "never mind")
    assert isinstance(events[-1], TurnFinished) and events[-1].text == "ok, stopped"


async def test_a_subagent_at_max_turns_is_asked_to_answer_and_says_so(fake_server, workspace):
    script = Script(
        parent=[tool_reply(("call_t", "task", {"description": "d", "prompt": "JOB-LONG"})), text_reply("ok")],
        children={"JOB-LONG": [
            tool_reply(("r1", "read_file", {"path": "alpha.py"})),
            tool_reply(("r2", "read_file", {"path": "beta.py"})),  # over max_turns = 1: not run
            text_reply("partial: alpha only"),
        ]},
    )
    fake_server.respond_with(script)
    agent = make_agent(fake_server, workspace, ZEPH_AGENT_SUBAGENTS_MAX_TURNS="1")
    conversation = agent.new_conversation("x")
    events = await run(agent, conversation, "x")
    (finished,) = [e for e in events if isinstance(e, ToolCallFinished)]
    assert "partial: alpha only" in finished.result.content
    assert "max_turns" in finished.result.content
    final_request = script.seen["JOB-LONG"][-1]
    assert "You have used all 1 tool rounds" in user_text(final_request)
    (child,) = agent.store.subagent_sessions(conversation.id)
    assert_every_call_answered(agent, child.id)
    assert next(e for e in events if isinstance(e, SubagentFinished)).outcome == "max_turns"


async def test_a_long_answer_is_cut_to_result_tokens_and_says_where_the_rest_is(fake_server, workspace):
    long_answer = " ".join(f"word{i}" for i in range(3000))
    script = Script(
        parent=[tool_reply(("call_t", "task", {"description": "d", "prompt": "JOB-BIG"})), text_reply("ok")],
        children={"JOB-BIG": [text_reply(long_answer)]},
    )
    fake_server.respond_with(script)
    agent = make_agent(fake_server, workspace, ZEPH_AGENT_SUBAGENTS_RESULT_TOKENS="200")
    conversation = agent.new_conversation("x")
    events = await run(agent, conversation, "x")
    (finished,) = [e for e in events if isinstance(e, ToolCallFinished)]
    (child,) = agent.store.subagent_sessions(conversation.id)
    assert f"the whole answer is in session {child.id}" in finished.result.content
    assert "word0 " in finished.result.content and "word2999" not in finished.result.content
    assert agent.exact_counter().count(finished.result.content) < 300


async def test_agent_subagents_model_gives_the_subagents_their_own_model(fake_server, workspace):
    script = Script(
        parent=[tool_reply(("call_t", "task", {"description": "d", "prompt": "JOB-MODEL"})), text_reply("ok")],
        children={"JOB-MODEL": [text_reply("small model here")]},
    )
    fake_server.respond_with(script)
    agent = make_agent(fake_server, workspace, ZEPH_AGENT_SUBAGENTS_MODEL="gpt-4o-mini")
    conversation = agent.new_conversation("x")
    await run(agent, conversation, "x")
    assert [r.json["model"] for r in script.seen["parent"]] == ["gpt-4o", "gpt-4o"]
    assert [r.json["model"] for r in script.seen["JOB-MODEL"]] == ["gpt-4o-mini"]
    (child,) = agent.store.subagent_sessions(conversation.id)
    assert child.model == "gpt-4o-mini"


async def test_subagents_on_the_embedded_model_run_one_at_a_time(fake_server, workspace, tmp_path):
    from zeph_cli.providers.settings import ProviderSettings

    agent = make_agent(fake_server, workspace, ZEPH_AGENT_SUBAGENTS_CONCURRENCY="4")
    assert agent.subagents.slots()._value == 4
    local = make_agent(fake_server, workspace, ZEPH_AGENT_SUBAGENTS_CONCURRENCY="4")
    local.side_jobs.pool.settings["subagent"] = ProviderSettings(kind="local", name="local", model=str(tmp_path / "m.gguf"))
    try:
        assert local.subagents.provider().settings.kind == "local"  # built, not loaded
        assert local.subagents.slots()._value == 1
    finally:
        await local.side_jobs.aclose()


async def test_max_depth_two_lets_a_subagent_start_one_more_level(fake_server, workspace):
    def key(request: RecordedRequest) -> str:
        text = user_text(request)
        return "JOB-INNER" if "JOB-INNER" in text else "JOB-OUTER" if "JOB-OUTER" in text else "parent"

    script = Script(
        parent=[tool_reply(("call_outer", "task", {"description": "outer", "prompt": "JOB-OUTER"})), text_reply("top")],
        children={
            "JOB-OUTER": [tool_reply(("call_inner", "task", {"description": "inner", "prompt": "JOB-INNER"})),
                          text_reply("outer done")],
            "JOB-INNER": [text_reply("inner done")],
        },
    )
    script.key = key  # type: ignore[method-assign]
    fake_server.respond_with(script)
    agent = make_agent(fake_server, workspace, ZEPH_AGENT_SUBAGENTS_MAX_DEPTH="2")
    conversation = agent.new_conversation("deep")
    events = await run(agent, conversation, "deep")
    assert events[-1].text == "top"
    assert "task" in offered(script.seen["JOB-OUTER"][0]) and "task" not in offered(script.seen["JOB-INNER"][0])
    (outer,) = agent.store.subagent_sessions(conversation.id)
    (inner,) = agent.store.subagent_sessions(outer.id)
    assert inner.metadata[SUBAGENT_KEY]["depth"] == 2
    assert "inner done" in agent.store.history(outer.id)[2].message.tool_results[0].content
    nested = [e.event.event for e in events if isinstance(e, SubagentProgress) and isinstance(e.event, SubagentProgress)]
    assert any(isinstance(e, TurnFinished) and e.text == "inner done" for e in nested)


@pytest.mark.parametrize("tools", [[], ["  ", ""]])
async def test_an_empty_tool_subset_is_a_tool_error_not_every_tool(fake_server, workspace, tools):
    fake_server.queue(tool_reply(("call_t", "task", {"description": "d", "prompt": "p", "tools": tools})),
                      text_reply("ok"))
    agent = make_agent(fake_server, workspace)
    conversation = agent.new_conversation("x")
    events = await run(agent, conversation, "x")
    (finished,) = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished.result.is_error and "tools is empty" in finished.result.content
    assert agent.store.subagent_sessions(conversation.id) == []


def nested_script(outer_calls: list[FakeResponse], inner: list[FakeResponse]) -> Script:
    """The parent starts JOB-OUTER limited to read_file and task; what JOB-OUTER does is `outer_calls`."""
    def key(request: RecordedRequest) -> str:
        text = user_text(request)
        return "JOB-INNER" if "JOB-INNER" in text else "JOB-OUTER" if "JOB-OUTER" in text else "parent"

    script = Script(
        parent=[tool_reply(("call_outer", "task", {"description": "outer", "prompt": "JOB-OUTER",
                                                   "tools": ["read_file", "task"]})),
                text_reply("top")],
        children={"JOB-OUTER": outer_calls, "JOB-INNER": inner},
    )
    script.key = key  # type: ignore[method-assign]
    return script


async def test_a_grandchild_gets_no_tool_its_limited_parent_lacks(fake_server, workspace):
    script = nested_script(
        [tool_reply(("call_inner", "task", {"description": "inner", "prompt": "JOB-INNER"})), text_reply("outer done")],
        [text_reply("inner done")],
    )
    fake_server.respond_with(script)
    agent = make_agent(fake_server, workspace, ZEPH_AGENT_SUBAGENTS_MAX_DEPTH="2")
    events = await run(agent, agent.new_conversation("x"), "x")
    assert events[-1].text == "top"
    assert offered(script.seen["JOB-OUTER"][0]) == ["read_file", "task"]
    assert offered(script.seen["JOB-INNER"][0]) == ["read_file"]  # not bash, write_file, …; task is beyond max_depth


async def test_a_grandchild_asking_for_a_tool_its_parent_lacks_is_refused(fake_server, workspace):
    script = nested_script(
        [tool_reply(("call_inner", "task", {"description": "inner", "prompt": "JOB-INNER",
                                            "tools": ["read_file", "bash", "write_file"]})),
         text_reply("outer done")],
        [],
    )
    fake_server.respond_with(script)
    agent = make_agent(fake_server, workspace, ZEPH_AGENT_SUBAGENTS_MAX_DEPTH="2")
    conversation = agent.new_conversation("x")
    events = await run(agent, conversation, "x")
    assert events[-1].text == "top"
    inner = [e.event for e in events if isinstance(e, SubagentProgress) and isinstance(e.event, ToolCallFinished)]
    (refused,) = inner
    assert refused.result.is_error
    assert "'bash', 'write_file'" in refused.result.content and "'read_file'" not in refused.result.content
    assert "JOB-INNER" not in script.seen
    (outer,) = agent.store.subagent_sessions(conversation.id)
    assert agent.store.subagent_sessions(outer.id) == []


async def test_a_subagents_bash_approval_names_the_subagent_in_the_terminal_question(fake_server, workspace):
    from zeph_cli.frontends.cli.approval_prompt import render_question
    from zeph_cli.tools.permissions import ApprovalDecision

    description = "Check   the\nbuild " + "x" * 100
    script = Script(
        parent=[tool_reply(("call_t", "task", {"description": description, "prompt": "JOB-BASH"})),
                text_reply("ok")],
        children={"JOB-BASH": [tool_reply(("call_b", "bash", {"command": "echo hi > out.txt"})), text_reply("ran")]},
    )
    fake_server.respond_with(script)
    asked = []

    async def approver(request):
        asked.append(request)
        return ApprovalDecision("yes")

    agent = make_agent(fake_server, workspace, approver=approver)
    await run(agent, agent.new_conversation("x"), "x")
    (request,) = asked
    assert request.tool == "bash" and request.preview == "echo hi > out.txt"  # the preview is the command alone
    assert request.asker.startswith("Check the build xxx") and request.asker.endswith("…")
    assert len(request.asker) == 80 and "\n" not in request.asker
    question = render_question(request)
    assert f"asked by sub-agent: {request.asker}" in question
    assert question.endswith("[a]lways bash in this command: ")


class Boom(Exception):
    """An error no layer expects (a bug, say)."""


def two_jobs(hold: Callable[[RecordedRequest, str, int], None] = lambda request, key, n: None) -> Script:
    return Script(
        parent=[tool_reply(("call_one", "task", {"description": "first", "prompt": "JOB-ONE"}),
                           ("call_two", "task", {"description": "second", "prompt": "JOB-TWO"})),
                text_reply("went on")],
        children={"JOB-ONE": [text_reply("one found")], "JOB-TWO": [text_reply("two found")]},
        hold=hold,
    )


async def test_a_subagent_whose_run_fails_unexpectedly_is_an_error_result_and_the_turn_goes_on(
    fake_server, workspace, monkeypatch
):
    from zeph_cli.agent.subagents import Subagents

    drive = Subagents.drive

    async def failing(self, child, session, request, run, progress):
        if "JOB-ONE" in request.prompt:
            raise Boom("the child broke")
        await drive(self, child, session, request, run, progress)

    monkeypatch.setattr(Subagents, "drive", failing)
    fake_server.respond_with(two_jobs())
    agent = make_agent(fake_server, workspace)
    conversation = agent.new_conversation("x")
    events = await run(agent, conversation, "x")
    assert isinstance(events[-1], TurnFinished) and events[-1].text == "went on"
    assert_every_call_answered(agent, conversation.id)
    finished = {e.call.id: e for e in events if isinstance(e, ToolCallFinished)}
    one, two = finished["call_one"].result, finished["call_two"].result
    sessions = {s.title: s.id for s in agent.store.subagent_sessions(conversation.id)}
    assert one.is_error and "Boom: the child broke" in one.content and f"session {sessions['first']}" in one.content
    assert not two.is_error and "two found" in two.content
    (ended,) = [e for e in events if isinstance(e, SubagentFinished) and e.call_id == "call_one"]
    assert ended.outcome == "failed"


async def test_a_subagent_session_the_store_cannot_make_is_an_error_result(fake_server, workspace, monkeypatch):
    from zeph_cli.agent.subagents import Subagents
    from zeph_cli.errors import StoreError

    def no_session(self, child, parent, request, mode):
        raise StoreError("database is locked")

    monkeypatch.setattr(Subagents, "session", no_session)
    fake_server.respond_with(two_jobs())
    agent = make_agent(fake_server, workspace)
    conversation = agent.new_conversation("x")
    events = await run(agent, conversation, "x")
    assert events[-1].text == "went on"
    assert_every_call_answered(agent, conversation.id)
    results = [e.result for e in events if isinstance(e, ToolCallFinished)]
    assert len(results) == 2 and all(r.is_error and "database is locked" in r.content for r in results)


async def test_an_error_escaping_one_task_call_answers_every_call_and_awaits_the_others(
    fake_server, workspace, monkeypatch
):
    from zeph_cli.agent.subagents import Subagents

    release = threading.Event()
    started = asyncio.Event()

    def hold(request: RecordedRequest, key: str, n: int) -> None:
        if key == "JOB-TWO":
            release.wait(30)  # the second sub-agent is still waiting for its reply when the first fails

    original = Subagents.run

    async def failing(self, conversation, request, progress):
        if "JOB-ONE" in request.prompt:
            await started.wait()
            raise Boom("outside every handler")

        def tell(event):
            if isinstance(event, SubagentStarted):
                started.set()  # the second one runs: now the first fails
            progress(event)

        return await original(self, conversation, request, tell)

    monkeypatch.setattr(Subagents, "run", failing)
    fake_server.respond_with(two_jobs(hold))
    agent = make_agent(fake_server, workspace)
    conversation = agent.new_conversation("x")
    try:
        with pytest.raises(Boom):
            await run(agent, conversation, "x")
    finally:
        release.set()
    assert_every_call_answered(agent, conversation.id)
    rows = agent.store.history(conversation.id)
    results = [r.message.tool_results[0] for r in rows if r.role == "tool"]
    assert [r.tool_call_id for r in results] == ["call_one", "call_two"]
    assert all(r.is_error and "stopped on an error (Boom)" in r.content for r in results)
    (child,) = agent.store.subagent_sessions(conversation.id)  # the second one's, cancelled and awaited
    assert child.title == "second"
    assert_every_call_answered(agent, child.id)
