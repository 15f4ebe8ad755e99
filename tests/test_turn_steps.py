"""Each step of a turn on its own, with plain fakes for what it uses: no Agent, no provider server.

The steps take a `TurnState` and a `TurnDeps`; here the deps are a fake store that keeps rows in
lists, a provider that plays scripted stream events, a tool offer, a compactor and a tool runner
that record what they are asked. Reports, profiles, messages and counters are the real values.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from zeph_cli.agent.events import (
    AgentWarning,
    CompactionFinished,
    ContextPrepared,
    ReplyDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFailed,
    TurnFinished,
    UsageReported,
)
from zeph_cli.agent.provider_errors import CONTEXT_LENGTH_RETRIES, on_provider_error
from zeph_cli.agent.replies import reply_cap, store_reply
from zeph_cli.agent.tool_calls import ToolOutcome, interrupted_result
from zeph_cli.agent.turn import TurnDeps, TurnState, withdraw_unanswered
from zeph_cli.agent.turn_loop import prepare, run_tool_round, send, settled_tools, turn_events
from zeph_cli.config import Config
from zeph_cli.context.compaction.result import CompactionResult
from zeph_cli.context.report import ContextBlock, ContextReport
from zeph_cli.errors import ContextBudgetExceeded, ContextLengthExceeded, ProviderError, StoreError
from zeph_cli.messages import (
    Message,
    ReplyBuilder,
    StreamEnd,
    TextDelta,
    ToolCallDelta,
    ToolResultPart,
    Usage,
    UsageUpdate,
)
from zeph_cli.models import ModelProfile
from zeph_cli.store.conversations import Conversation
from zeph_cli.tokens import NEEDS_EXACT, ApproximateCounter, Calibration
from zeph_cli.tools.base import Tool, ToolSet
from zeph_cli.features.memory.tool_specs import MEMORY_SAVE, MEMORY_SEARCH
from zeph_cli.tools.registry import tools_for_mode

CONVERSATION = Conversation(1, "t", "2026-11-28", "2026-11-28", "fake", "m1", "/w")


class FakeStore:
    """Rows in lists; `fail` makes adding a message fail as a full disk would."""

    def __init__(self, db=None) -> None:
        self.rows: list[SimpleNamespace] = []
        self.withdrawn: list[tuple[int, str]] = []
        self.calibrations: dict[tuple[str, str], Calibration] = {}
        self.fail = False
        self.db = db

    def add_message(self, conversation_id, message, *, token_count=None, token_counter=None, metadata=None):
        if self.fail:
            raise StoreError("database or disk is full")
        row = SimpleNamespace(id=100 + len(self.rows), message=message, metadata=metadata or {},
                              token_count=token_count, token_counter=token_counter)
        self.rows.append(row)
        return row

    def withdraw_prompt(self, message_id, reason):
        self.withdrawn.append((message_id, reason))

    def calibration(self, provider, model):
        return self.calibrations.get((provider, model), Calibration())

    def save_calibration(self, provider, model, calibration):
        self.calibrations[(provider, model)] = calibration


class FakeProvider:
    """Plays one scripted reply per request: stream events, or an exception raised where it stands."""

    name, model, endpoint = "fake", "m1", "http://fake"
    settings = SimpleNamespace(kind="compatible")

    def __init__(self, *replies: list) -> None:
        self.replies = list(replies)
        self.requests: list = []
        self.forgot = False

    async def stream(self, request):
        self.requests.append(request)
        for event in self.replies.pop(0):
            if isinstance(event, BaseException):
                raise event
            yield event

    def forget_facts(self) -> None:
        self.forgot = True


class FakeOffer:
    def __init__(self, tools: ToolSet | None = None) -> None:
        self.tools = tools or ToolSet()
        self.unavailable: str | None = None
        self.decided: list = []

    def offered(self) -> ToolSet:
        return ToolSet() if self.unavailable else self.tools

    def settled(self, decide):
        self.decided.append(decide(self.offered()))
        return self.offered()

    def warnings(self, conversation):
        return [AgentWarning("tool warning")] if self.unavailable else []

    def go_without(self, reason: str) -> None:
        self.unavailable = reason


class FakeCompactor:
    def __init__(self, saved: int = 400) -> None:
        self.saved = saved
        self.calls: list[str] = []

    def start_turn(self) -> None:
        self.calls.append("start_turn")

    async def before_request(self, conversation, report):
        self.calls.append("before_request")
        yield CompactionFinished(CompactionResult("soft", 900, 500))

    async def compact(self, conversation, reason):
        self.calls.append(reason)
        yield CompactionFinished(CompactionResult("hard", 900, 900 - self.saved))

    async def after_tool_round(self, conversation) -> None:
        self.calls.append("after_tool_round")


class FakeRunner:
    """Answers each call with its name and arguments; `cancel_on` raises a cancellation at that call."""

    def __init__(self, cancel_on: str | None = None) -> None:
        self.tools = ToolSet()
        self.cancel_on = cancel_on
        self.ran: list[str] = []
        self.progress: asyncio.Queue[object] = asyncio.Queue()  # what running calls report (none here)

    async def run(self, call, problem):
        if call.name == self.cancel_on:
            raise asyncio.CancelledError
        self.ran.append(call.name)
        return ToolOutcome(ToolResultPart(call.id, f"{call.name} done", name=call.name), "auto", "ok", 5, 0)

    def record_interrupted(self, call, what="interrupted by the user before it finished"):
        return interrupted_result(call, what)


def report(used: int = 100, budget: int = 1000, notes: tuple[str, ...] = (), tools: int = 0) -> ContextReport:
    blocks = (ContextBlock("history", used - tools),) + ((ContextBlock("tools", tools),) if tools else ())
    return ContextReport(blocks, window=8000, budget=budget, reserved_for_response=100, soft_threshold=0.7,
                         hard_threshold=0.9, notes=notes, raw_tokens=used)


def make(*replies: list, reports: list[ContextReport] | None = None, db=None, **given) -> SimpleNamespace:
    """The deps (fakes, recording what they are asked) and a fresh turn."""
    config = Config()
    rec = SimpleNamespace(profile=ModelProfile("m1", 8000, 2000), contexts=[], learned=[], after=[], built=False,
                          compactor=FakeCompactor(), runner=FakeRunner(), store=FakeStore(db),
                          provider=FakeProvider(*replies), offer=FakeOffer(), reports=list(reports or [report()]))

    def context_for(conversation, system, tools):
        rec.contexts.append(tools)
        shown = rec.reports.pop(0) if len(rec.reports) > 1 else rec.reports[0]
        return [Message.user("hello")], shown, shown.raw_tokens

    def set_profile(profile):
        rec.profile = profile

    fields = dict(
        store=rec.store, provider=rec.provider, model_label="m1", llm=config.llm, memory=config.memory,
        max_tool_rounds=3, counter=ApproximateCounter, profile=lambda: rec.profile, set_profile=set_profile,
        context_for=context_for, history=lambda conversation: [], tools=rec.offer, compactor=lambda: rec.compactor,
        compactor_built=lambda: rec.built, runner=lambda conversation, tools: rec.runner, sandbox_notice=lambda: None,
        learn_from_reply=lambda conversation, text: rec.learned.append(text),
        after_turn=lambda conversation, isolated: rec.after.append(isolated),
    )
    fields.update(given)
    rec.deps = TurnDeps(**fields)
    rec.turn = TurnState(CONVERSATION, None, True, set(), prompt_id=7)
    return rec


async def collect(events) -> list:
    return [event async for event in events]


def builder_of(*events) -> ReplyBuilder:
    builder = ReplyBuilder()
    for event in events:
        builder.add(event)
    return builder


# ---- prepare ------------------------------------------------------------------------------


async def test_prepare_sends_the_context_as_assembled_and_leaves_the_compactor_unbuilt():
    rec = make()
    events = await collect(prepare(rec.deps, rec.turn, ToolSet()))
    assert [type(e) for e in events] == [ContextPrepared]
    assert rec.turn.messages == [Message.user("hello")] and rec.turn.report.used_tokens == 100
    assert rec.compactor.calls == [] and not rec.turn.ended


async def test_prepare_compacts_when_the_compactor_may_act_and_says_so_in_the_report():
    rec = make(reports=[report(850), report(500)])
    rec.built = True
    events = await collect(prepare(rec.deps, rec.turn, ToolSet()))
    assert [type(e) for e in events] == [CompactionFinished, ContextPrepared]
    assert rec.compactor.calls == ["before_request"] and len(rec.contexts) == 2  # assembled again after it
    assert events[-1].report.used_tokens == 500 and events[-1].report.compaction == (events[0].result.describe(),)
    assert rec.turn.changes == []


async def test_prepare_ends_the_turn_and_withdraws_the_prompt_when_the_request_cannot_fit():
    rec = make(reports=[report(used=2000)])
    events = await collect(prepare(rec.deps, rec.turn, ToolSet()))  # compacting first frees nothing here
    assert [type(e) for e in events] == [CompactionFinished, ContextPrepared, TurnFailed]
    assert rec.compactor.calls == ["before_request"]
    assert isinstance(events[2].error, ContextBudgetExceeded) and events[2].prompt_withdrawn
    assert rec.turn.ended and rec.store.withdrawn == [(7, str(events[2].error))]


# ---- send and provider errors -----------------------------------------------------------------


async def test_send_streams_the_reply_within_the_reply_cap():
    rec = make([TextDelta("Hel"), TextDelta("lo"), StreamEnd("stop")])
    rec.turn.report = report(300)
    builder = ReplyBuilder()
    events = await collect(send(rec.deps, rec.turn, ToolSet(), builder))
    assert events == [ReplyDelta("Hel"), ReplyDelta("lo")] and builder.content == "Hello"
    request = rec.provider.requests[0]
    assert request.max_tokens == reply_cap(0, rec.profile, rec.turn.report) == rec.turn.max_tokens
    assert request.max_tokens <= 1000 - 300 and request.context_window == 1000 and request.stream


async def test_send_keeps_what_arrived_when_the_turn_is_cancelled():
    rec = make([TextDelta("half a rep"), asyncio.CancelledError()])
    rec.turn.report = report()
    with pytest.raises(asyncio.CancelledError):
        await collect(send(rec.deps, rec.turn, ToolSet(), ReplyBuilder()))
    [row] = rec.store.rows
    assert row.message.content == "half a rep" and row.metadata == {"partial": True, "error": "interrupted", "model": "m1"}
    assert rec.turn.answered


async def test_a_model_without_tools_is_asked_again_without_them():
    tools = tools_for_mode("ask")
    rec = make([ProviderError("llama.cpp: tools are not supported by this template")])
    rec.turn.report = report()
    events = await collect(send(rec.deps, rec.turn, tools, ReplyBuilder()))
    assert rec.turn.retry and not rec.turn.ended
    assert rec.offer.unavailable == "fake model m1 does not support tools"
    assert all(not isinstance(e, TurnFailed) for e in events)


async def test_a_context_length_error_teaches_the_window_and_asks_for_a_retry(tmp_path):
    from zeph_cli.store.database import open_database
    from zeph_cli.store.windows import remembered_window

    db = open_database(tmp_path / "zeph.db")
    rec = make(db=db)
    exc = ContextLengthExceeded("the prompt is too long", provider="fake", limit=4096)
    events = await collect(on_provider_error(rec.deps, rec.turn, SimpleNamespace(tools=()), ReplyBuilder(), exc))
    assert rec.profile.context_window == 4096 and rec.turn.retry and rec.turn.context_retries == 1
    assert "4,096 tokens" in events[0].text and rec.provider.forgot
    assert remembered_window(db, "fake", "m1", "http://fake")[0] == 4096
    assert rec.compactor.calls == []  # the next request is fitted to the learned window instead


async def test_a_context_length_error_without_a_window_compacts_then_gives_up():
    rec = make()
    exc = ContextLengthExceeded("the prompt is too long", provider="fake")
    events = await collect(on_provider_error(rec.deps, rec.turn, SimpleNamespace(tools=()), ReplyBuilder(), exc))
    assert rec.compactor.calls == ["reactive_retry"] and rec.turn.retry and len(rec.turn.changes) == 1
    assert [type(e) for e in events] == [CompactionFinished]
    rec.turn.retry, rec.turn.context_retries = False, CONTEXT_LENGTH_RETRIES
    events = await collect(on_provider_error(rec.deps, rec.turn, SimpleNamespace(tools=()), ReplyBuilder(), exc))
    assert [type(e) for e in events] == [TurnFailed] and rec.turn.ended
    assert f"after compacting ({CONTEXT_LENGTH_RETRIES} attempts)" in str(events[0].error)
    assert events[0].prompt_withdrawn and rec.store.withdrawn[0][0] == 7


async def test_any_other_provider_error_ends_the_turn_keeping_the_partial_reply():
    rec = make([TextDelta("so far"), ProviderError("502 bad gateway", provider="fake", status=502)])
    rec.turn.report = report()
    events = await collect(send(rec.deps, rec.turn, ToolSet(), ReplyBuilder()))
    failed = events[-1]
    assert isinstance(failed, TurnFailed) and failed.partial_message_id == rec.store.rows[0].id
    assert not failed.prompt_withdrawn and rec.turn.ended and rec.store.withdrawn == []
    assert rec.store.rows[0].metadata["error"] == "502 bad gateway"


# ---- storing the reply --------------------------------------------------------------------------


async def test_a_plain_reply_is_stored_with_its_usage_and_ends_the_turn():
    rec = make()
    rec.turn.report, rec.turn.raw_estimate, rec.turn.isolated = report(), 100, True
    builder = builder_of(TextDelta("Hi there"), UsageUpdate(Usage(input_tokens=120, output_tokens=3)), StreamEnd("stop"))
    events = await collect(store_reply(rec.deps, rec.turn, builder))
    assert [type(e) for e in events] == [UsageReported, TurnFinished]
    [row] = rec.store.rows
    assert row.message == Message.assistant("Hi there") and row.metadata["model"] == "m1"
    assert row.metadata["usage"]["input_tokens"] == 120 and row.token_counter == "chars/4"
    assert events[1].message_id == row.id and rec.turn.ended and rec.turn.answered
    assert rec.learned == ["Hi there"] and rec.after == [True]  # an isolated session: summaries know it
    assert rec.store.calibrations[("fake", "m1")].samples == 1  # the server's count against the estimate


async def test_a_reply_that_cannot_be_stored_is_raised_with_its_text():
    from zeph_cli.errors import ReplyNotStored

    rec = make()
    rec.turn.report = report()
    rec.store.fail = True
    with pytest.raises(ReplyNotStored) as raised:
        await collect(store_reply(rec.deps, rec.turn, builder_of(TextDelta("keep me"), StreamEnd())))
    assert raised.value.text == "keep me" and not rec.turn.answered


async def test_tool_calls_get_unique_ids_and_a_round_is_counted():
    rec = make()
    rec.turn.report = report()
    rec.turn.used_ids = {"abc"}
    builder = builder_of(ToolCallDelta(0, "abc", "read_file", '{"path": "a.txt"}'), StreamEnd("tool_calls"))
    events = await collect(store_reply(rec.deps, rec.turn, builder))
    assert [type(e) for e in events] == [UsageReported] and not rec.turn.ended and rec.turn.rounds == 1
    [(call, problem)] = rec.turn.parsed
    assert call.id != "abc" and call.id in rec.turn.used_ids and problem is None
    assert rec.store.rows[0].message.tool_calls[0].id == call.id


async def test_the_round_limit_answers_every_call_and_ends_the_turn():
    rec = make()
    rec.turn.report, rec.turn.rounds = report(), 3
    builder = builder_of(ToolCallDelta(0, "c1", "read_file", "{}"), ToolCallDelta(1, "c2", "bash", "{}"), StreamEnd())
    events = await collect(store_reply(rec.deps, rec.turn, builder))
    assert [type(e) for e in events] == [UsageReported, AgentWarning, TurnFinished]
    assert "stopped after 3 tool rounds" in events[1].text and events[2].stop_reason == "max_tool_iterations"
    results = [row.message.parts[0] for row in rec.store.rows[1:]]
    assert [r.content for r in results] == ["Not completed: this turn reached its limit of 3 tool rounds."] * 2
    assert [row.metadata for row in rec.store.rows[1:]] == [{"decision": "limit"}] * 2 and rec.turn.ended


async def test_a_server_that_left_the_tool_schemas_out_turns_tools_off():
    rec = make()
    rec.turn.report = report(used=3000, budget=8000, tools=2000)  # the schemas are two thirds of the request
    builder = builder_of(TextDelta("ok"), UsageUpdate(Usage(input_tokens=1000, output_tokens=1)), StreamEnd())
    events = await collect(store_reply(rec.deps, rec.turn, builder))
    assert rec.offer.unavailable and "left" in rec.offer.unavailable
    warnings = [e.text for e in events if isinstance(e, AgentWarning)]
    assert warnings == [] or warnings[0].startswith("running without tools:")  # said once per data dir


# ---- tool rounds and the whole loop ---------------------------------------------------------------


async def test_a_tool_round_stores_each_result_and_answers_the_calls_a_cancellation_left():
    rec = make()
    rec.runner = FakeRunner(cancel_on="bash")
    rec.turn.parsed = builder_of(
        ToolCallDelta(0, "c1", "read_file", "{}"), ToolCallDelta(1, "c2", "bash", "{}"),
        ToolCallDelta(2, "c3", "grep", "{}"), StreamEnd()).parsed_tool_calls()
    events = []
    with pytest.raises(asyncio.CancelledError):
        async for event in run_tool_round(rec.deps, rec.turn, ToolSet()):
            events.append(event)
    assert [type(e) for e in events] == [ToolCallStarted, ToolCallFinished, ToolCallStarted]
    stored = [(row.message.parts[0].tool_call_id, row.metadata["decision"]) for row in rec.store.rows]
    assert stored == [("c1", "auto"), ("c2", "interrupted"), ("c3", "interrupted")]  # one result per call


async def test_a_turn_runs_its_steps_until_the_model_answers_without_tools():
    rec = make(
        [ToolCallDelta(0, "c1", "read_file", '{"path": "a"}'), StreamEnd("tool_calls")],
        [TextDelta("done"), StreamEnd("stop")],
    )
    rec.turn.notes, rec.turn.prompt_problem = ["recall is warming up"], "no prompt profile 'x'"
    events = await collect(turn_events(rec.deps, rec.turn))
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["AgentWarning", "AgentWarning", "ContextPrepared", "UsageReported", "ToolCallStarted",
                     "ToolCallFinished", "ContextPrepared", "ReplyDelta", "UsageReported", "TurnFinished"]
    assert [e.text for e in events[:2]] == ["recall is warming up", "no prompt profile 'x'"]
    assert rec.runner.ran == ["read_file"] and rec.compactor.calls == ["after_tool_round"]
    assert len(rec.provider.requests) == 2 and rec.turn.rounds == 1 and events[-1].text == "done"
    assert [row.message.role for row in rec.store.rows] == ["assistant", "tool", "assistant"]


async def test_settled_tools_wants_exact_counts_when_a_note_or_compaction_is_due():
    rec = make(reports=[report(notes=("history not sent",))])
    settled_tools(rec.deps, rec.turn)
    rec.reports = [report(850)]
    rec.built = True  # a compactor that may act
    settled_tools(rec.deps, rec.turn)
    rec.reports, rec.built = [report(200)], False
    settled_tools(rec.deps, rec.turn)
    assert rec.offer.decided[:2] == [NEEDS_EXACT, NEEDS_EXACT]
    names, compact, messages, cap = rec.offer.decided[2]
    assert messages == [Message.user("hello")] and cap == reply_cap(0, rec.profile, report(200))


def test_a_prompt_is_withdrawn_once_and_never_after_an_answer():
    store = FakeStore()
    turn = TurnState(CONVERSATION, None, True, set(), prompt_id=7)
    assert withdraw_unanswered(store, turn, "boom") and withdraw_unanswered(store, turn, "again")
    assert store.withdrawn == [(7, "boom")]
    answered = TurnState(CONVERSATION, None, True, set(), prompt_id=8, answered=True)
    assert not withdraw_unanswered(store, answered, "boom") and store.withdrawn == [(7, "boom")]


# ---- the tool offer ------------------------------------------------------------------------------


class FakeExtras:
    """No skills; `mcp` extra tools, left out first when the budget is short."""

    def __init__(self, mcp: dict | None = None) -> None:
        self.mcp = mcp or {}
        self.mcp_left_out = 0
        self.mcp_tools = list(self.mcp.values())

    def mcp_least_wanted(self, names):
        return [name for name in self.mcp if name in names]

    def current_mcp_tools(self):
        return self.mcp_tools


MEMORY_TOOLS = (MEMORY_SAVE, MEMORY_SEARCH)  # what the memory feature offers when long-term memory is on


class MetadataStore:
    def __init__(self) -> None:
        self.updates: list[dict] = []

    def set_metadata(self, conversation_id, key, value):
        self.updates.append({key: value})


def offer(available: int, *, dropped: tuple[str, ...] = (), mcp: dict | None = None):
    from zeph_cli.agent.tool_offer import OfferDeps, ToolOffer

    deps = OfferDeps(
        FakeExtras(mcp), MetadataStore(), "compatible", lambda: MEMORY_TOOLS, counter=ApproximateCounter,
        profile=lambda: ModelProfile("m1", 8000, 2000), budget=lambda: SimpleNamespace(total=available, available=available),
        mode=lambda: "agent", allows_tools=lambda group: group not in dropped,
    )
    return ToolOffer(deps)


def test_the_offer_is_the_modes_tools_in_full_when_they_fit():
    tools = offer(200_000).offered()
    assert tools.names()[-2:] == ["memory_save", "memory_search"] and not tools.compact  # the feature's, after the core's
    assert tools.names()[:-2] == tools_for_mode("agent", compression=True).names()
    assert "memory_save" not in offer(200_000, dropped=("memory tools",)).offered().names()  # worldbook isolation


class HugeMcpTool(Tool):
    """An MCP server's tool whose schema alone would take most of a small budget."""

    name, kind, group = "srv__huge", "read", "MCP tools"
    description = "Looks things up in the server's catalog. " * 200
    parameters = {"type": "object", "properties": {f"filter_{i:03}": {"type": "string"} for i in range(150)}}

    async def run(self, arguments, context):
        raise AssertionError("never run here")


