"""The per-turn blocks end to end through the real `zeph` and the wire-level fake model:
<time> changes between turns while the cached prefix does not, the enhancement prompt is the
request's last message, max_chat_history and time landmarks shape the history sent."""

from __future__ import annotations

import os
import re
import sqlite3
import time
from datetime import datetime
from pathlib import Path

from tests.chat_wire import chat_requests, queue_reply
from tests.cli_helpers import db_rows, err, out, run_zeph
from zeph_cli.context.turn_blocks import ENHANCEMENT_NOTE
from zeph_cli.providers.anthropic import to_wire
from zeph_cli.messages import Message


def _messages(request) -> list[dict]:
    return request.json["messages"]


def _time_index(messages: list[dict]) -> int:
    return next(n for n, m in enumerate(messages) if m["role"] == "system" and m["content"].startswith("<time>"))


def _next_second() -> None:
    """Wait until the wall clock's second changes, so two turns' timestamps differ."""
    start = int(time.time())
    while int(time.time()) == start:
        time.sleep(0.05)


def test_the_time_block_changes_between_turns_while_the_cached_prefix_does_not(fake_server, compatible):
    queue_reply(fake_server, "Hello.")
    queue_reply(fake_server, "Again.")
    before = datetime.now().astimezone().replace(microsecond=0)
    assert run_zeph("ask", "hello", env=compatible).returncode == 0
    _next_second()
    result = run_zeph("ask", "-c", "and again", env=compatible)
    after = datetime.now().astimezone()
    assert result.returncode == 0, err(result)
    first, second = (_messages(r) for r in chat_requests(fake_server))
    i, j = _time_index(first), _time_index(second)
    # every message of the cached prefix, byte for byte: the system prompt and, on the second turn, the
    # first exchange too — the time block goes just before the running turn
    assert first[:i] == second[:i] and i > 0
    assert [m["content"] for m in second[i:j]] == ["hello", "Hello."]
    assert first[i]["content"] != second[j]["content"]
    stamps = [re.search(r"ISO 8601: (\S+)", m[k]["content"]).group(1) for m, k in ((first, i), (second, j))]
    assert before <= datetime.fromisoformat(stamps[0]) < datetime.fromisoformat(stamps[1]) <= after
    assert re.search(r"Current local time: \w+day, \d+ \w+ \d{4}, \d\d:\d\d ", first[i]["content"])
    assert second[-1] == {"role": "user", "content": "and again"}


def test_inject_time_off_sends_no_time_block(fake_server, compatible):
    queue_reply(fake_server)
    assert run_zeph("ask", "hello", env={**compatible, "ZEPH_CONTEXT_INJECT_TIME": "false"}).returncode == 0
    assert not any("<time>" in m["content"] for m in _messages(chat_requests(fake_server)[-1]) if m["content"])


def test_zeph_context_lists_the_time_and_enhancement_blocks(compatible, fake_server):
    queue_reply(fake_server)
    assert run_zeph("ask", "hello", env=compatible).returncode == 0
    result = run_zeph("context", env={**compatible, "ZEPH_CONTEXT_ENHANCED_PROMPT": "Be terse."})
    assert result.returncode == 0, err(result)
    assert re.search(r"^\s*time\b.*\d", out(result), re.MULTILINE), out(result)
    assert re.search(r"^\s*enhancement prompt\b.*\d", out(result), re.MULTILINE), out(result)


def test_the_enhancement_prompt_is_the_last_message_and_absent_when_unset(fake_server, compatible):
    for _ in range(3):
        queue_reply(fake_server)
    assert run_zeph("ask", "hello", env={**compatible, "ZEPH_CONTEXT_ENHANCED_PROMPT": "Answer in French."}).returncode == 0
    last = _messages(chat_requests(fake_server)[-1])[-1]
    assert last["role"] == "system"
    assert last["content"].startswith("<enhanced_prompt>\nAnswer in French.\n</enhanced_prompt>")
    assert ENHANCEMENT_NOTE in last["content"]
    assert sum("<enhanced_prompt>" in (m["content"] or "") for m in _messages(chat_requests(fake_server)[-1])) == 1
    # a session's own, from --enhance, kept for its later turns
    result = run_zeph("ask", "hi", "--enhance", "Use bullet points.", env=compatible)
    assert result.returncode == 0, err(result)
    assert "Use bullet points." in _messages(chat_requests(fake_server)[-1])[-1]["content"]
    result = run_zeph("ask", "-c", "more", env=compatible)
    assert result.returncode == 0, err(result)
    messages = _messages(chat_requests(fake_server)[-1])
    assert "Use bullet points." in messages[-1]["content"]
    assert not any("<enhanced_prompt>" in (m["content"] or "") for m in messages[:-1])


def test_without_an_enhancement_prompt_the_user_message_is_last(fake_server, compatible):
    queue_reply(fake_server)
    assert run_zeph("ask", "hello", env=compatible).returncode == 0
    messages = _messages(chat_requests(fake_server)[-1])
    assert messages[-1] == {"role": "user", "content": "hello"}
    assert not any("<enhanced_prompt>" in (m["content"] or "") for m in messages)


def test_on_anthropic_the_enhancement_prompt_stays_last_and_out_of_the_system_block():
    closing = "<enhanced_prompt>\nBe terse.\n</enhanced_prompt>"
    system, turns = to_wire([Message.system("You are zeph."), Message.user("hi"), Message.context(closing)])
    assert system[0]["text"] == "You are zeph."
    assert turns[-1]["role"] == "user"
    assert [b["text"] for b in turns[-1]["content"]] == ["hi", closing]


def test_max_chat_history_and_time_landmarks_shape_what_is_sent(fake_server, compatible):
    for _ in range(4):
        queue_reply(fake_server, "ok")
    for prompt in ("first", "second"):
        assert run_zeph("ask", *(["-c"] if prompt != "first" else []), prompt, env=compatible).returncode == 0
    # the first exchange happened a day earlier: the store's timestamps say so
    with sqlite3.connect(Path(os.environ["ZEPH_HOME"]) / "zeph.db") as conn:
        ids = [r[0] for r in conn.execute("select id from messages order by id")]
        conn.execute("update messages set created_at = '2026-01-01T08:00:00+00:00' where id in (?, ?)", ids[:2])
    assert run_zeph("ask", "-c", "third", env=compatible).returncode == 0
    messages = _messages(chat_requests(fake_server)[-1])
    contents = [m["content"] for m in messages if m["role"] != "system" or m["content"].startswith("[time:")]
    mark = next(n for n, c in enumerate(contents) if c and c.startswith("[time: "))
    assert contents[mark + 1] == "second" and re.fullmatch(r"\[time: \d{4}-\d\d-\d\d \d\d:\d\d, \d+ days later\]", contents[mark])
    assert contents[0] == "first"
    result = run_zeph("ask", "-c", "fourth", env={**compatible, "ZEPH_CONTEXT_MAX_CHAT_HISTORY": "2"})
    assert result.returncode == 0, err(result)
    sent = [m for m in _messages(chat_requests(fake_server)[-1]) if m["role"] != "system"]
    assert [m["content"] for m in sent] == ["ok", "fourth"]
    assert db_rows("select count(*) as n from messages")[0]["n"] == 8
