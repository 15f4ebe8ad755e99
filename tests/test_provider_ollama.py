"""OllamaProvider against a real HTTP fake speaking Ollama's wire format, via the real SDK."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

import pytest

from tests.fakes import ollama_wire as wire
from tests.fakes.server import FakeResponse, closed_port_url, html_page
from zeph_cli import errors
from zeph_cli.messages import (
    Message,
    ReplyBuilder,
    StreamEnd,
    TextDelta,
    TextPart,
    ToolCallDelta,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
    UsageUpdate,
)
from zeph_cli.models import profile_for
from zeph_cli.providers.base import ChatRequest, ProviderSettings
from zeph_cli.providers.ollama import OllamaProvider

MODEL = wire.MODEL


def make_provider(url: str, *, model: str = MODEL, max_retries: int = 2, timeout: float = 5.0, base: float = 0.01):
    settings = ProviderSettings(
        kind="ollama", name="ollama", model=model, base_url=url, timeout_secs=timeout, max_retries=max_retries
    )
    return OllamaProvider(settings, retry_base_delay=base)


@pytest.fixture
async def provider(fake_server):
    p = make_provider(fake_server.url)
    yield p
    await p.aclose()


def request(*messages: Message, **kwargs) -> ChatRequest:
    return ChatRequest(messages=messages or (Message.user("hi"),), **kwargs)


async def collect(provider, req: ChatRequest) -> list:
    return [event async for event in provider.stream(req)]


async def server_outcome(fake_server, path: str = "/api/chat") -> str:
    """How the fake server's last reply on `path` ended, once it has ended (client-closed, complete...)."""
    record = fake_server.requests_to(path)[-1]
    for _ in range(1500):  # 30 s at most: a bound on a hang
        if record.outcome:
            break
        await asyncio.sleep(0.02)
    return record.outcome


def open_connections(provider) -> list:
    """The connections still held by the SDK's httpx pool (a response left open keeps one)."""
    return list(provider._client._client._transport._pool.connections)


# ---- streaming, request shape -------------------------------------------------


async def test_stream_text_usage_and_recorded_request(fake_server, provider):
    fake_server.queue(wire.chat_stream("Hel", "lo", prompt_eval_count=31, eval_count=7), path="/api/chat")
    req = request(
        Message.system("be brief"),
        Message.context("repo map: a.py"),
        Message.user("hello"),
        Message.assistant("hi there"),
        Message.user("again"),
        max_tokens=512,
        context_window=16384,
    )

    events = await collect(provider, req)

    assert events == [
        TextDelta("Hel"),
        TextDelta("lo"),
        UsageUpdate(Usage(input_tokens=31, output_tokens=7)),
        StreamEnd("stop"),
    ]
    [sent] = fake_server.requests_to("/api/chat")
    body = sent.json
    assert sent.method == "POST"
    assert body["model"] == MODEL
    assert body["stream"] is True
    assert [(m["role"], m["content"]) for m in body["messages"]] == [
        ("system", "be brief"),
        ("system", "repo map: a.py"),
        ("user", "hello"),
        ("assistant", "hi there"),
        ("user", "again"),
    ]
    assert body["options"] == {"num_predict": 512, "num_ctx": 16384}  # no temperature when None
    assert not body.get("tools")


async def test_temperature_sent_when_set_and_no_num_ctx_without_window(fake_server, provider):
    fake_server.queue(wire.chat_stream("ok"), path="/api/chat")

    await collect(provider, request(max_tokens=100, temperature=0.2))

    assert fake_server.requests_to("/api/chat")[0].json["options"] == {"num_predict": 100, "temperature": 0.2}


async def test_ndjson_line_split_across_chunks(fake_server, provider):
    lines = wire.ndjson_lines(wire.chat_chunk("one "), wire.chat_chunk("two"), wire.chat_chunk(done=True))
    joined = "".join(lines)
    cut = len(lines[0]) + 10  # second object split in the middle
    fake_server.queue(wire.raw_stream([joined[:cut], joined[cut:]]), path="/api/chat")

    builder = ReplyBuilder.from_events(await collect(provider, request()))

    assert builder.content == "one two"
    assert builder.stop_reason == "stop"


