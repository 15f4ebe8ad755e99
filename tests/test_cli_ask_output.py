"""What `zeph ask` prints of a turn, through the real executable against the fake OpenAI-compatible server:
the reply after a compaction and retry (streamed or not), the mark of a reply cut by the length limit,
and usage estimated (marked `~`) when the server reports none."""

from __future__ import annotations

import json
import re

import pytest

from tests.cli_helpers import db_rows, err, out, run_zeph
from tests.fakes import openai_wire
from tests.fakes.server import FakeResponse, RecordedRequest
from tests.scripted_model import CHAT_PATH, ScriptedModel


class NoStreamScriptedModel(ScriptedModel):
    """A `ScriptedModel` whose chat requests come unstreamed (`zeph ask --no-stream`): a request
    carrying zeph's system prompt is a chat request, anything else a side job."""

    def __call__(self, request: RecordedRequest) -> FakeResponse | None:
        body = request.json if request.path == CHAT_PATH else {}
        is_chat = any(m.get("role") == "system" for m in body.get("messages", ()))
        if is_chat and not body.get("stream"):
            self.kinds.append("chat")
            return self.chat.popleft() if self.chat else openai_wire.json_response(
                openai_wire.completion(content="(nothing scripted)", usage=None))
        return super().__call__(request)

    def say(self, text: str) -> None:
        self.chat.append(openai_wire.json_response(openai_wire.completion(content=text, usage=None)))


LONG = "The history of this session goes on. " * 40


def earlier_turns(model: ScriptedModel, env: dict[str, str], stream_flag: list[str], turns: int = 3) -> None:
    """A session with something to compact: `turns` questions with long answers."""
    for i in range(turns):
        model.say(f"Answer {i}. {LONG}")
        args = ["ask", *stream_flag, *(["-c"] if i else []), f"Question {i}: {LONG}"]
        result = run_zeph(*args, env=env)
        assert result.returncode == 0, err(result)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
def test_a_reply_after_a_compaction_and_retry_is_printed(fake_server, compatible, stream):
    model = ScriptedModel() if stream else NoStreamScriptedModel()
    fake_server.respond_with(model)
    flag = [] if stream else ["--no-stream"]
    earlier_turns(model, compatible, flag)

    fake_server.queue(openai_wire.context_length_exceeded(), path=CHAT_PATH)  # the next chat request fails
    model.say("It fits now.")
    result = run_zeph("ask", *flag, "-c", "One more question.", env=compatible)

    assert result.returncode == 0, err(result)
    assert out(result) == "It fits now.\n"  # the reply is on stdout, not only in the database
    assert "the request did not fit: compacting the context" in err(result)
    assert model.count("compaction") == 1
    last = db_rows("select role, content from messages where role = 'assistant' order by id desc limit 1")
    assert last == [{"role": "assistant", "content": "It fits now."}]


def test_json_after_a_compaction_and_retry_carries_the_reply_and_the_compaction(fake_server, compatible):
    model = ScriptedModel()
    fake_server.respond_with(model)
    earlier_turns(model, compatible, [])
    fake_server.queue(openai_wire.context_length_exceeded(), path=CHAT_PATH)
    model.say("It fits now.")
    result = run_zeph("ask", "-c", "--json", "One more question.", env=compatible)
    assert result.returncode == 0, err(result)
    data = json.loads(out(result))
    assert data["content"] == "It fits now." and data["stop_reason"] == "stop"
    assert [c["kind"] for c in data["compactions"]] == ["reactive_retry"]


# ---- a reply cut by the length limit ----


def test_a_streamed_reply_cut_by_the_length_limit_is_marked_on_stderr(fake_server, compatible):
    events = openai_wire.text_chunks(["The list goes: one, two, thr"], finish_reason="length", usage=(12, 7, 0))
    fake_server.queue(openai_wire.stream_response(events))  # a real length stop: as many tokens as were allowed
    result = run_zeph("ask", "Count to a hundred.", env={**compatible, "ZEPH_LLM_MAX_TOKENS": "7"})
    assert result.returncode == 0, err(result)
    assert out(result) == "The list goes: one, two, thr\n"
    warnings = [line for line in err(result).splitlines() if line.startswith("zeph: warning:")]
    assert len(warnings) == 1
    assert "length limit of 7 tokens" in warnings[0] and "llm.max_tokens" in warnings[0]


def test_an_unstreamed_reply_cut_by_the_length_limit_is_marked_and_json_says_length(fake_server, compatible):
    fake_server.queue(openai_wire.json_response(openai_wire.completion(content="Cut sho", finish_reason="length",
                                                                       usage=(12, 3, 0))))
    result = run_zeph("ask", "--no-stream", "--json", "Talk.", env={**compatible, "ZEPH_LLM_MAX_TOKENS": "3"})
    assert result.returncode == 0, err(result)
    assert json.loads(out(result))["stop_reason"] == "length"
    assert "llm.max_tokens" in err(result)


def test_a_reply_that_ended_normally_has_no_length_mark(fake_server, compatible):
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Done."])))
    result = run_zeph("ask", "Talk.", env=compatible)
    assert result.returncode == 0 and out(result) == "Done.\n" and err(result) == ""


# ---- usage when the server reports none ----


def test_usage_without_a_reported_figure_is_estimated_and_marked(fake_server, compatible):
    reply = "word " * 200  # 1,000 characters: ~250 tokens by the chars/4 estimate
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks([reply], usage=None)))
    result = run_zeph("ask", "-u", "Say many words.", env=compatible)
    assert result.returncode == 0, err(result)
    (line,) = [line for line in err(result).splitlines() if line.startswith("tokens:")]
    match = re.match(r"tokens: ~([\d,]+) in · ~250 out", line)
    assert match, line
    assert int(match.group(1).replace(",", "")) > 100  # the request's own estimate: the system prompt alone is more
    assert "estimated" in line


def test_json_usage_without_a_reported_figure_is_the_estimate_flagged(fake_server, compatible):
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["word " * 200], usage=None)))
    data = json.loads(out(run_zeph("ask", "--json", "Say many words.", env=compatible)))
    usage = data["usage"]
    assert usage["estimated"] is True
    assert usage["output_tokens"] == 250
    assert usage["input_tokens"] == data["context"]["used_tokens"]  # the request's estimate


def test_reported_usage_is_shown_as_reported(fake_server, compatible):
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Hi."], usage=(1234, 5, 0))))
    result = run_zeph("ask", "-u", "--json", "hello", env=compatible)
    usage = json.loads(out(result))["usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["estimated"]) == (1234, 5, False)
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Hi."], usage=(1234, 5, 0))))
    line = [x for x in err(run_zeph("ask", "-u", "hello", env=compatible)).splitlines() if x.startswith("tokens:")][0]
    assert line.startswith("tokens: 1,234 in · 5 out") and "~" not in line


def test_the_context_command_says_where_the_window_came_from_when_known(fake_server, compatible):
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Hi."])))
    assert run_zeph("ask", "hello", env=compatible).returncode == 0
    data = json.loads(out(run_zeph("context", "--json", env=compatible)))
    assert data["context"]["window"] == 128_000
    assert "window_source" in data["context"]
    text = out(run_zeph("context", env=compatible))
    first = text.splitlines()[0]
    source = data["context"]["window_source"]
    assert f"window 128k ({source})" in first if source else "window 128k ·" in first

