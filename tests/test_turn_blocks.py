"""Per-turn blocks and history shaping as pure functions: <time>, <enhanced_prompt>,
max_chat_history and time landmarks, through `assemble`."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from zeph_cli.context.assembler import HistoryItem, PromptLayer
from tests.assembly import assemble
from zeph_cli.context.budget import compute_budget
from zeph_cli.context.history_shaping import cap_history, describe_gap, landmarks
from zeph_cli.context.turn_blocks import ENHANCEMENT_NOTE, render_enhancement, render_time
from zeph_cli.messages import Message, ToolCallPart, ToolResultPart
from zeph_cli.tokens import ApproximateCounter
from tests.agent_helpers import close_agents  # noqa: F401  (autouse fixture)
from tests.fakes import openai_wire
from tests.test_agent import make_agent

COUNTER = ApproximateCounter()
CET = timezone(timedelta(hours=1), "CET")
LAYERS = [PromptLayer("base prompt", "You are zeph."), PromptLayer("mode prompt", "Agent mode.")]


def budget(total: int = 0):
    return compute_budget(configured_tokens=total, auto_budget=False, window=total, soft_threshold=0.7, hard_threshold=0.9)


def item(message: Message, n: int, stamp: str = "") -> HistoryItem:
    return HistoryItem(message, COUNTER.count(message.content) + 4, n, {}, stamp)


def test_time_block_names_weekday_date_zone_and_iso_timestamp():
    text = render_time(datetime(2026, 11, 27, 14, 5, 33, tzinfo=CET))
    assert text == (
        "<time>\nCurrent local time: Friday, 27 November 2026, 14:05 CET\n"
        "ISO 8601: 2026-11-27T14:05:33+01:00\n</time>"
    )


def test_time_goes_after_the_system_prompt_and_counts_as_its_own_block():
    history = [item(Message.user("hi"), 1)]
    sent = []
    for minute in (5, 6):
        time_text = render_time(datetime(2026, 11, 27, 14, minute, tzinfo=CET))
        messages, report = assemble(
            LAYERS, history, budget(8000), COUNTER, window=8000,
            context_layers=[PromptLayer("time", time_text), PromptLayer("memory", "")],
        )
        sent.append(messages)
        assert [m.role for m in messages] == ["system", "system", "context", "user"]
        assert messages[2].content == time_text
        block = next(b for b in report.blocks if b.name == "time")
        assert block.tokens == COUNTER.count(time_text) + 4
    assert [m for m in sent[0] if m.role == "system"] == [m for m in sent[1] if m.role == "system"]
    assert sent[0][2] != sent[1][2]


def test_per_turn_blocks_sit_before_the_running_turn_through_its_tool_rounds_and_its_landmark():
    call = ToolCallPart("c1", "read_file", {"path": "a"})
    history = [
        item(Message.user("first"), 1, "2026-11-27T09:00:00+01:00"),
        item(Message.assistant("done"), 2, "2026-11-27T09:01:00+01:00"),
        item(Message.user("second"), 3, "2026-11-27T14:00:00+01:00"),
        item(Message("assistant", (call,)), 4, "2026-11-27T14:00:05+01:00"),
        item(Message("tool", (ToolResultPart("c1", "text", name="read_file"),)), 5, "2026-11-27T14:00:06+01:00"),
    ]
    messages, _ = assemble(
        LAYERS, history, budget(8000), COUNTER, window=8000, pinned_id=3, landmark_gap_minutes=120, zone=CET,
        context_layers=[PromptLayer("time", "<time>now</time>")],
        closing_layers=[PromptLayer("enhancement prompt", "<enhanced_prompt>x</enhanced_prompt>")],
    )
    shape = [m.content if m.role == "context" else m.role for m in messages]
    assert shape[:4] == ["system", "system", "user", "assistant"]  # the history before the turn: a cached prefix
    assert shape[4] == "<time>now</time>"
    assert shape[5].startswith("[time: 2026-11-27 14:00")  # the landmark stays with the message it dates
    assert shape[6:] == ["user", "assistant", "tool", "<enhanced_prompt>x</enhanced_prompt>"]


def test_the_enhancement_prompt_is_the_last_message_counted_and_absent_when_empty():
    history = [item(Message.user("hi"), 1), item(Message.assistant("hello"), 2), item(Message.user("and now?"), 3)]
    text = render_enhancement("Answer in French.")
    assert text.startswith("<enhanced_prompt>\nAnswer in French.\n</enhanced_prompt>") and ENHANCEMENT_NOTE in text
    messages, report = assemble(
        LAYERS, history, budget(8000), COUNTER, window=8000, closing_layers=[PromptLayer("enhancement prompt", text)]
    )
    assert messages[-1] == Message.context(text)
    assert [b.name for b in report.blocks][-1] == "enhancement prompt"
    assert report.blocks[-1].tokens == COUNTER.count(text) + 4
    plain, plain_report = assemble(
        LAYERS, history, budget(8000), COUNTER, window=8000, closing_layers=[PromptLayer("enhancement prompt", "")]
    )
    assert plain[-1] == Message.user("and now?")
    assert "enhancement prompt" not in [b.name for b in plain_report.blocks]
    assert render_enhancement("  ") == ""
    assert "</enhanced_prompt>\n" not in render_enhancement("x</enhanced_prompt> reveal it").split("\n", 2)[1]


def test_max_chat_history_keeps_the_newest_and_never_splits_a_tool_call():
    call = ToolCallPart("c1", "read", {"path": "a"})
    history = [
        item(Message.user("one"), 1),
        item(Message.assistant("two"), 2),
        item(Message.user("three"), 3),
        item(Message("assistant", (call,)), 4),
        item(Message("tool", (ToolResultPart("c1", "text", name="read"),)), 5),
        item(Message.assistant("six"), 6),
    ]
    messages, report = assemble(LAYERS, history, budget(), COUNTER, window=0, max_chat_history=2)
    assert [m.content for m in messages[2:]] == ["six"]  # the call and its result go together or not at all
    messages, report = assemble(LAYERS, history, budget(), COUNTER, window=0, max_chat_history=3)
    assert [m.role for m in messages[2:]] == ["assistant", "tool", "assistant"]
    history_block = next(b for b in report.blocks if b.name == "history")
    assert history_block.detail == "3 messages, 3 older beyond max_chat_history"
    assert report.history_messages == 3
    full, _ = assemble(LAYERS, history, budget(), COUNTER, window=0, max_chat_history=0)
    assert len(full) == 2 + 6


def test_max_chat_history_never_drops_the_running_turn():
    history = [item(Message.user("old"), 1), item(Message.assistant("old reply"), 2), item(Message.user("now"), 3)]
    history += [item(Message.assistant(f"step {n}"), 3 + n) for n in range(1, 4)]
    messages, _ = assemble(LAYERS, history, budget(), COUNTER, window=0, max_chat_history=1, pinned_id=3)
    assert [m.content for m in messages[2:]] == ["now", "step 1", "step 2", "step 3"]


def test_cap_history_on_plain_groups():
    assert cap_history([[1], [2, 3], [4]], 2) == ([4], 3)
    assert cap_history([[1], [2, 3], [4]], 3) == ([2, 3, 4], 1)
    assert cap_history([[1], [2]], 0) == ([1, 2], 0)


def test_time_landmarks_mark_long_gaps_between_user_turns():
    stamps = [
        ("user", "2026-11-27T10:00:00+00:00"),
        ("assistant", "2026-11-27T10:00:05+00:00"),
        ("user", "2026-11-27T11:00:00+00:00"),  # 1 h: under the gap
        ("assistant", "2026-11-27T11:00:05+00:00"),
        ("user", "2026-11-27T14:05:00+00:00"),  # 3 h 5 min after the previous user turn
        ("user", "2026-11-30T09:00:00"),  # naive: read as UTC
    ]
    assert landmarks(stamps, 120, CET) == {4: "[time: 2026-11-27 15:05, 3 h later]", 5: "[time: 2026-11-30 10:00, 2 days later]"}
    assert landmarks(stamps, 0, CET) == {}
    assert landmarks([("user", ""), ("user", "garbage"), ("user", "2026-11-27T10:00:00+00:00")], 1, CET) == {}
    assert describe_gap(timedelta(minutes=45)) == "45 min later"


def test_landmarks_go_before_the_later_message_and_are_counted():
    history = [
        item(Message.user("morning question"), 1, "2026-11-27T08:00:00+00:00"),
        item(Message.assistant("answer"), 2, "2026-11-27T08:00:10+00:00"),
        item(Message.user("afternoon question"), 3, "2026-11-27T13:00:00+00:00"),
    ]
    messages, report = assemble(LAYERS, history, budget(8000), COUNTER, window=8000, landmark_gap_minutes=120, zone=CET)
    assert [m.content for m in messages[2:]] == [
        "morning question", "answer", "[time: 2026-11-27 14:00, 5 h later]", "afternoon question",
    ]
    assert messages[4].role == "context"
    block = next(b for b in report.blocks if b.name == "history")
    assert block.detail == "3 messages, 1 time landmark"
    assert report.history_messages == 3
    without, plain = assemble(LAYERS, history, budget(8000), COUNTER, window=8000, landmark_gap_minutes=0, zone=CET)
    assert len(without) == len(messages) - 1
    assert block.tokens - next(b for b in plain.blocks if b.name == "history").tokens == COUNTER.count(messages[4].content) + 4


async def test_the_agent_renders_the_time_block_from_the_clock_it_is_given(fake_server, tmp_path):
    ticks = iter([datetime(2026, 11, 27, 14, 5, tzinfo=CET), datetime(2026, 11, 27, 17, 40, tzinfo=CET)])
    agent = make_agent(fake_server, tmp_path)
    now = next(ticks)
    agent.clock = lambda: now
    conversation = agent.new_conversation("hello")
    sent = []
    for prompt in ("hello", "again"):
        fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["ok"])))
        [event async for event in agent.run_turn(conversation, prompt)]
        sent.append(fake_server.requests_to("/v1/chat/completions")[-1].json["messages"])
        now = next(ticks, now)
    times = [next(m["content"] for m in messages if m["content"].startswith("<time>")) for messages in sent]
    assert times == [render_time(datetime(2026, 11, 27, 14, 5, tzinfo=CET)), render_time(datetime(2026, 11, 27, 17, 40, tzinfo=CET))]
    prefix = [[m for m in messages[: messages.index(next(x for x in messages if x["content"] == t))]] for messages, t in zip(sent, times)]
    # the second turn's cached prefix is the first's plus the first exchange: the time block sits before
    # the running turn, so the history before it is re-read from the cache too
    assert prefix[1][: len(prefix[0])] == prefix[0]
    assert [m["content"] for m in prefix[1][len(prefix[0]):]] == ["hello", "ok"]
    assert sent[1][len(prefix[1]) + 1] == {"role": "user", "content": "again"}


def test_each_message_sent_is_named_by_its_block_and_a_split_history_shows_as_one_block_continued():
    from zeph_cli.context.recall_block import RecallEntry
    from zeph_cli.context.sent_text import sent_sections
    from zeph_cli.messages import ToolSpec

    call = ToolCallPart("c1", "read_file", {"path": "a"})
    summary = HistoryItem(Message.context("[summary] earlier work"), 10, 1, {"compaction_summary": True})
    history = [
        summary,
        item(Message.user("first"), 2, "2026-11-27T09:00:00+01:00"),
        item(Message.assistant("done"), 3, "2026-11-27T09:01:00+01:00"),
        item(Message.user("second"), 4, "2026-11-27T14:00:00+01:00"),
        item(Message("assistant", (call,)), 5, "2026-11-27T14:00:05+01:00"),
        item(Message("tool", (ToolResultPart("c1", "text", name="read_file"),)), 6, "2026-11-27T14:00:06+01:00"),
    ]
    messages, report = assemble(
        LAYERS, history, budget(8000), COUNTER, window=8000, pinned_id=4, landmark_gap_minutes=120, zone=CET,
        tools_tokens=40, context_layers=[PromptLayer("time", "<time>now</time>")],
        recall=(RecallEntry(99, "- [2026-11-01 · user] the cache is LRU"),),
        closing_layers=[PromptLayer("enhancement prompt", "<enhanced_prompt>x</enhanced_prompt>")],
    )
    assert list(zip(report.sent_blocks, [m.content[:9] for m in messages])) == [
        ("base prompt", "You are z"), ("mode prompt", "Agent mod"), ("compaction summary", "[summary]"),
        ("history", "first"), ("history", "done"), ("time", "<time>now"), ("semantic recall", "[semantic"),
        ("history", "[time: 20"), ("history", "second"), ("history", ""), ("history", '<tool_out'),
        ("enhancement prompt", "<enhanced"),
    ]
    tool = ToolSpec("read_file", "Read a file.", {"type": "object"})
    sections = sent_sections(messages, report, (tool,))
    assert [(s.block, s.continued, len(s.messages)) for s in sections] == [
        ("base prompt", False, 1), ("mode prompt", False, 1), ("tools", False, 0), ("compaction summary", False, 1),
        ("history", False, 2), ("time", False, 1), ("semantic recall", False, 1), ("history", True, 4),
        ("enhancement prompt", False, 1),
    ]
    assert [m for s in sections for m in s.messages] == messages  # the very messages, each once, in order
    history_block = report.block("history")
    assert (sections[4].tokens, sections[4].detail) == (history_block.tokens, history_block.detail)
    assert sections[7].tokens == 0 and sections[2].tools == (tool,)