async def test_done_reason_length_is_passed_on(fake_server, provider):
    fake_server.queue(wire.chat_stream("cut", done_reason="length"), path="/api/chat")

    events = await collect(provider, request())

    assert events[-1] == StreamEnd("length")


async def test_non_streaming_makes_a_plain_request(fake_server, provider):
    fake_server.queue(wire.chat_reply("The whole answer.", prompt_eval_count=40, eval_count=5), path="/api/chat")

    events = await collect(provider, request(stream=False, temperature=0.0))

    assert events == [
        TextDelta("The whole answer."),
        UsageUpdate(Usage(input_tokens=40, output_tokens=5)),
        StreamEnd("stop"),
    ]
    body = fake_server.requests_to("/api/chat")[0].json
    assert body["stream"] is False
    assert body["options"]["temperature"] == 0.0


# ---- tools ----------------------------------------------------------------------

READ_FILE = ToolSpec(
    "read_file",
    "Read a file",
    {"type": "object", "properties": {"path": {"type": "string", "description": "file path"}}, "required": ["path"]},
)


async def test_two_tool_calls_in_one_streamed_chunk(fake_server, provider):
    calls = [
        wire.tool_call("read_file", {"path": "a.py"}, index=0),
        wire.tool_call("read_file", {"path": "ü/b.py", "limit": 3}, index=1),
    ]
    fake_server.queue(wire.chat_stream("Let me look.", tool_calls=calls), path="/api/chat")

    events = await collect(provider, request(Message.user("read both"), tools=(READ_FILE,)))

    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert [(d.index, d.id, d.name) for d in deltas] == [(0, None, "read_file"), (1, None, "read_file")]
    assert [json.loads(d.arguments) for d in deltas] == [{"path": "a.py"}, {"path": "ü/b.py", "limit": 3}]
    message = ReplyBuilder.from_events(events).message()
    assert message.content == "Let me look."
    assert [(c.name, c.arguments) for c in message.tool_calls] == [
        ("read_file", {"path": "a.py"}),
        ("read_file", {"path": "ü/b.py", "limit": 3}),
    ]
    assert fake_server.requests_to("/api/chat")[0].json["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file",
                "parameters": {
                    "type": "object",
                    "required": ["path"],
                    "properties": {"path": {"type": "string", "description": "file path"}},
                },
            },
        }
    ]


NESTED = {
    "type": "object",
    "$defs": {"Stop": {"type": "object", "properties": {"city": {"type": "string"}, "nights": {"type": "integer"}}}},
    "properties": {
        "trip": {"type": "object", "properties": {"who": {"type": "object", "properties": {"name": {"type": "string"}}}}},
        "stops": {"type": "array", "items": {"$ref": "#/$defs/Stop"}},
        "age": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        "either": {"type": ["string", "number"]},
    },
    "required": ["trip"],
}


@pytest.mark.parametrize("stream", [True, False])
async def test_nested_tool_schemas_reach_the_server_as_written(fake_server, provider, stream):
    """MCP tools bring nested schemas; the SDK's Tool model would keep one level and drop anyOf and $defs."""
    reply = wire.chat_stream("ok") if stream else wire.chat_reply("ok")
    fake_server.queue(reply, path="/api/chat")
    await collect(provider, request(stream=stream, tools=(ToolSpec("mcp__plan", "Plan a trip", NESTED),)))
    body = fake_server.requests_to("/api/chat")[0].json
    assert body["tools"] == [{"type": "function", "function": {"name": "mcp__plan", "description": "Plan a trip", "parameters": NESTED}}]
    assert body["model"] == MODEL and body["stream"] is stream and body["messages"][-1]["role"] == "user"
    assert body["options"]["num_predict"] > 0


async def test_tool_calls_in_separate_chunks_get_distinct_indexes(fake_server, provider):
    lines = wire.ndjson_lines(
        wire.chat_chunk(tool_calls=[wire.tool_call("grep", {"pattern": "x"})]),
        wire.chat_chunk(tool_calls=[wire.tool_call("read_file", {"path": "y"})]),
        wire.chat_chunk(done=True),
    )
    fake_server.queue(wire.raw_stream(lines), path="/api/chat")

    calls = ReplyBuilder.from_events(await collect(provider, request(tools=(READ_FILE,)))).tool_calls()

    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_0", "grep", {"pattern": "x"}),
        ("call_1", "read_file", {"path": "y"}),
    ]


