"""Worldbook triggering and placement as pure functions: keywords (plain, regex, case), scan depth,
constant entries, a broken regex, ordering, the share, and at_depth never splitting a tool pair."""

from __future__ import annotations

from zeph_cli.context.worldbook_block import (
    WorldbookEntry,
    block_name,
    depth_index,
    insert_at_depth,
    place,
    render,
    scan_text,
    triggered,
)
from zeph_cli.messages import Message, ToolCallPart, ToolResultPart
from zeph_cli.context.blocks import OPEN
from zeph_cli.features import isolation_policy, policy_for

ISOLATION = isolation_policy()


def entry(id_: int, *keywords: str, **kw) -> WorldbookEntry:
    return WorldbookEntry(id_, kw.pop("content", f"lore {id_}"), tuple(keywords), **kw)


def ids(entries) -> list[int]:
    return [e.id for e in entries]


def test_plain_keywords_match_case_insensitively_unless_asked():
    entries = [entry(1, "Gandalf"), entry(2, "Gandalf", case_sensitive=True), entry(3, "Frodo")]
    on, warnings = triggered(entries, "what did gandalf say?")
    assert ids(on) == [1] and warnings == []
    assert ids(triggered(entries, "What did Gandalf say?")[0]) == [1, 2]


def test_plain_keywords_are_substrings_not_patterns():
    on, _ = triggered([entry(1, "a.b"), entry(2, "(x")], "axb and (x")
    assert ids(on) == [2]


def test_regex_keywords_and_a_broken_one_is_skipped_with_one_warning():
    entries = [entry(1, r"\bport\s+\d+", regex=True), entry(2, "([unclosed", regex=True), entry(3)]
    on, warnings = triggered(entries, "it listens on PORT 6543")
    assert ids(on) == [1, 3]
    assert len(warnings) == 1 and "#2" in warnings[0] and "not a valid regex" in warnings[0]


def test_a_constant_entry_always_triggers():
    assert ids(triggered([entry(7)], "")[0]) == [7]


def test_scan_depth_counts_user_and_assistant_messages_only():
    history = [
        Message.user("tell me about Mordor"),
        Message.assistant("Mordor is far."),
        Message("tool", (ToolResultPart("c1", "Rivendell in the tool output"),)),
        Message.context("Rivendell in a context block"),
        Message.user("and now?"),
    ]
    assert "Mordor" in scan_text(history, 2) and "Rivendell" not in scan_text(history, 5)
    assert "tell me" not in scan_text(history, 2) and "tell me" in scan_text(history, 3)
    assert ids(triggered([entry(1, "mordor")], scan_text(history, 1))[0]) == []


def test_a_block_orders_entries_by_order_then_id_in_its_tag():
    text = render("outlet", [entry(3, content="c", order=5), entry(1, content="a", order=100), entry(2, content="b", order=5)])
    assert text == "<worldbook_outlet>\nb\n\nc\n\na\n</worldbook_outlet>"
    assert block_name("an_bottom") == "worldbook an bottom" and block_name("at_depth", 2) == "worldbook at depth 2"


def test_place_groups_by_position_and_depth():
    placement = place(
        [entry(1, position="before"), entry(2, position="at_depth", depth=2), entry(3, position="at_depth", depth=0),
         entry(4, position="an_bottom"), entry(5, position="at_depth", depth=2)],
        None, len,
    )
    assert [b.name for b in placement.blocks] == [
        "worldbook before", "worldbook an bottom", "worldbook at depth 2", "worldbook at depth 0"]
    assert "lore 2\n\nlore 5" in placement.at("at_depth")[0].text
    assert placement.left_out == () and placement.detail == ""
    assert [b.detail for b in placement.blocks] == ["entry #1", "entry #4", "entries #2, #5", "entry #3"]


def test_over_the_share_the_highest_order_entries_are_left_out_first():
    big = "x" * 60
    entries = [entry(1, content=big, order=300), entry(2, content=big, order=10), entry(3, content="small", order=200)]
    placement = place(entries, 150, len)  # measure = characters
    kept = "".join(b.text for b in placement.blocks)
    assert placement.left_out == (1,) and big in kept and "small" in kept
    assert "1 left out over the worldbook share (150 tokens): #1" in placement.detail
    assert place(entries, 10, len).blocks == ()


