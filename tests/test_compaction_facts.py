"""Facts kept through compaction: long sessions with one distinct fact line per turn among filler,
run through `Agent.run_turn` and the real openai SDK against the fake OpenAI-compatible server, which
counts every request's tokens as a server does and refuses any request over its window.

The summarizer follows instructions (`ScriptedModel` keeps every FACT-… line it was shown), so a fact
missing from the last request was lost by zeph: by a summary slot too small for the summary, or by a cut
that dropped a fact line before filler. The budget invariant holds throughout: no request over budget.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import pytest

from zeph_cli.agent import Agent, AgentServices, AgentWarning, ContextPrepared, TurnFailed, TurnFinished
from zeph_cli.config import load_config
from zeph_cli.context.invariant import budget_problem
from zeph_cli.paths import database_path
from zeph_cli.providers import create_provider, resolve_settings
from zeph_cli.providers.summary import side_job_settings
from zeph_cli.store import ConversationStore, open_database
from zeph_cli.tokens import default_counter
from zeph_cli.tools.permissions import approve_all
from tests.agent_helpers import AGENTS, close_agents  # noqa: F401  (autouse fixture)
from tests.fakes.openai_usage import ContextWindow
from tests.fakes.server import FakeResponse, RecordedRequest
from tests.scripted_model import CHAT_PATH, ScriptedModel

WORDS = (
    "the a to of and in that is for it this with as on be we can should will file function test error config "
    "value return call make sure check change update read write path module class import build run output line "
    "case type list string number request response session store message token budget context history summary"
).split()
COLOURS = ("red", "blue", "green", "amber", "violet", "teal", "ochre", "slate")


def filler(rng: random.Random, chars: int) -> str:
    """Plain sentences of common words: text a later turn can do without."""
    out: list[str] = []
    while sum(len(s) + 1 for s in out) < chars:
        out.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 18))).capitalize() + ".")
    return " ".join(out)


def fact_line(n: int) -> str:
    """One short distinct fact: a key and its value."""
    return f"FACT-K{n:03d} = {COLOURS[n % len(COLOURS)]}-{(n * 7919) % 1000}"


def chat_prompt(rng: random.Random, n: int) -> str:
    return f"Turn {n}: {filler(rng, 200)}\n{fact_line(n)}\n{filler(rng, 60)}"


@dataclass
class WindowedModel:
    """The scripted model behind a server whose window is `window.tokens`: a request over it is refused
    with the real context_length_exceeded error and counted."""

    scripted: ScriptedModel
    window: ContextWindow
    over: int = 0
    last_chat: str = ""  # every message's text in the last chat request answered

    def __call__(self, request: RecordedRequest) -> FakeResponse | None:
        if request.path != CHAT_PATH:
            return self.scripted(request)
        rejection = self.window.check(self.window.measure(request.json))
        if rejection is not None:
            self.over += 1
            return rejection
        if request.json.get("stream"):
            self.last_chat = "\n".join(str(m.get("content") or "") for m in request.json["messages"])
        return self.scripted(request)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    rng = random.Random(3)
    for n in range(3):
        (root / f"big_{n}.txt").write_text(
            "\n".join(f"row {i}: {filler(rng, 80)}" for i in range(160)) + "\n", encoding="utf-8"
        )
    for n in range(4):
        (root / f"small_{n}.txt").write_text(
            "\n".join(f"row {i}: {filler(rng, 60)}" for i in range(12)) + "\n", encoding="utf-8"
        )
    return root


def windowed(fake_server, tokens: int) -> WindowedModel:
    model = WindowedModel(ScriptedModel(), ContextWindow(tokens, default_counter().count))
    fake_server.respond_with(model)
    return model


def make_agent(fake_server, workspace: Path, budget: int) -> Agent:
    environ = {
        "ZEPH_LLM_PROVIDER": "compatible",
        "ZEPH_LLM_BASE_URL": fake_server.url + "/v1",
        "ZEPH_LLM_MODEL": "gpt-4o",
        "ZEPH_LLM_MAX_RETRIES": "0",
        "ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": str(budget),
        "ZEPH_MEMORY_LONG_TERM_ENABLED": "false",
        "ZEPH_MEMORY_PROFILE_ENABLED": "false",
    }
    config = load_config(env=environ).config
    settings = resolve_settings(config, environ)
    agent = Agent(
        config=config,
        store=ConversationStore(open_database(database_path())),
        provider=create_provider(settings),
        cwd=workspace,
        approver=approve_all,
        services=AgentServices(helper_settings=side_job_settings(config, environ, settings)),
    )
    AGENTS.append(agent)
    return agent


@dataclass
class Session:
    kept: int  # fact lines, key and value verbatim, in the last chat request
    reports: list  # every ContextPrepared report of the session
    over: int  # requests the server refused as over its window


async def run_session(fake_server, workspace: Path, *, budget: int, turns: int, tools: bool) -> Session:
    model = windowed(fake_server, budget)
    agent = make_agent(fake_server, workspace, budget)
    conversation = agent.new_conversation("facts")
    rng = random.Random(11)
    reports = []
    for n in range(turns):
        if tools:
            path = f"big_{n % 3}.txt" if n % 3 == 1 else f"small_{n % 4}.txt"
            model.scripted.call((f"call_read{n}", "read_file", {"path": path}))
        model.scripted.say(filler(rng, 700))
        events = [event async for event in agent.run_turn(conversation, chat_prompt(rng, n))]
        assert any(isinstance(e, TurnFinished) for e in events), [
            e for e in events if isinstance(e, (TurnFailed, AgentWarning))
        ]
        reports += [e.report for e in events if isinstance(e, ContextPrepared)]
    kept = sum(fact_line(n) in model.last_chat for n in range(turns))
    return Session(kept, reports, model.over)


def assert_within_budget(session: Session) -> None:
    assert session.over == 0
    assert all(budget_problem(r) is None for r in session.reports)
    assert max(r.used_tokens for r in session.reports) <= session.reports[0].capacity


async def test_a_hundred_chat_turns_at_8k_keep_every_fact_line(fake_server, workspace):
    session = await run_session(fake_server, workspace, budget=8000, turns=100, tools=False)
    assert_within_budget(session)
    assert session.kept == 100


async def test_a_hundred_tool_heavy_turns_at_8k_keep_95_fact_lines(fake_server, workspace):
    session = await run_session(fake_server, workspace, budget=8000, turns=100, tools=True)
    assert_within_budget(session)
    assert session.kept >= 95


async def test_forty_turns_with_a_3k_window_keep_every_fact_line(fake_server, workspace):
    session = await run_session(fake_server, workspace, budget=3000, turns=40, tools=False)
    assert_within_budget(session)
    assert session.kept == 40