async def test_two_tool_calls_non_streaming(fake_server, provider):
    calls = [wire.tool_call("grep", {"pattern": "TODO"}), wire.tool_call("read_file", {"path": "x"}, index=1)]
    fake_server.queue(wire.chat_reply("", tool_calls=calls), path="/api/chat")

    events = await collect(provider, request(stream=False, tools=(READ_FILE,)))

    assert [e for e in events if isinstance(e, ToolCallDelta)] == [
        ToolCallDelta(0, None, "grep", '{"pattern": "TODO"}'),
        ToolCallDelta(1, None, "read_file", '{"path": "x"}'),
    ]
    assert not [e for e in events if isinstance(e, TextDelta)]
    assert isinstance(events[-1], StreamEnd)


async def test_history_with_tool_calls_and_results(fake_server, provider):
    fake_server.queue(wire.chat_stream("done"), path="/api/chat")
    history = (
        Message.user("look at a and b"),
        Message(
            "assistant",
            (
                TextPart("Reading."),
                ToolCallPart("call_1", "read_file", {"path": "a.py"}),
                ToolCallPart("call_2", "grep", {"pattern": "x", "n": 2}),
            ),
        ),
        Message(
            "tool",
            (
                ToolResultPart("call_1", "print('a')", name="read_file"),
                ToolResultPart("call_2", "no match", name="grep", is_error=True),
            ),
        ),
    )

    await collect(provider, request(*history, tools=(READ_FILE,)))

    messages = fake_server.requests_to("/api/chat")[0].json["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": "Reading.",
        "tool_calls": [
            {"function": {"name": "read_file", "arguments": {"path": "a.py"}}},
            {"function": {"name": "grep", "arguments": {"pattern": "x", "n": 2}}},
        ],
    }
    assert messages[2:] == [
        {"role": "tool", "content": "print('a')", "tool_name": "read_file"},
        {"role": "tool", "content": "no match", "tool_name": "grep"},
    ]


# ---- profile --------------------------------------------------------------------


async def test_profile_uses_num_ctx_from_parameters(fake_server, provider):
    fake_server.queue(wire.show_reply(parameters={"num_ctx": 16384, "stop": ["<|eot_id|>"]}), path="/api/show")

    profile = await provider.profile()

    assert profile.context_window == 16384
    assert profile.output_limit == profile_for(MODEL).output_limit
    assert profile.window_source == "server: ollama /api/show num_ctx"
    [sent] = fake_server.requests_to("/api/show")
    assert sent.method == "POST" and sent.json == {"model": MODEL}


async def test_profile_caps_model_info_context_length(fake_server, provider):
    fake_server.queue(wire.show_reply(context_length=131072), path="/api/show")

    profile = await provider.profile()
    again = await provider.profile()

    assert profile.context_window == 8192
    assert profile.window_source == "server: ollama /api/show context_length 131072, capped at 8192"
    assert again is profile
    assert len(fake_server.requests_to("/api/show")) == 1  # cached per instance


async def test_profile_keeps_a_small_model_info_context_length(fake_server):
    fake_server.queue(wire.show_reply(context_length=4096, architecture="phi3"), path="/api/show")
    p = make_provider(fake_server.url, model="phi3:mini")
    try:
        profile = await p.profile()
    finally:
        await p.aclose()

    # The reply may take at most half the window, so the prompt keeps the other half.
    assert (profile.context_window, profile.output_limit) == (4096, 2048)
    assert profile.window_source == "server: ollama /api/show context_length"


async def test_profile_caps_the_table_window_when_show_states_none(fake_server, provider):
    fake_server.queue(wire.show_reply(context_length=None), path="/api/show")

    profile = await provider.profile()

    assert profile_for(MODEL).context_window > 8192
    assert profile.context_window == 8192
    assert profile.window_source == "model table, capped at 8192"


