"""The assembler places and fits blocks by their own fields (pure, no source named)."""

from __future__ import annotations

from zeph_cli.context.assembler import History, HistoryItem, assemble
from zeph_cli.context.blocks import Block, Fitted, Placement, Room, Shrink
from zeph_cli.context.budget import Budget, RequestBudget
from zeph_cli.messages import Message
from zeph_cli.tokens import default_counter

COUNTER = default_counter()


def _history() -> History:
    items = [Message.user("first question"), Message.assistant("first answer"), Message.user("second question")]
    return History([HistoryItem(m, COUNTER.count(m.content) + 4, n + 1) for n, m in enumerate(items)], pinned_id=3)


def _budget(total: int = 0) -> RequestBudget:
    return RequestBudget(Budget(total, int(total * 0.2), 0.7, 0.9), COUNTER)


def test_blocks_go_where_their_placement_says_in_their_order_whatever_the_order_given():
    blocks = [
        Block("closing", "CLOSE", Placement.CLOSING),
        Block("late", "LATE", Placement.BEFORE_TURN, 20),
        Block("early", "EARLY", Placement.BEFORE_TURN, 10),
        Block("deep", "DEEP", Placement.DEPTH, depth=2),
        Block("after system", "CACHED", Placement.CONTEXT),
        Block("second", "SYS2", Placement.SYSTEM, 20),
        Block("first", "SYS1", Placement.SYSTEM, 10),
        Block("note", placement=Placement.REPORT, detail="left out: why"),
        Block("empty", "", Placement.SYSTEM, 30),
    ]
    messages, report = assemble(blocks, _history(), _budget())
    assert [m.content for m in messages] == [
        "SYS1", "SYS2", "CACHED", "first question", "DEEP", "first answer", "EARLY", "LATE", "second question", "CLOSE"
    ]
    assert [m.role for m in messages][:3] == ["system", "system", "context"]
    assert report.sent_blocks == (
        "first", "second", "after system", "history", "deep", "history", "early", "late", "history", "closing"
    )
    assert [b.name for b in report.blocks] == [
        "first", "second", "after system", "early", "late", "history", "deep", "closing", "note"
    ]
    assert report.block("note").tokens == 0 and report.block("note").detail == "left out: why"
    assert report.block("empty") is None


def test_a_capped_text_block_is_truncated_or_dropped_by_its_shrink_policy():
    long = "word " * 400
    cap = 60
    blocks = [Block("cut", long, Placement.BEFORE_TURN, 1, cap=cap, shrink=Shrink.TRUNCATE),
              Block("gone", long, Placement.BEFORE_TURN, 2, cap=cap, shrink=Shrink.DROP),
              Block("small", "fits", Placement.BEFORE_TURN, 3, cap=cap, shrink=Shrink.DROP)]
    messages, report = assemble(blocks, _history(), _budget())
    assert report.block("gone") is None and report.block("small") is not None
    cut = report.block("cut")
    assert 0 < cut.tokens <= cap
    assert any(m.content.endswith("…") and m.content.startswith("word word") for m in messages)


class _Entries:
    """Entries that keep as many lines as their room allows and say what room they were given."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.rooms: list[Room] = []

    def __bool__(self) -> bool:
        return bool(self.lines)

    def fit(self, room: Room) -> Fitted:
        self.rooms.append(room)
        kept = [line for n, line in enumerate(self.lines) if room.measure("\n".join(self.lines[: n + 1])) <= room.allowance]
        return Fitted("\n".join(kept), f"{len(kept)} kept", tuple(kept))


def test_a_slot_takes_only_free_room_and_a_share_is_sized_before_the_history():
    lines = [f"entry {n} " + "filler " * 30 for n in range(40)]
    slot, share = _Entries(lines), _Entries(lines)
    blocks = [Block("slotted", slot, Placement.BEFORE_TURN, slot="semantic_recall", cap=500, shrink=Shrink.ENTRIES),
              Block("shared", share, Placement.SYSTEM, share=0.1, cap=700, shrink=Shrink.COMPACT)]
    _, report = assemble(blocks, _history(), _budget(8000))
    capacity = 8000 - 1600
    assert share.rooms[0].allowance == int(capacity * 0.1) and share.rooms[0].remaining is not None
    assert slot.rooms[0].allowance <= report.allocation["semantic_recall"]
    assert report.block("shared").tokens <= share.rooms[0].allowance
    assert report.block("slotted").kept and report.block("slotted").detail.endswith("kept")
    assert report.history_messages == 3  # neither trims the history
    _, unbudgeted = assemble(blocks, _history(), _budget(0))
    assert share.rooms[-1].allowance == 700 and share.rooms[-1].remaining is None
    assert slot.rooms[-1].allowance == 500


def test_the_request_budget_carries_the_offered_tools_to_entries():
    entries = _Entries(["a"])
    budget = RequestBudget(Budget(0, 0, 0.7, 0.9), COUNTER, tools=frozenset({"load_skill"}))
    assemble([Block("e", entries, Placement.SYSTEM, share=0.1, cap=100)], _history(), budget)
    assert entries.rooms[0].tools == frozenset({"load_skill"})


def test_the_report_says_how_much_of_the_head_stays_the_same_from_turn_to_turn():
    head = [Block("base", "the base prompt " * 20, Placement.SYSTEM, 10),
            Block("skills", "matched skills", Placement.SYSTEM, 80, stable=False),
            Block("pinned", "after a changing one", Placement.SYSTEM, 90),
            Block("per turn", "the time", Placement.BEFORE_TURN, 10, stable=False)]
    _, report = assemble(head, _history(), _budget())
    assert report.first_changing == "skills" and report.stable_prefix_tokens == report.block("base").tokens > 0
    _, report = assemble([head[0], head[2], head[3]], _history(), _budget())  # a per-turn block is not the head
    assert report.first_changing == "" and report.stable_prefix_tokens == report.block("base").tokens + report.block("pinned").tokens
    assert report.to_dict()["stable_prefix"] == {"tokens": report.stable_prefix_tokens, "ends_before": ""}
