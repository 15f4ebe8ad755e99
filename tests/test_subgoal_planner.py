"""The subgoal planner on its own (pure), and the compactor using it with plain subgoal lists and a real store."""

from __future__ import annotations

from pathlib import Path

import pytest

from zeph_cli.agent.events import AgentWarning, CompactionFinished
from zeph_cli.context.assembler import HistoryItem
from zeph_cli.context.compaction import COMPACTION_SUMMARY, SUMMARY_MARKER
from zeph_cli.context.compaction.subgoals import (
    ABANDONED, ACTIVE, CLOSED_ONLY, COMPLETED, FALLBACK, NON_ACTIVE, PLAIN, Subgoal, closing_lines, origin_id,
    plan_range, registry_text,
)
from zeph_cli.messages import Message, ToolCallPart, ToolResultPart
from tests.test_compactor_unit import Session


def text(i: int, tokens: int = 10, role: str = "assistant") -> HistoryItem:
    return HistoryItem(Message.text(role, f"message {i}"), tokens, i)


def call(i: int, tokens: int = 10) -> HistoryItem:
    return HistoryItem(Message("assistant", (ToolCallPart(f"c{i}", "read_file", {"path": "a"}),)), tokens, i)


def result(i: int, of: int, tokens: int = 100) -> HistoryItem:
    return HistoryItem(Message("tool", (ToolResultPart(f"c{of}", "x" * 400, name="read_file"),)), tokens, i)


def history() -> list[HistoryItem]:
    """1 user, 2-3 a tool pair, 4 text, 5-6 a tool pair, 7 text, 8-9 a tool pair, 10 text."""
    return [text(1, role="user"), call(2), result(3, 2), text(4), call(5), result(6, 5), text(7),
            call(8), result(9, 8), text(10)]


def ids(items: list[HistoryItem]) -> list[int]:
    return [item.id for item in items]


def test_no_subgoal_in_range_is_the_whole_range():
    plan = plan_range(history(), [Subgoal("1", "later", ACTIVE, 50)], must_free=10, may_keep=10)
    assert plan.mode == PLAIN and ids(plan.summarize) == list(range(1, 11))
    assert plan.outcome == ("not in range",)


def test_active_range_is_kept_whole_with_its_tool_pair():
    # The active span starts at the tool result 6: its call (5) stays with it.
    goals = [Subgoal("1", "Add the parser", COMPLETED, 2, 4), Subgoal("2", "Wire it", ACTIVE, 6)]
    plan = plan_range(history(), goals, must_free=None, may_keep=10_000)
    assert plan.mode == NON_ACTIVE
    assert ids(plan.summarize) == [1, 2, 3, 4]
    assert ids(plan.kept) == [5, 6, 7, 8, 9, 10]
    assert plan.hardest == {3}  # the completed item's tool output, shown as a placeholder
    assert plan.outcome == ("summarized", "kept")
    assert closing_lines(plan) == "Task 1 'Add the parser' completed"


def test_closed_ranges_alone_when_they_free_enough():
    goals = [Subgoal("1", "Parse", COMPLETED, 5, 7), Subgoal("2", "Drop", ABANDONED, 8, 9), Subgoal("3", "Ship", ACTIVE, 10)]
    plan = plan_range(history(), goals, must_free=200, may_keep=10_000)
    assert plan.mode == CLOSED_ONLY
    assert ids(plan.summarize) == [5, 6, 7, 8, 9]  # not 1-4 (ordinary history), not 10 (active)
    assert ids(plan.kept) == [1, 2, 3, 4, 10]
    assert plan.hardest == {6, 9}
    assert closing_lines(plan) == "Task 1 'Parse' completed\nTask 2 'Drop' abandoned"
    # Not enough: everything but the active range.
    plan = plan_range(history(), goals, must_free=300, may_keep=10_000)
    assert plan.mode == NON_ACTIVE and ids(plan.summarize) == list(range(1, 10))
    # No line to get under (compaction on demand): everything but the active range too.
    assert plan_range(history(), goals, must_free=None, may_keep=None).mode == NON_ACTIVE


