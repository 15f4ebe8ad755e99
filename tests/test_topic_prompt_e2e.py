"""The topic prompt (`zeph ask --topic`, `-s`): sent as `<topic_prompt>`, kept with the session for
`-c` turns, shown in `zeph context`; through the real `zeph` and the wire-level fake model."""

from __future__ import annotations

import json

from tests.cli_helpers import err, out, run_zeph
from tests.chat_wire import chat_requests, queue_reply, system_text

TOPIC = "<topic_prompt>\nThis session is about the billing service.\n</topic_prompt>"


def test_topic_is_sent_kept_for_continued_turns_and_shown(fake_server, compatible):
    queue_reply(fake_server)
    queue_reply(fake_server)
    first = run_zeph("ask", "--topic", "This session is about the billing service.", "hello", env=compatible)
    assert first.returncode == 0, err(first)
    again = run_zeph("ask", "-c", "and then?", env=compatible)
    assert again.returncode == 0, err(again)
    requests = chat_requests(fake_server)
    assert TOPIC in system_text(requests[0]) and TOPIC in system_text(requests[1])
    shown = run_zeph("context", "--json", env=compatible)
    assert shown.returncode == 0, err(shown)
    names = [b["name"] for b in json.loads(out(shown))["context"]["blocks"]]
    assert "topic prompt" in names and names.index("topic prompt") > names.index("mode prompt")


def test_without_a_topic_there_is_no_topic_block(fake_server, compatible):
    queue_reply(fake_server)
    result = run_zeph("ask", "hello", env=compatible)
    assert result.returncode == 0, err(result)
    assert "<topic_prompt>" not in system_text(chat_requests(fake_server)[-1])


def test_short_s_still_sets_the_topic(fake_server, compatible):
    queue_reply(fake_server)
    result = run_zeph("ask", "-s", "Answer in French.", "hello", env=compatible)
    assert result.returncode == 0, err(result)
    assert "<topic_prompt>\nAnswer in French.\n</topic_prompt>" in system_text(chat_requests(fake_server)[-1])