def test_mcp_tools_are_left_out_before_the_built_in_ones_and_that_is_said_once():
    from zeph_cli.context.tool_fit import TOOLS_MAX_SHARE

    mcp = {"srv__huge": HugeMcpTool()}
    probe = offer(200_000, mcp=mcp)
    builtin = tools_for_mode("agent", MEMORY_TOOLS)
    compact = dataclasses_replace(builtin, compact=True)
    capacity = int(probe.tokens(compact) / TOOLS_MAX_SHARE) + 1  # the built-in tools fit in compact form, no more
    assert probe.tokens(ToolSet({**builtin.tools, **mcp}, compact=True)) > capacity * TOOLS_MAX_SHARE
    tool_offer = offer(capacity, mcp=mcp)
    offered = tool_offer.offered()
    assert offered.names() == builtin.names() and offered.compact and tool_offer.deps.extras.mcp_left_out == 1
    said = tool_offer.warnings(CONVERSATION)
    assert len(said) == 1 and "MCP" in said[0].text and tool_offer.warnings(CONVERSATION) == []
    isolated = offer(capacity, mcp=mcp, dropped=("MCP tools",))
    assert isolated.offered().names() == builtin.names() and isolated.warnings(CONVERSATION) == []


def test_no_room_for_any_tools_is_said_once_a_session():
    tool_offer = offer(400)
    assert tool_offer.offered().tools == {} and tool_offer.dropped.startswith("running without tools:")
    [warning] = tool_offer.warnings(CONVERSATION)
    assert warning.text == tool_offer.dropped and tool_offer.warnings(CONVERSATION) == []
    assert tool_offer.deps.store.updates == [{"tools_dropped_warning": tool_offer.dropped}]  # remembered for `ask -c`
    said_before = dataclasses_replace(CONVERSATION, metadata={"tools_dropped_warning": tool_offer.dropped})
    assert offer(400).warnings(said_before) == []