async def test_discover_is_silent_and_quick_when_show_hangs(fake_server):
    hang = wire.show_reply()
    hang.delay = 60.0  # far beyond the discovery timeout: only giving up ends the wait in time
    fake_server.queue(hang, path="/api/show")
    p = make_provider(fake_server.url, model=MODEL)
    started = time.monotonic()
    try:
        facts = await p.discover()
    finally:
        await p.aclose()

    assert facts.window is None
    assert time.monotonic() - started < 30.0  # a bound on a hang, not a speed figure (a loaded machine is slow)


async def test_profile_falls_back_when_show_404s(fake_server):
    fake_server.queue(wire.error(404, wire.MODEL_NOT_FOUND), path="/api/show")
    p = make_provider(fake_server.url, model="llama9")
    try:
        profile = await p.profile()
    finally:
        await p.aclose()

    assert profile == profile_for("llama9")
    assert len(fake_server.requests_to("/api/show")) == 1


async def test_profile_falls_back_when_server_is_down():
    p = make_provider(closed_port_url(), max_retries=0)
    try:
        assert await p.profile() == profile_for(MODEL)
    finally:
        await p.aclose()


# ---- errors ---------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_model_not_found_says_ollama_pull(fake_server, stream):
    fake_server.queue(wire.error(404, wire.MODEL_NOT_FOUND), path="/api/chat")
    p = make_provider(fake_server.url, model="llama9")
    try:
        with pytest.raises(errors.ModelNotFound) as info:
            await collect(p, request(stream=stream))
    finally:
        await p.aclose()

    assert "ollama pull llama9" in str(info.value)
    assert "not found, try pulling it first" in str(info.value)
    assert info.value.status == 404
    assert len(fake_server.requests_to("/api/chat")) == 1  # not retried


@pytest.mark.parametrize(
    "message, limit",
    [(wire.EXCEEDS_CONTEXT, 4096), (wire.INPUT_TOO_LONG, None), ("prompt is too long: 9000 tokens", None)],
)
async def test_context_length_errors(fake_server, provider, message, limit):
    fake_server.queue(wire.error(400, message), path="/api/chat")

    with pytest.raises(errors.ContextLengthExceeded) as info:
        await collect(provider, request())

    assert "context window" in str(info.value)
    assert info.value.limit == limit  # the window the error states, never the request's 8889 tokens
    assert len(fake_server.requests_to("/api/chat")) == 1


async def test_server_error_500_names_the_url(fake_server, provider):
    fake_server.queue(wire.error(500, wire.RUNNER_CRASHED), path="/api/chat")

    with pytest.raises(errors.ProviderError) as info:
        await collect(provider, request())

    assert type(info.value) is errors.ProviderError
    assert info.value.status == 500
    assert fake_server.url in str(info.value)
    assert wire.RUNNER_CRASHED in str(info.value)
    assert len(fake_server.requests_to("/api/chat")) == 1


async def test_unauthorized_names_the_key_variable(fake_server):
    fake_server.queue(wire.error(401, "unauthorized"), path="/api/chat")
    settings = ProviderSettings(
        kind="ollama", name="ollama", model=MODEL, base_url=fake_server.url,
        api_key="bad-key", api_key_env="OLLAMA_API_KEY", max_retries=0,
    )
    p = OllamaProvider(settings)
    try:
        with pytest.raises(errors.AuthenticationError, match="OLLAMA_API_KEY"):
            await collect(p, request())
    finally:
        await p.aclose()

    assert fake_server.requests_to("/api/chat")[0].headers["authorization"] == "Bearer bad-key"


async def test_error_line_inside_stream(fake_server, provider):
    lines = wire.ndjson_lines(wire.chat_chunk("partial "), {"error": wire.RUNNER_CRASHED})
    fake_server.queue(wire.raw_stream(lines), path="/api/chat")

    seen = []
    with pytest.raises(errors.ProviderError, match="runner process has terminated") as info:
        async for event in provider.stream(request()):
            seen.append(event)

    assert seen == [TextDelta("partial ")]
    assert fake_server.url in str(info.value)


# ---- retries --------------------------------------------------------------------


async def test_503_then_200_honours_retry_after(fake_server):
    # A ten-minute backoff: only honouring Retry-After: 0 lets the reply come before the hang bound.
    p = make_provider(fake_server.url, base=600.0)
    p.retry_max_delay = 600.0
    fake_server.queue(
        wire.error(503, wire.SERVER_BUSY, headers={"Retry-After": "0"}),
        wire.chat_stream("after the queue"),
        path="/api/chat",
    )
    try:
        builder = ReplyBuilder.from_events(await asyncio.wait_for(collect(p, request()), 30))
    finally:
        await p.aclose()

    assert builder.content == "after the queue"
    assert len(fake_server.requests_to("/api/chat")) == 2