def test_active_range_over_the_room_falls_back_to_the_whole_range():
    goals = [Subgoal("1", "Parse", COMPLETED, 1, 4), Subgoal("2", "Big", ACTIVE, 5)]
    plan = plan_range(history(), goals, must_free=10, may_keep=200)  # 5-10 take 240 tokens
    assert plan.mode == FALLBACK and ids(plan.summarize) == list(range(1, 11))
    assert plan.over == (goals[1], 240)
    assert closing_lines(plan).splitlines() == [
        "Task 1 'Parse' completed", "Task 2 'Big' still in progress (its earlier messages are summarized here)"]
    assert "over budget: task 2 'Big' keeps 240 tokens" in registry_text(goals, plan)
    assert plan.hardest == frozenset()  # as without subgoals: outputs read whole
    # An item in progress twice: its spans count together, named by the first.
    twice = [Subgoal("2", "Big", ACTIVE, 2, 3), Subgoal("1", "Parse", COMPLETED, 4, 4), Subgoal("2", "Big", ACTIVE, 8)]
    plan = plan_range(history(), twice, may_keep=200)
    assert plan.mode == FALLBACK and plan.over == (twice[0], 110 + 120)
    # Within the room: kept.
    assert plan_range(history(), goals, must_free=10, may_keep=240).mode in (CLOSED_ONLY, NON_ACTIVE)


def test_closing_lines_take_no_more_than_they_are_given():
    from zeph_cli.context.compaction.subgoals import SubgoalPlan
    from zeph_cli.tokens import ApproximateCounter

    count = ApproximateCounter().count
    long = "Rewrite the configuration loader so every section is validated before use " * 3
    closed = tuple(Subgoal(str(i), f"{long} ({i})", COMPLETED, i, i) for i in range(1, 41))
    plan = SubgoalPlan(NON_ACTIVE, [], closed=closed)
    whole = closing_lines(plan)
    assert closing_lines(plan, count, count(whole)) == whole  # within the room: as they are
    for room in (2000, 400, 60, 12):
        lines = closing_lines(plan, count, room)
        assert count(lines) <= room, room
    shortened = closing_lines(plan, count, 2000)
    assert len(shortened.splitlines()) == 40 and "…' completed" in shortened  # the texts give way first
    cut = closing_lines(plan, count, 60).splitlines()
    assert cut[0].startswith("Task 1 '") and cut[-1] == f"({41 - len(cut)} more items)"
    assert closing_lines(plan, count, 1) == ""  # not even the count fits


def test_a_message_of_a_closed_and_an_active_item_is_kept():
    # One todo_write call closes item 1 and opens item 2 at message 5: the pair 5-6 belongs to both.
    goals = [Subgoal("1", "Parse", COMPLETED, 2, 5), Subgoal("2", "Wire", ACTIVE, 5)]
    plan = plan_range(history(), goals, must_free=None, may_keep=None)
    assert 5 not in ids(plan.summarize) and 6 not in ids(plan.summarize)
    assert plan.outcome == ("partly summarized", "kept")


def test_copies_and_summaries_belong_where_their_originals_were():
    pruned = HistoryItem(Message("tool", (ToolResultPart("c5", "[pruned]"),)), 5, 40, {"pruned": True, "pruned_from": 6})
    pair = HistoryItem(Message.context("[tool summary] read a"), 5, 41, {"summary_of": [8, 9]})
    assert origin_id(pruned) == 6 and origin_id(pair) == 8
    items = [text(1, role="user"), call(5), pruned, text(7), pair, text(10)]
    plan = plan_range(items, [Subgoal("2", "Wire", ACTIVE, 5, None)], must_free=None, may_keep=None)
    assert ids(plan.summarize) == [1]  # not the copy (of 6) nor the summary (of 8-9): they are active too
    assert plan.hardest == frozenset()


def test_registry_text_lists_every_subgoal():
    goals = [Subgoal("1", "Parse", COMPLETED, 2, 4), Subgoal("2", "Wire", ACTIVE, 6)]
    text_ = registry_text(goals, plan_range(history(), goals))
    assert text_.splitlines() == [
        "mode: non-active",
        "task 1\tcompleted\tmessages 2..4\tsummarized\tParse",
        "task 2\tactive\tmessages 6..newest\tkept\tWire",
    ]