def test_going_without_tools_offers_none_and_leaves_the_saying_to_the_caller():
    tool_offer = offer(200_000)
    tool_offer.go_without("the server left them out")
    assert tool_offer.offered().tools == {} and tool_offer.unavailable == "the server left them out"
    assert tool_offer.warnings(CONVERSATION) == []


def test_settling_asks_for_exact_counts_only_where_the_bounds_disagree():
    from zeph_cli.tokens import DeferredCounter

    exact = offer(400)
    seen = []
    assert exact.settled(lambda tools: seen.append(tools.names())).tools == {} and seen == []  # nothing to settle
    for decide, made_exact in ((lambda tools: tools.names(), False), (lambda tools: NEEDS_EXACT, True)):
        counter = DeferredCounter()
        tool_offer = offer(400)
        tool_offer.deps.counter = lambda: counter
        tool_offer.settled(decide)
        assert counter.exact is made_exact


def dataclasses_replace(value, **changes):
    import dataclasses

    return dataclasses.replace(value, **changes)


class ProgressRunner(FakeRunner):
    """A call that reports progress and goes on only once the round has passed that report on."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = asyncio.Event()

    async def run(self, call, problem):
        from zeph_cli.agent.events import ToolCallProgress

        self.progress.put_nowait(ToolCallProgress(call.id, "halfway", 1, 2))
        await self.seen.wait()  # a round that held the report until the call ended would hang here
        return await super().run(call, problem)


async def test_a_single_calls_progress_is_passed_on_while_it_runs():
    from zeph_cli.agent.events import ToolCallProgress

    rec = make()
    rec.runner = ProgressRunner()
    rec.turn.parsed = builder_of(ToolCallDelta(0, "c1", "read_file", "{}"), StreamEnd()).parsed_tool_calls()
    events = []

    async def run() -> None:
        async for event in run_tool_round(rec.deps, rec.turn, ToolSet()):
            events.append(event)
            if isinstance(event, ToolCallProgress):
                rec.runner.seen.set()

    await asyncio.wait_for(run(), timeout=30)  # a bound on a hang, not a timing
    assert [type(e) for e in events] == [ToolCallStarted, ToolCallProgress, ToolCallFinished]
    assert events[1].percent == 50
