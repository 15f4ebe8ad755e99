"""The context engine in the agent loop, against the fake OpenAI-compatible server:
budgets, the soft and hard tiers, tool-pair summaries, reactive retry, proactive
compression, the probe, compress_context and the exhaustion guard.

Each test runs real turns through `Agent.run_turn` with the real openai SDK; a
`ScriptedModel` answers chat requests from a script and side jobs (summaries,
probe questions and answers) from what they were sent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zeph_cli.agent import (
    Agent,
    AgentWarning,
    CompactionFinished,
    CompactionStarted,
    CompactionStatus,
    ContextPrepared,
    TurnFailed,
    TurnFinished,
)
from zeph_cli.config import load_config
from zeph_cli.context.compaction import EXHAUSTED_WARNING
from zeph_cli.context.probe import REJECTED_MESSAGE, VALIDATING_MESSAGE
from zeph_cli.paths import database_path
from zeph_cli.providers import create_provider, resolve_settings
from zeph_cli.providers.summary import side_job_settings
from zeph_cli.store import CompactionStore, ConversationStore, open_database
from zeph_cli.tools.permissions import approve_all
from tests.agent_helpers import AGENTS, close_agents  # noqa: F401  (autouse fixture)
from tests.fakes import openai_wire
from tests.scripted_model import CHAT_PATH, FACT, ScriptedModel

OUTPUT_LINES = 60  # lines in the file the model reads: a tool output worth pruning


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    lines = [f"line {i}: the quick brown fox jumps over the lazy dog {i * 7}" for i in range(OUTPUT_LINES)]
    (root / "notes.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.fixture
def model(fake_server) -> ScriptedModel:
    scripted = ScriptedModel()
    fake_server.respond_with(scripted)
    return scripted


def make_agent(fake_server, workspace: Path, **env: str) -> Agent:
    environ = {
        "ZEPH_LLM_PROVIDER": "compatible",
        "ZEPH_LLM_BASE_URL": fake_server.url + "/v1",
        "ZEPH_LLM_MODEL": "gpt-4o",
        "ZEPH_LLM_MAX_RETRIES": "0",
        **env,
    }
    config = load_config(env=environ).config
    settings = resolve_settings(config, environ)
    agent = Agent(
        config=config,
        store=ConversationStore(open_database(database_path())),
        provider=create_provider(settings),
        cwd=workspace,
        approver=approve_all,
        helper_settings=side_job_settings(config, environ, settings),
    )
    AGENTS.append(agent)
    return agent


async def run(agent: Agent, conversation, prompt: str) -> list:
    return [event async for event in agent.run_turn(conversation, prompt)]


def of(events: list, kind: type) -> list:
    return [e for e in events if isinstance(e, kind)]


def sent_text(body: dict) -> str:
    return "\n".join(str(m.get("content") or "") for m in body["messages"])


def chat_requests(fake_server) -> list[dict]:
    return [r.json for r in fake_server.requests_to(CHAT_PATH) if r.json.get("stream")]


# ---- a long session under a small budget --------------------------------------------------

SMALL_BUDGET = {
    "ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": "9000",
    "ZEPH_MEMORY_PRUNE_PROTECT_TOKENS": "1500",
}
PLANTED = {0: "FACT-ALPHA7", 9: "FACT-BRAVO3", 23: "FACT-CHARLIE5"}


def turn_prompt(i: int) -> str:
    fact = PLANTED.get(i)
    planted = f" Remember this code for later: {fact}." if fact else ""
    return f"Turn {i}: tell me something about step {i} of the plan.{planted}"


def turn_reply(i: int) -> str:
    return f"Step {i} of the plan: " + " ".join(f"detail {i}.{k} is settled and recorded" for k in range(18))


async def test_forty_turns_under_a_small_budget_stay_within_it_and_keep_planted_facts(fake_server, model, workspace):
    agent = make_agent(fake_server, workspace, **SMALL_BUDGET)
    conversation = agent.new_conversation("long session")
    reports = []
    events_by_turn = []
    for i in range(40):
        if i % 5 == 2:  # every fifth turn reads a file first: a tool pair with a sizeable output
            model.call((f"call_read{i}", "read_file", {"path": "notes.txt"}))
        model.say(turn_reply(i))
        events = await run(agent, conversation, turn_prompt(i))
        assert of(events, TurnFinished), [e for e in events if isinstance(e, (TurnFailed, AgentWarning))]
        reports += [e.report for e in of(events, ContextPrepared)]
        events_by_turn.append(events)

    # Never over the budget: every request fit the prompt's share of it.
    capacity = reports[0].capacity
    assert capacity == 7200  # 9000 minus the 20% response reserve
    assert max(r.used_tokens for r in reports) <= capacity
    # Compaction really happened, more than once, and pruning too.
    finished = [e.result for events in events_by_turn for e in of(events, CompactionFinished)]
    hard = [r for r in finished if r.kind == "hard"]
    assert len(hard) >= 2, [r.describe() for r in finished]
    assert any(r.kind == "soft" and r.outputs_pruned for r in finished)
    assert all(r.tokens_after < r.tokens_before for r in hard)
    assert model.count("compaction") >= 2

    # The last request still carries every planted fact (through the summaries) ...
    last = chat_requests(fake_server)[-1]
    assert set(FACT.findall(sent_text(last))) == set(PLANTED.values())
    # ... and the most recent exchange verbatim, the new prompt last.
    contents = [m.get("content") for m in last["messages"]]
    assert contents[-1] == turn_prompt(39)
    assert turn_reply(38) in contents and turn_prompt(38) in contents

    # The store: the user still has all 40 prompts; the agent sees one summary and the recent tail.
    store = agent.store
    user_rows = store.history(conversation.id, user_visible=True)
    assert [r.message.content for r in user_rows if r.role == "user"] == [turn_prompt(i) for i in range(40)]
    agent_rows = store.history(conversation.id, agent_visible=True)
    summaries = [r for r in agent_rows if r.metadata.get("compaction_summary")]
    assert len(summaries) == 1 and not summaries[0].user_visible
    compacted = [r for r in store.history(conversation.id, agent_visible=False) if r.user_visible]
    assert compacted and all(r.compacted_at for r in compacted)
    metrics = CompactionStore(store.db).metrics(conversation.id)
    assert metrics.compaction_events >= 3 and metrics.compaction_tokens_saved > 0 and metrics.tool_output_prunes >= 1
