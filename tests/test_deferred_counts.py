"""`zeph ask` builds the exact tokenizer only when bounds cannot decide, and then sends exactly the
request exact counts would have produced."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.agent_helpers import AGENTS, close_agents  # noqa: F401  (autouse fixture)
from tests.fakes import openai_wire
from zeph_cli.agent import Agent, AgentServices
from zeph_cli.config import load_config
from zeph_cli.providers import create_provider, resolve_settings
from zeph_cli.store import ConversationStore, open_database
from zeph_cli.tokens import LOWER, DeferredCounter, TiktokenCounter

SAMPLES = [
    "hello there",
    "def f(x):\n    return {k: v for k, v in x.items() if v is not None}  # comprehension",
    "日本語のテキストとemoji 🎉🎉 mixed with English words.",
    " " * 300 + "=" * 200,
    "a" * 1000,
]


@pytest.mark.parametrize("text", SAMPLES)
def test_bounds_hold_the_exact_count_between_them(text):
    exact = TiktokenCounter().count(text)
    counter = DeferredCounter()
    upper = counter.count(text)
    with counter.bounds(LOWER):
        lower = counter.count(text)
    assert lower <= exact <= upper
    assert not counter.exact and counter.name.endswith("upper-bound")
    assert counter.make_exact().count(text) == exact and counter.name == "cl100k_base"


def _agent(fake_server, tmp_path: Path, name: str, budget: int, one_shot: bool) -> Agent:
    environ = {"ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": fake_server.url + "/v1",
               "ZEPH_LLM_MODEL": "gpt-4o", "ZEPH_LLM_MAX_RETRIES": "0",
               "ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": str(budget)}
    config = load_config(env=environ).config
    store = ConversationStore(open_database(tmp_path / f"{name}.db"))
    agent = Agent(config=config, store=store, provider=create_provider(resolve_settings(config, environ)),
                  cwd=tmp_path, one_shot=one_shot,
                  services=AgentServices(clock=lambda: datetime(2026, 11, 27, 9, 0, tzinfo=timezone.utc)))
    AGENTS.append(agent)
    return agent


PROMPTS = [
    "hi",
    "Please summarise the design of the cache layer: " + "the cache keeps entries keyed by hash. " * 40,
    "and the eviction?",
    "Now list every file we touched, with paths like src/cache/store.py and tests/test_cache.py. " * 15,
    "thanks",
]


async def _requests(fake_server, tmp_path: Path, name: str, budget: int, one_shot: bool) -> tuple[list, bool]:
    agent = _agent(fake_server, tmp_path, name, budget, one_shot)
    await agent.start()
    conversation = agent.new_conversation("t")
    before = len(fake_server.requests_to("/v1/chat/completions"))
    for prompt in PROMPTS:
        async for _ in agent.run_turn(conversation, prompt):
            pass
    sent = fake_server.requests_to("/v1/chat/completions")[before:]
    exact = not isinstance(agent.counter, DeferredCounter) or agent.counter.exact
    return [(r.json["messages"], [t["function"]["name"] for t in r.json.get("tools", [])], r.json.get("max_tokens"))
            for r in sent], exact


@pytest.mark.parametrize("budget", [0, 6000, 2500])
async def test_a_one_shot_agent_sends_what_exact_counts_would(fake_server, tmp_path, budget):
    reply = "Understood. " * 60
    fake_server.route("/v1/chat/completions", openai_wire.stream_response(openai_wire.text_chunks([reply])))
    exact_requests, _ = await _requests(fake_server, tmp_path, "exact", budget, one_shot=False)
    deferred_requests, went_exact = await _requests(fake_server, tmp_path, "deferred", budget, one_shot=True)
    assert deferred_requests == exact_requests
    # a 128k window never needs the encoding for these turns; at 6k the bytes of the system prompt and
    # tool schemas alone (an upper bound) exceed the budget, and at 2.5k the history is compacted
    assert went_exact == (budget != 0)


def test_the_parsed_ranks_are_cached_and_a_bad_cache_is_rebuilt(tmp_path, monkeypatch):
    from zeph_cli import tokens

    source = tokens.bundled_bpe_path()
    ranks = tokens.cached_bpe_ranks(source, tokens.CL100K_SHA256, tmp_path / "cache")
    [cached] = (tmp_path / "cache").glob("*.marshal")
    monkeypatch.setattr(tokens, "load_bpe_ranks", lambda *_: pytest.fail("parsed again"))
    assert tokens.cached_bpe_ranks(source, tokens.CL100K_SHA256, tmp_path / "cache") == ranks
    monkeypatch.undo()
    import marshal

    for damaged in (b"\x00not marshal", marshal.dumps({b"a": "x", b"b": 2}), marshal.dumps({b"a": 0, b"b": 1})):
        cached.write_bytes(damaged)  # unreadable, or well-formed ranks that are not the ones written
        assert tokens.cached_bpe_ranks(source, tokens.CL100K_SHA256, tmp_path / "cache") == ranks
        assert cached.read_bytes() != damaged  # rewritten
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder would be")
    assert tokens.cached_bpe_ranks(source, tokens.CL100K_SHA256, blocked / "cache") == ranks  # unwritable: parsed


async def test_without_reported_usage_the_stand_in_is_counted_exactly(fake_server, tmp_path):
    from zeph_cli.agent.events import UsageReported

    reply = openai_wire.stream_response(openai_wire.text_chunks(["fine"], usage=None))
    fake_server.route("/v1/chat/completions", reply)
    used = []
    for name, one_shot in (("exact", False), ("deferred", True)):
        agent = _agent(fake_server, tmp_path, name, 0, one_shot)
        events = [e async for e in agent.run_turn(agent.new_conversation("t"), "hello there")]
        used.append(next(e.report.used_tokens for e in events if isinstance(e, UsageReported)))
    assert used[0] == used[1]


def test_ask_json_reports_exact_block_counts(fake_server, compatible):
    import json as json_module

    from tests.cli_helpers import out, run_zeph

    fake_server.route("/v1/chat/completions", openai_wire.stream_response(openai_wire.text_chunks(["ok"])))
    asked = json_module.loads(out(run_zeph("ask", "--json", "hi", env=compatible)))
    shown = json_module.loads(out(run_zeph("context", "--json", env=compatible)))

    def base(report: dict) -> int:
        return next(b["tokens"] for b in report["blocks"] if b["name"] == "base prompt")

    assert base(asked["context"]) == base(shown["context"]) > 0


def test_an_export_leaves_out_counts_stored_from_bounds(fake_server, compatible):
    import json as json_module

    from tests.cli_helpers import out, run_zeph

    fake_server.route("/v1/chat/completions", openai_wire.stream_response(openai_wire.text_chunks(["ok"])))
    assert run_zeph("ask", "hi", env=compatible).returncode == 0
    exported = json_module.loads(out(run_zeph("sessions", "export", "1", "--format", "json", env=compatible)))
    assert [m["token_count"] for m in exported["messages"]] == [None, None]  # bounds, not token counts
    assert run_zeph("context", env=compatible).returncode == 0  # counts exactly, and stores what it counted
    exported = json_module.loads(out(run_zeph("sessions", "export", "1", "--format", "json", env=compatible)))
    assert all(isinstance(m["token_count"], int) and m["token_count"] > 0 for m in exported["messages"])