def test_depth_index_counts_from_the_end_and_never_splits_a_tool_pair():
    call = Message("assistant", (ToolCallPart("c1", "read", {}),))
    result = Message("tool", (ToolResultPart("c1", "text"),))
    history = [Message.user("q1"), Message.assistant("a1"), Message.user("q2"), call, result, Message.assistant("a2")]
    assert depth_index(history, 0) == 6
    assert depth_index(history, 1) == 5  # before a2, after the tool result
    assert depth_index(history, 2) == 5  # before the result would split the pair: moved to the nearest boundary
    assert depth_index(history, 3) == 3  # before the call
    assert depth_index(history, 99) == 0
    assert depth_index(history, 99, floor=1) == 1  # never before the summaries
    sent = insert_at_depth(history, [(2, "deep"), (0, "end"), (1, "one")])
    roles = [(m.role, m.content) for m in sent]
    assert roles[-1] == ("context", "end")
    assert [c for _, c in roles[4:8]] == ["text", "deep", "one", "a2"]  # after the result: deeper first
    assert sent[3].tool_calls and sent[4].role == "tool"


def test_isolation_says_what_its_policy_leaves_out():
    """The words `zeph context` shows name every source and tool group the isolation policy denies."""
    said = " ".join(ISOLATION.says)
    for source in ISOLATION.denied_sources | ISOLATION.denied_tools:
        assert source in said or {"memory": "long-term memory", "session memory": "cross-session summaries"}[source] in said
    assert policy_for(False) == OPEN and not OPEN.says and policy_for(True) == ISOLATION


def test_the_assembler_puts_outlet_before_recall_an_bottom_after_it_and_depths_in_the_history():
    from zeph_cli.context.assembler import HistoryItem, PromptLayer
    from tests.assembly import assemble
    from zeph_cli.context.budget import compute_budget
    from zeph_cli.context.recall_block import RecallEntry
    from zeph_cli.tokens import default_counter

    counter = default_counter()
    budget = compute_budget(configured_tokens=8000, auto_budget=True, window=8000, soft_threshold=0.6, hard_threshold=0.9)
    history = [HistoryItem(Message.user("q1"), 5, 1), HistoryItem(Message.assistant("a1"), 5, 2),
               HistoryItem(Message.user("q2"), 5, 3)]
    messages, report = assemble(
        [PromptLayer("base prompt", "You are zeph.")], history, budget, counter, window=8000,
        context_layers=[PromptLayer("worldbook an top", "<worldbook_an_top>"), PromptLayer("memory", "<memory>"),
                        PromptLayer("worldbook outlet", "<worldbook_outlet>")],
        late_context_layers=[PromptLayer("worldbook an bottom", "<worldbook_an_bottom>")],
        depth_layers=[(1, PromptLayer("worldbook at depth 1", "<worldbook_at_depth>", "1 entry"))],
        recall=[RecallEntry(9, "- [2026-01-01 · user] the port is 6543")],
        closing_layers=[PromptLayer("enhancement prompt", "<enhanced_prompt>")],
    )
    contents = [m.content.split("\n")[0] for m in messages]
    # the history before the running turn (q2), the at_depth 1 entry one message from its end, then the
    # per-turn blocks just before the running turn, and the enhancement prompt last
    assert contents[:7] == ["You are zeph.", "q1", "a1", "<worldbook_at_depth>", "<worldbook_an_top>", "<memory>", "<worldbook_outlet>"]
    assert contents[7].startswith("[semantic recall]")
    assert contents[8:] == ["<worldbook_an_bottom>", "q2", "<enhanced_prompt>"]
    names = [b.name for b in report.blocks]
    assert {"worldbook an top", "worldbook outlet", "worldbook an bottom", "worldbook at depth 1"} <= set(names)
    per_turn = ["worldbook an top", "memory", "worldbook outlet", "semantic recall", "worldbook an bottom", "history"]
    assert [n for n in names if n in per_turn] == per_turn  # the report in the request's order
    assert report.block("worldbook at depth 1").detail == "1 entry"  # the layer's own detail, as given
    assert report.fixed_tokens >= sum(report.block(n).tokens for n in names if n.startswith("worldbook"))


def test_a_worldbook_layer_is_cache_stable_only_when_no_entry_in_force_there_fires_by_keywords():
    from zeph_cli.context.blocks import Placement
    from zeph_cli.features.worldbook.source import worldbook_blocks
    from zeph_cli.features.worldbook.turn import WorldbookTurn, layers_within

    always = [entry(1, position="before"), entry(2, position="after")]
    keyed = [entry(3, "deploy", position="after"), entry(4, "deploy", position="an_top")]

    def stable(triggered) -> dict[str, bool]:
        blocks = worldbook_blocks(layers_within(WorldbookTurn(tuple(always + keyed), tuple(triggered)), None, len))
        return {b.name: b.stable for b in blocks if b.placement is not Placement.REPORT}

    # "after" holds a keyword entry in force: it changes when the keyword comes up, fired this turn or not
    assert stable(always) == {"worldbook before": True, "worldbook after": False}
    assert stable(always + keyed) == {"worldbook before": True, "worldbook after": False, "worldbook an top": False}