async def test_429_waits_for_retry_after_then_succeeds(fake_server):
    p = make_provider(fake_server.url, base=0.0)
    fake_server.queue(
        wire.error(429, wire.USAGE_LIMIT, headers={"Retry-After": "0.3"}),
        wire.chat_reply("fine now"),
        path="/api/chat",
    )
    started = time.monotonic()
    try:
        events = await collect(p, request(stream=False))
    finally:
        await p.aclose()

    assert time.monotonic() - started >= 0.3  # waited as the server asked
    assert events[0] == TextDelta("fine now")
    assert len(fake_server.requests_to("/api/chat")) == 2


async def test_exhausted_retries_on_503_raise_overloaded(fake_server):
    p = make_provider(fake_server.url, max_retries=2)
    fake_server.queue(*[wire.error(503, wire.SERVER_BUSY) for _ in range(3)], path="/api/chat")
    try:
        with pytest.raises(errors.OverloadedError, match="server busy"):
            await collect(p, request())
    finally:
        await p.aclose()

    assert len(fake_server.requests_to("/api/chat")) == 3


async def test_exhausted_retries_on_429_raise_rate_limit(fake_server):
    p = make_provider(fake_server.url, max_retries=1)
    fake_server.queue(*[wire.error(429, wire.USAGE_LIMIT) for _ in range(2)], path="/api/chat")
    try:
        with pytest.raises(errors.RateLimitError, match="hourly usage limit"):
            await collect(p, request(stream=False))
    finally:
        await p.aclose()

    assert len(fake_server.requests_to("/api/chat")) == 2


# ---- transport failures ---------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_connection_refused_names_url_and_fix(stream):
    url = closed_port_url()
    p = make_provider(url, max_retries=1)
    try:
        with pytest.raises(errors.ProviderConnectionError) as info:
            await collect(p, request(stream=stream))
    finally:
        await p.aclose()

    text = str(info.value)
    assert url in text
    assert "ollama serve" in text and "OLLAMA_HOST" in text


@pytest.mark.parametrize("stream", [True, False])
async def test_timeout(fake_server, stream):
    fake_server.queue(FakeResponse(delay=1.0, body=b"{}"), path="/api/chat")
    p = make_provider(fake_server.url, timeout=0.3, max_retries=0)
    try:
        with pytest.raises(errors.ProviderTimeout) as info:  # the late "{}" would be a different error
            await collect(p, request(stream=stream))
    finally:
        await p.aclose()

    assert fake_server.url in str(info.value) and "0.3s" in str(info.value)


@pytest.mark.parametrize("stream", [True, False])
async def test_a_timed_out_attempt_is_not_retried(fake_server, stream):
    for _ in range(3):
        fake_server.queue(FakeResponse(delay=3.0, body=b"{}"), path="/api/chat")
    p = make_provider(fake_server.url, timeout=0.5, max_retries=2)
    started = time.monotonic()
    try:
        with pytest.raises(errors.ProviderTimeout, match="sent nothing for 0.5s"):
            await collect(p, request(stream=stream))
    finally:
        await p.aclose()
    # One attempt in all, given up on once the timeout had passed (how long: benchmarks/timeouts.py).
    assert len(fake_server.requests_to("/api/chat")) == 1
    assert time.monotonic() - started >= 0.45


async def test_stream_dropped_midway(fake_server, provider):
    fake_server.queue(wire.chat_stream("a", "b", "c", drop_after=2), path="/api/chat")

    seen = []
    with pytest.raises(errors.ProviderConnectionError) as info:
        async for event in provider.stream(request()):
            seen.append(event)

    assert seen == [TextDelta("a"), TextDelta("b")]
    assert "dropped in the middle of the reply" in str(info.value)
    assert fake_server.url in str(info.value)


