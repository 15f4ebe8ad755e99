"""Context sources: the registry, the session's policy, and concurrent preparation under deadlines
(plain fake sources), then end to end: a source late on a real `zeph ask` and `zeph context`."""

from __future__ import annotations

import asyncio
import json
import threading

from tests.cli_helpers import err, out, run_zeph
from tests.fakes import openai_wire
from zeph_cli.agent.sources import (
    Registration,
    build_sources,
    prepare_sources,
    request_blocks,
)
from zeph_cli.context.blocks import OPEN, Block, Placement, Source, TurnInput
from zeph_cli.features import isolation_policy

TURN = TurnInput(1, {}, prompt="hello", running=True)
GENEROUS = 30.0  # seconds: a bound on a would-be hang, never a speed check


class Fake(Source):
    """A source whose `prepare` runs `work` (a coroutine function) and gives one block."""

    def __init__(self, name: str, work=None) -> None:
        self.name, self.work, self.prepared = name, work, False

    async def prepare(self, turn: TurnInput) -> list[Block]:
        if self.work is not None:
            await self.work()
        self.prepared = True
        return self.blocks(turn)

    def blocks(self, turn: TurnInput) -> list[Block]:
        return [Block(self.name, f"<{self.name}/>", Placement.BEFORE_TURN)]


async def _fails() -> None:
    raise RuntimeError("the index is locked")


def test_a_source_that_fails_or_is_late_is_left_out_and_said_and_the_others_are_kept():
    never = asyncio.Event()
    sources = [Fake("ok"), Fake("broken", _fails), Fake("slow", never.wait)]
    prepared = asyncio.run(prepare_sources(sources, TURN, 0.2))
    states = {o.name: (o.state, o.reason) for o in prepared.outcomes}
    assert states == {"ok": ("ok", ""), "broken": ("failed", "failed: the index is locked"),
                      "slow": ("late", "not ready within 0.2 s")}
    assert set(prepared.blocks) == {"ok"} and prepared.left_out == {"broken", "slow"}
    assert not sources[2].prepared  # cancelled, not waited for
    blocks = request_blocks(sources, TURN, OPEN, prepared)
    assert [(b.name, b.placement) for b in blocks] == [
        ("ok", Placement.BEFORE_TURN), ("broken", Placement.REPORT), ("slow", Placement.REPORT)
    ]
    assert blocks[2].detail == "left out this turn: not ready within 0.2 s"
    assert [o.note for o in prepared.outcomes if o.left_out] == [
        "context source 'broken' left out of this turn: failed: the index is locked",
        "context source 'slow' left out of this turn: not ready within 0.2 s",
    ]


def test_sources_are_prepared_at_once_not_one_after_another():
    # each waits for the other to have started: one after another, the first would wait past its deadline
    first, second = asyncio.Event(), asyncio.Event()

    async def a() -> None:
        first.set()
        await second.wait()

    async def b() -> None:
        second.set()
        await first.wait()

    prepared = asyncio.run(prepare_sources([Fake("a", a), Fake("b", b)], TURN, GENEROUS))
    assert [o.state for o in prepared.outcomes] == ["ok", "ok"]


def test_blocking_work_in_threads_overlaps():
    # a barrier of two threads: it breaks unless both sources' blocking work runs at the same time
    barrier = threading.Barrier(2, timeout=GENEROUS)

    async def blocking() -> None:
        await asyncio.to_thread(barrier.wait)

    prepared = asyncio.run(prepare_sources([Fake("a", blocking), Fake("b", blocking)], TURN, GENEROUS))
    assert [o.state for o in prepared.outcomes] == ["ok", "ok"], prepared.outcomes


def test_a_source_may_have_its_own_deadline():
    slow = Fake("servers", lambda: asyncio.sleep(0.3))
    slow.deadline = GENEROUS
    prepared = asyncio.run(prepare_sources([slow], TURN, 0.01))
    assert prepared.outcomes[0].state == "ok"