# ---- the compactor with plain subgoal lists ---------------------------------------------------------


async def echo(prompt: str, max_tokens: int) -> str:
    return "The work so far: files were read and written."


def session_with(tmp_path: Path, goals_of, budget: int = 4000) -> Session:
    session = Session(tmp_path, budget, echo)
    session.compactor.deps.subgoals = lambda conversation: goals_of(session)
    return session


def work(session: Session, i: int, size: int = 300, answer: int = 0) -> list[int]:
    """One turn: a question, a read_file pair with `size` words of output, an answer (`answer` words more).
    Its message ids."""
    first = session.add(Message.user(f"Turn {i}: go on."))
    session.add(Message("assistant", (ToolCallPart(f"c{i}", "read_file", {"path": f"f{i}.py"}),)))
    session.add(Message("tool", (ToolResultPart(f"c{i}", " ".join(f"line{i}_{k}" for k in range(size)), name="read_file"),)))
    last = session.add(Message.assistant(f"Done with step {i}. " + " ".join(f"note{i}_{k}" for k in range(answer))))
    return list(range(first, last + 1))


def originals(session: Session, ids: list[int]) -> set[int]:
    """`ids` with each pruned copy taken for the message it was pruned from."""
    rows = {r.id: r for r in session.store.history(session.conversation.id)}
    return {rows[i].metadata.get("pruned_from", i) if i in rows else i for i in ids}


@pytest.mark.asyncio
async def test_compaction_keeps_the_active_range_and_names_the_closed_item(tmp_path):
    spans: dict[str, list[int]] = {}
    session = session_with(tmp_path, lambda s: [Subgoal("1", "Read the old code", COMPLETED, spans["1"][0], spans["1"][-1]),
                                                Subgoal("2", "Write the parser", ACTIVE, spans["2"][0])])
    spans["1"] = [i for t in range(3) for i in work(session, t)]
    spans["2"] = [i for t in range(3, 5) for i in work(session, t)]
    for t in range(5, 7):
        work(session, t, size=20)
    events = [e async for e in session.compactor.compact(session.conversation)]
    results = [e.result for e in events if isinstance(e, CompactionFinished) and e.result.kind == "manual"]
    assert results and not results[0].skipped
    (summary,) = session.summaries()
    summarized = originals(session, summary.metadata["summary_of"])
    assert summarized.isdisjoint(spans["2"])  # the active item's messages stay
    assert set(spans["1"]) <= summarized
    body = summary.message.content
    assert f"{SUMMARY_MARKER}\nTask 1 'Read the old code' completed\n\n" in body
    # The summarizer saw the completed item's outputs as placeholders, not their text.
    assert not any("line0_5 " in prompt for prompt in session.calls)
    visible = originals(session, [r.id for r in session.store.history(session.conversation.id, agent_visible=True)])
    assert set(spans["2"]) <= visible
    session.close()


def pruned_from(session: Session) -> set[int]:
    """The messages the agent now sees as pruned copies."""
    return {r.metadata["pruned_from"] for r in session.store.history(session.conversation.id, agent_visible=True)
            if r.metadata.get("pruned")}


def big_active_outputs(tmp_path: Path, size: int = 300) -> tuple[Session, dict[str, list[int]]]:
    """An active item whose tool outputs (`size` words each) alone leave no room for a summary beside it,
    pruned they do; the soft tier left out, so that any pruning is the LLM compaction's."""
    spans: dict[str, list[int]] = {}
    session = session_with(tmp_path, lambda s: [Subgoal("1", "Read", COMPLETED, spans["1"][0], spans["1"][-1]),
                                                Subgoal("2", "Big", ACTIVE, spans["2"][0])])
    session.compactor.soft = lambda conversation: None  # type: ignore[method-assign]
    spans["1"] = [i for t in range(2) for i in work(session, t, size=5, answer=100)]
    spans["2"] = [i for t in range(2, 5) for i in work(session, t, size=size)]
    for t in range(10, 12):
        work(session, t, size=5)
    return session, spans