async def test_stream_ending_without_final_chunk_is_bad_response(fake_server, provider):
    fake_server.queue(wire.raw_stream(wire.ndjson_lines(wire.chat_chunk("a"), wire.chat_chunk("b"))), path="/api/chat")

    with pytest.raises(errors.BadResponse, match="before its final message"):
        await collect(provider, request())


async def test_malformed_ndjson_line_midway(fake_server, provider):
    lines = wire.ndjson_lines(wire.chat_chunk("ok ")) + ['{"model":"llama3.1:8b","message":{"role\n']
    lines += wire.ndjson_lines(wire.chat_chunk(done=True))
    fake_server.queue(wire.raw_stream(lines), path="/api/chat")

    seen = []
    with pytest.raises(errors.BadResponse) as info:
        async for event in provider.stream(request()):
            seen.append(event)

    assert seen == [TextDelta("ok ")]
    assert fake_server.url in str(info.value)


async def test_malformed_first_line_is_not_retried(fake_server, provider):
    fake_server.queue(wire.raw_stream(["<html>proxy error</html>\n"]), path="/api/chat")

    with pytest.raises(errors.BadResponse):
        await collect(provider, request())

    assert len(fake_server.requests_to("/api/chat")) == 1


async def test_non_json_non_streaming_reply_is_bad_response(fake_server, provider):
    fake_server.queue(FakeResponse(body=b"<html>502 Bad Gateway</html>", content_type="text/html"), path="/api/chat")

    with pytest.raises(errors.BadResponse):
        await collect(provider, request(stream=False))


# ---- early stop -------------------------------------------------------------------


async def test_early_stop_closes_the_response(fake_server, provider):
    fake_server.queue(wire.chat_stream(*[f"t{i} " for i in range(40)], chunk_delay=0.05), path="/api/chat")

    async with contextlib.aclosing(provider.stream(request())) as events:
        async for event in events:
            assert event == TextDelta("t0 ")
            break

    assert open_connections(provider) == []
    assert await server_outcome(fake_server) == "client-closed"
    fake_server.queue(wire.chat_stream("next"), path="/api/chat")
    assert ReplyBuilder.from_events(await collect(provider, request())).content == "next"


async def test_cancelled_consumer_closes_the_response(fake_server, provider):
    fake_server.queue(wire.chat_stream(*[f"t{i} " for i in range(40)], chunk_delay=0.05), path="/api/chat")
    first = asyncio.Event()

    async def consume():
        async with contextlib.aclosing(provider.stream(request())) as events:
            async for _ in events:
                first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert open_connections(provider) == []
    assert await server_outcome(fake_server) == "client-closed"


async def test_aclose_is_idempotent_and_client_is_lazy(fake_server):
    p = make_provider(fake_server.url)
    assert p._client is None
    fake_server.queue(wire.chat_stream("x"), path="/api/chat")
    await collect(p, request())
    await p.aclose()
    await p.aclose()
    assert p._client is None


def test_retry_after_parsing():
    from email.utils import formatdate

    from zeph_cli.providers.ollama import _parse_retry_after

    assert _parse_retry_after("7") == 7.0
    assert _parse_retry_after("-3") == 0.0
    assert 8 <= _parse_retry_after(formatdate(time.time() + 10, usegmt=True)) <= 10
    assert _parse_retry_after("soon") is None
    assert _parse_retry_after(None) is None


@pytest.mark.parametrize("stream", [True, False])
async def test_an_html_page_with_status_200_is_not_an_api_reply(fake_server, stream):
    fake_server.queue(html_page(), path="/api/chat")
    p = make_provider(fake_server.url, max_retries=0)
    try:
        with pytest.raises(errors.BadResponse) as caught:
            await collect(p, request(stream=stream))
    finally:
        await p.aclose()
    assert f"{fake_server.url} sent an HTML page" in str(caught.value) and "not an API reply" in str(caught.value)


async def test_a_connection_reset_mid_reply_says_what_happened(fake_server):
    response = wire.chat_stream("one ", "two ", "three")
    response.reset_after = 2
    fake_server.queue(response, path="/api/chat")
    p = make_provider(fake_server.url, max_retries=0)
    try:
        with pytest.raises(errors.ProviderConnectionError) as caught:
            await collect(p, request())
    finally:
        await p.aclose()
    assert "ReadError: )" not in str(caught.value) and "reset" in str(caught.value).lower()