def test_notes_sources_leave_are_collected_in_their_order():
    class Noting(Fake):
        def take_notes(self) -> list[str]:
            return [f"{self.name} says"]

    prepared = asyncio.run(prepare_sources([Noting("b"), Noting("a")], TURN, GENEROUS))
    assert prepared.notes == ["b says", "a says"]


def test_isolation_is_data_the_sources_and_tool_groups_a_session_allows():
    sources = [Fake("memory"), Fake("skills"), Fake("session memory"), Fake("MCP tools"), Fake("time")]
    prepared = asyncio.run(prepare_sources(sources, TURN, GENEROUS))
    assert [b.name for b in request_blocks(sources, TURN, isolation_policy(), prepared)] == ["time"]
    assert len(request_blocks(sources, TURN, OPEN, prepared)) == 5
    isolation = isolation_policy()  # what the features' registrations leave out under isolation
    assert not any(isolation.allows_tools(g) for g in ("memory tools", "skill tools", "MCP tools"))
    assert OPEN.allows_tools("MCP tools")


class Extra(Source):
    """A source a feature would add: one class and one registration."""

    name = "extra"

    def __init__(self, agent) -> None:
        self.agent = agent

    def blocks(self, turn: TurnInput) -> list[Block]:
        return [Block("extra", "<extra/>", Placement.CLOSING, 99)]


def test_a_new_source_is_one_class_and_one_registration():
    registry = [Registration(__name__, "Extra"), Registration(__name__, "Extra", lambda agent: False)]
    [source] = build_sources(agent="an agent", registry=registry)
    assert source.name == "extra" and source.agent == "an agent"
    assert source.blocks(TURN)[0].placement is Placement.CLOSING


# ---- end to end -----------------------------------------------------------------------------


def test_a_late_source_is_left_out_of_the_turn_said_and_shown_by_zeph_context(fake_server, compatible):
    # with no time to wait, recall and memories (which wait for the embedded embedder's vector in a thread) are
    # late: the turn goes on without them, and the sources that need not wait are all there
    env = {**compatible, "ZEPH_CONTEXT_SOURCE_DEADLINE_SECONDS": "0"}
    # an earlier session holds the answer, so recall has something to bring when it is in
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Noted."])))
    told = run_zeph("ask", "Remember: the staging database of project Falcon listens on port 6543.", env=compatible)
    assert told.returncode == 0, err(told)
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Noted."])))
    asked = run_zeph("ask", "Which port does the staging database of project Falcon listen on?", env=env)
    assert asked.returncode == 0, err(asked)
    assert "Noted." in out(asked)
    assert "zeph: warning: context source 'memory' left out of this turn: not ready within 0 s" in err(asked)
    sent = fake_server.requests_to("/v1/chat/completions")[-1].json["messages"]
    assert sent[-1]["content"].endswith("listen on?") and not any("[semantic recall]" in m["content"] for m in sent)
    assert any("<environment>" in m["content"] for m in sent) and any(m["content"].startswith("<time>") for m in sent)

    shown = run_zeph("context", "--json", env=env)
    assert shown.returncode == 0, err(shown)
    rows = {b["name"]: b for b in json.loads(out(shown))["context"]["blocks"]}
    assert rows["memory"] == {"name": "memory", "tokens": 0, "detail": "left out this turn: not ready within 0 s"}
    table = run_zeph("context", env=env)
    row = next(line for line in out(table).splitlines() if line.startswith("memory "))
    assert row.split()[1] == "0" and "left out this turn" in row, out(table)
    assert "context source 'memory' left out of this turn" in err(table)

    # with time to prepare, the same question is answered with the memory source in
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Noted."])))
    again = run_zeph("ask", "Which port does the staging database of project Falcon listen on?", env=compatible)
    assert again.returncode == 0 and "left out of this turn" not in err(again), err(again)
    sent = fake_server.requests_to("/v1/chat/completions")[-1].json["messages"]
    recalled = [m["content"] for m in sent if "[semantic recall]" in m["content"]]
    assert recalled and "6543" in recalled[0], sent