def mode_now(session: Session) -> str:
    middle = session.compactor._middle(session.conversation, "manual")
    goals = list(session.compactor.deps.subgoals(session.conversation))
    return session.compactor._plan(session.conversation, "manual", middle, goals).mode


async def test_active_outputs_are_pruned_when_that_keeps_the_item_and_only_with_the_summary(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from zeph_cli.agent import compactor as compactor_module

    # Small outputs: the item fits beside the summary as it is, and its outputs stay whole.
    session, spans = big_active_outputs(tmp_path / "small", size=20)
    assert mode_now(session) == NON_ACTIVE
    [e async for e in session.compactor.compact(session.conversation)]
    (summary,) = session.summaries()
    assert originals(session, summary.metadata["summary_of"]) == set(spans["1"]) and pruned_from(session) == set()
    session.close()

    session, spans = big_active_outputs(tmp_path / "kept")
    assert mode_now(session) == FALLBACK  # with their outputs whole
    events = [e async for e in session.compactor.compact(session.conversation)]
    assert not [e for e in events if isinstance(e, AgentWarning)]
    (summary,) = session.summaries()
    assert originals(session, summary.metadata["summary_of"]) == set(spans["1"])
    outputs = set(spans["2"][2::4])  # each turn's tool result (the item is still open: later ones are its too)
    assert outputs <= pruned_from(session) and min(pruned_from(session)) > spans["1"][-1]
    session.close()

    # The probe rejects the summary: nothing is summarized, and nothing pruned either.
    session, spans = big_active_outputs(tmp_path / "rejected")
    session.config.memory.compression.probe.enabled = True
    rejected = SimpleNamespace(verdict="HardFail", score=0.1, threshold=0.6, detail="")

    async def probe(*args, **kwargs):
        return rejected

    monkeypatch.setattr(compactor_module, "run_probe", probe)
    monkeypatch.setattr(compactor_module, "blocks_compaction", lambda result: result is rejected)
    [e async for e in session.compactor.compact(session.conversation)]
    assert session.summaries() == [] and pruned_from(session) == set()
    session.close()


@pytest.mark.asyncio
async def test_an_active_range_too_large_is_summarized_with_one_warning(tmp_path):
    spans: dict[str, list[int]] = {}
    session = session_with(tmp_path, lambda s: [Subgoal("7", "Huge", ACTIVE, spans["7"][0])], budget=3000)
    work(session, 0, size=50)
    spans["7"] = [i for t in range(1, 4) for i in work(session, t, size=5, answer=600)]
    work(session, 4, size=5)
    work(session, 5, size=5)
    events = [e async for e in session.compactor.compact(session.conversation)]
    warnings = [e.text for e in events if isinstance(e, AgentWarning)]
    assert len(warnings) == 1 and "task 7 'Huge'" in warnings[0] and "tokens" in warnings[0]
    (summary,) = session.summaries()
    assert set(spans["7"]) & originals(session, summary.metadata["summary_of"])  # fell back: summarized as today
    assert any("line1_0 line1_1" in prompt for prompt in session.calls)  # every output read whole
    assert not pruned_from(session)
    assert summary.metadata.get(COMPACTION_SUMMARY)
    spans["7"] += work(session, 6, size=5, answer=600)
    work(session, 7, size=5)
    again = [e async for e in session.compactor.compact(session.conversation)]
    newest = max(session.summaries(), key=lambda r: r.id)
    assert spans["7"][-1] in originals(session, newest.metadata["summary_of"])  # fell back again
    assert not [e for e in again if isinstance(e, AgentWarning) and "task 7" in e.text]  # but said once
    session.close()


@pytest.mark.asyncio
async def test_the_registry_is_dumped_beside_the_compaction(tmp_path):
    from zeph_cli.agent.debug_dump import DebugDump

    spans: dict[str, list[int]] = {}
    session = session_with(tmp_path, lambda s: [Subgoal("1", "Read", COMPLETED, spans["1"][0], spans["1"][-1]),
                                                Subgoal("2", "Write", ACTIVE, spans["2"][0])])
    dump = DebugDump(tmp_path / "dump")
    session.compactor.deps.dump_compaction = dump.compaction
    dump.compaction({"kind": "earlier"})  # 0001: numbering continues
    spans["1"] = [i for t in range(3) for i in work(session, t)]
    spans["2"] = [i for t in range(3, 5) for i in work(session, t)]
    work(session, 5, size=5)
    [e async for e in session.compactor.compact(session.conversation)]
    names = sorted(p.name for p in (tmp_path / "dump").iterdir())
    assert names == ["0001-compaction.json", "0002-compaction.json", "0002-subgoal-registry.txt"]
    lines = (tmp_path / "dump" / "0002-subgoal-registry.txt").read_text().splitlines()
    assert lines[0] == "mode: non-active"
    assert lines[1] == f"task 1\tcompleted\tmessages {spans['1'][0]}..{spans['1'][-1]}\tsummarized\tRead"
    assert lines[2] == f"task 2\tactive\tmessages {spans['2'][0]}..newest\tkept\tWrite"
    assert "subgoal_registry" not in (tmp_path / "dump" / "0002-compaction.json").read_text()
    session.close()


async def test_the_hard_tier_summarizes_only_closed_ranges_when_they_free_enough(tmp_path):
    spans: dict[str, list[int]] = {}
    session = session_with(tmp_path, lambda s: [Subgoal("1", "Draft", COMPLETED, spans["1"][0], spans["1"][-1]),
                                                Subgoal("2", "Polish", ACTIVE, spans["2"][0])])
    ordinary = work(session, 0, size=5, answer=40)
    spans["1"] = [i for t in range(1, 4) for i in work(session, t, size=5, answer=350)]
    spans["2"] = [i for t in range(4, 6) for i in work(session, t, size=5, answer=40)]
    for t in range(6, 8):
        work(session, t, size=5)
    events = await session.before_request()
    assert [e.result.kind for e in events if isinstance(e, CompactionFinished)][-1] == "hard"
    (summary,) = session.summaries()
    summarized = originals(session, summary.metadata["summary_of"])
    assert summarized == set(spans["1"])  # the closed range alone: not the ordinary turn before it, not item 2
    visible = originals(session, [r.id for r in session.store.history(session.conversation.id, agent_visible=True)])
    assert set(ordinary) | set(spans["2"]) <= visible
    assert summary.message.content.startswith(f"{SUMMARY_MARKER}\nTask 1 'Draft' completed\n\n")
    session.close()


async def test_ranges_around_an_active_one_make_one_summary_where_the_first_began(tmp_path):
    # Item 2 was in progress twice; item 3 was done in between: its range is summarized with item 1's, and
    # item 2's first span stays between them, in its place.
    spans: dict[str, list[int]] = {}
    session = session_with(tmp_path, lambda s: [
        Subgoal("1", "Draft", COMPLETED, spans["1"][0], spans["1"][-1]),
        Subgoal("2", "Polish", ACTIVE, spans["2a"][0], spans["2a"][-1]),
        Subgoal("3", "Fix typo", ABANDONED, spans["3"][0], spans["3"][-1]),
        Subgoal("2", "Polish", ACTIVE, spans["2b"][0]),
    ])
    spans["1"] = [i for t in range(0, 2) for i in work(session, t, size=5, answer=60)]
    spans["2a"] = work(session, 2, size=5, answer=60)
    spans["3"] = [i for t in range(3, 5) for i in work(session, t, size=5, answer=60)]
    spans["2b"] = work(session, 5, size=5, answer=60)
    for t in range(6, 8):
        work(session, t, size=5)
    [e async for e in session.compactor.compact(session.conversation)]
    (summary,) = session.summaries()
    assert originals(session, summary.metadata["summary_of"]) == set(spans["1"]) | set(spans["3"])
    order = [r.id for r in session.store.history(session.conversation.id, agent_visible=True)]
    kept = [i for i in order if i != summary.id]
    assert order[0] == summary.id  # where item 1 began
    assert originals(session, kept[: len(spans["2a"])]) == set(spans["2a"])  # then item 2's first span
    assert summary.message.content.startswith(
        f"{SUMMARY_MARKER}\nTask 1 'Draft' completed\nTask 3 'Fix typo' abandoned\n\n")
    session.close()
