"""The Anthropic adapter against the real `anthropic` SDK talking HTTP to a fake Messages API."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.fakes import anthropic_wire as wire
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
from zeph_cli.providers.anthropic import AnthropicProvider
from zeph_cli.providers.anthropic import to_wire as anthropic_to_wire
from zeph_cli.providers.base import ChatRequest, ProviderSettings

MODEL = "claude-sonnet-4-6"
KEY = "sk-ant-api03-test-key"


@pytest.fixture
async def make_provider(fake_server):
    made: list[AnthropicProvider] = []

    def make(**overrides) -> AnthropicProvider:
        values = dict(
            kind="anthropic",
            name="anthropic",
            model=MODEL,
            base_url=fake_server.url,
            api_key=KEY,
            api_key_env="ANTHROPIC_API_KEY",
            timeout_secs=5.0,
            max_retries=0,
        )
        values.update(overrides)
        provider = AnthropicProvider(ProviderSettings(**values))
        made.append(provider)
        return provider

    yield make
    for provider in made:
        await provider.aclose()


def ask(text: str = "hello", **kwargs) -> ChatRequest:
    return ChatRequest(messages=(Message.user(text),), **kwargs)


async def collect(provider: AnthropicProvider, request: ChatRequest) -> tuple[list, ReplyBuilder]:
    events, builder = [], ReplyBuilder()
    async for event in provider.stream(request):
        events.append(event)
        builder.add(event)
    return events, builder


# ---- streaming text and the request on the wire ---------------------------------------


async def test_streams_text_and_sends_a_messages_api_request(fake_server, make_provider):
    fake_server.queue(wire.sse_response(wire.text_events(["Hel", "lo", " there"], output_tokens=3)))
    conversation = (
        Message.system("You are zeph."),
        Message.system("Project rules: be brief."),
        Message.context("File a.py:\nprint(1)"),
        Message.user("What does a.py do?"),
        Message.assistant("It prints 1."),
        Message.system("Late system note."),
        Message.user("And then?"),
        Message.user("Be short."),
    )

    events, reply = await collect(make_provider(), ChatRequest(messages=conversation, max_tokens=777))

    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo", " there"]
    assert events[-1] == StreamEnd("end_turn")
    assert reply.content == "Hello there"

    (sent,) = fake_server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    assert KEY in (sent.headers.get("x-api-key", "") + sent.headers.get("authorization", ""))
    assert sent.headers.get("anthropic-version")
    body = sent.json
    assert body["model"] == MODEL
    assert body["max_tokens"] == 777
    assert body["stream"] is True
    assert "temperature" not in body
    assert "tools" not in body
    assert body["system"] == [
        {
            "type": "text",
            "text": "You are zeph.\n---\nProject rules: be brief.\n---\nLate system note.",
            "cache_control": {"type": "ephemeral"},
        }
    ]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "File a.py:\nprint(1)"},
                {"type": "text", "text": "What does a.py do?"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "It prints 1."}]},
        {
            "role": "user",
            "content": [
                # the end of the history before the running turn, and the conversation's end
                {"type": "text", "text": "And then?", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "Be short.", "cache_control": {"type": "ephemeral"}},
            ],
        },
    ]


def test_breakpoints_skip_the_per_turn_and_closing_blocks():
    """The history before the running turn and the tool round's end are cached; the per-turn <time>
    before the running turn and the closing enhancement prompt, which change, are not."""
    conversation = (
        Message.system("You are zeph."),
        Message.user("q1"),
        Message.assistant("a1"),
        Message.context("<time>now</time>"),
        Message.user("q2"),
        Message("assistant", (ToolCallPart("toolu_1", "read_file", {"path": "a.py"}),)),
        Message("tool", (ToolResultPart("toolu_1", "print(1)", name="read_file"),)),
        Message.context("<enhanced_prompt>x</enhanced_prompt>"),
    )
    _, turns = anthropic_to_wire(conversation)
    cached = [(turn["role"], block.get("text") or block.get("content")) for turn in turns for block in turn["content"] if "cache_control" in block]
    assert cached == [("assistant", "a1"), ("user", "print(1)")]


async def test_temperature_is_sent_when_set(fake_server, make_provider):
    fake_server.queue(wire.sse_response(wire.text_events(["ok"])))

    await collect(make_provider(), ask(temperature=0.2))

    assert fake_server.requests[0].json["temperature"] == 0.2


async def test_events_split_across_network_chunks_are_reassembled(fake_server, make_provider):
    events = wire.text_events(["héllo ", "wörld ✓"])
    fake_server.queue(FakeResponse.stream(wire.split_bytes(events, 5), wire.SSE_CONTENT_TYPE))

    _, reply = await collect(make_provider(), ask())

    assert reply.content == "héllo wörld ✓"
    assert reply.stop_reason == "end_turn"


async def test_non_streaming_request_yields_the_same_events(fake_server, make_provider):
    fake_server.queue(
        wire.message_json(
            [wire.text_block("Reading "), wire.text_block("it."), wire.tool_use_block("toolu_01A", "read_file", {"path": "a.py"})],
            stop_reason="tool_use",
            input_tokens=40,
            output_tokens=12,
            cache_read_input_tokens=900,
        )
    )

    events, reply = await collect(make_provider(), ask(stream=False, temperature=0.0))

    body = fake_server.requests[0].json
    assert body.get("stream", False) is False
    assert body["temperature"] == 0.0
    assert events == [
        TextDelta("Reading it."),
        ToolCallDelta(0, "toolu_01A", "read_file", '{"path": "a.py"}'),
        UsageUpdate(Usage(input_tokens=40, output_tokens=12, cache_read_tokens=900, cache_write_tokens=0)),
        StreamEnd("tool_use"),
    ]
    assert reply.tool_calls() == [ToolCallPart("toolu_01A", "read_file", {"path": "a.py"})]


# ---- tools ------------------------------------------------------------------------------


async def test_two_streamed_tool_calls_with_fragmented_json(fake_server, make_provider):
    fake_server.queue(
        wire.sse_response(
            wire.tool_events(
                [
                    ("toolu_01A", "read_file", ['{"pa', 'th": "src/', 'main.py"}']),
                    ("toolu_01B", "grep", ['{"pattern": "TO', 'DO", "max"', ': 5}']),
                ],
                preface="Let me look.",
            )
        )
    )
    tools = (
        ToolSpec("read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}),
        ToolSpec("grep", "Search files", {"type": "object", "properties": {"pattern": {"type": "string"}}}),
    )

    events, reply = await collect(make_provider(), ask("look around", tools=tools))

    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert deltas[0] == ToolCallDelta(0, "toolu_01A", "read_file", "")
    assert [d.arguments for d in deltas if d.index == 0 and d.arguments] == ['{"pa', 'th": "src/', 'main.py"}']
    assert ToolCallDelta(1, "toolu_01B", "grep", "") in deltas
    assert [d.arguments for d in deltas if d.index == 1 and d.arguments] == ['{"pattern": "TO', 'DO", "max"', ": 5}"]
    assert reply.content == "Let me look."
    assert reply.stop_reason == "tool_use"
    assert reply.tool_calls() == [
        ToolCallPart("toolu_01A", "read_file", {"path": "src/main.py"}),
        ToolCallPart("toolu_01B", "grep", {"pattern": "TODO", "max": 5}),
    ]
    assert fake_server.requests[0].json["tools"] == [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
    ]


async def test_tool_use_and_tool_results_are_sent_back_as_blocks(fake_server, make_provider):
    fake_server.queue(wire.sse_response(wire.text_events(["Done."])))
    conversation = (
        Message.system("sys"),
        Message.user("fix it"),
        Message(
            "assistant",
            (
                TextPart("Checking."),
                ToolCallPart("toolu_01A", "read_file", {"path": "a.py"}),
                ToolCallPart("toolu_01B", "run", {"cmd": "pytest"}),
            ),
        ),
        Message("tool", (ToolResultPart("toolu_01A", "print(1)", name="read_file"),)),
        Message.context("note: tests live in tests/"),
        Message("tool", (ToolResultPart("toolu_01B", "exit 1", name="run", is_error=True),)),
    )

    await collect(make_provider(), ChatRequest(messages=conversation))

    messages = fake_server.requests[0].json["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_01A", "name": "read_file", "input": {"path": "a.py"}},
        {"type": "tool_use", "id": "toolu_01B", "name": "run", "input": {"cmd": "pytest"}},
    ]
    # Tool results must open the user turn that follows the tool_use turn.
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "print(1)", "is_error": False},
        {"type": "tool_result", "tool_use_id": "toolu_01B", "content": "exit 1", "is_error": True, "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "note: tests live in tests/"},
    ]


# ---- usage --------------------------------------------------------------------------------


async def test_usage_reports_cache_reads_and_writes(fake_server, make_provider):
    fake_server.queue(
        wire.sse_response(
            wire.text_events(
                ["hi"], output_tokens=42, input_tokens=25, cache_creation_input_tokens=1200, cache_read_input_tokens=3000
            )
        )
    )

    events, reply = await collect(make_provider(), ask())

    assert reply.usage == Usage(input_tokens=25, output_tokens=42, cache_read_tokens=3000, cache_write_tokens=1200)
    assert reply.usage.prompt_tokens == 4225
    updates = [e for e in events if isinstance(e, UsageUpdate)]
    assert updates[0].usage.input_tokens == 25 and updates[-1].usage.output_tokens == 42


# ---- error bodies -------------------------------------------------------------------------


ERROR_CASES = [
    pytest.param(wire.authentication_error, errors.AuthenticationError, ["ANTHROPIC_API_KEY", "invalid x-api-key"], id="401"),
    pytest.param(wire.rate_limit_error, errors.RateLimitError, ["rate limit", "50,000 input tokens"], id="429"),
    pytest.param(wire.overloaded_error, errors.OverloadedError, ["overloaded", "529"], id="529"),
    pytest.param(
        wire.prompt_too_long_error, errors.ContextLengthExceeded, ["prompt is too long: 210000 tokens > 200000"], id="400-long"
    ),
    pytest.param(lambda: wire.model_not_found_error("claude-nope-9"), errors.ModelNotFound, ["claude-nope-9"], id="404"),
    pytest.param(wire.api_error, errors.ProviderError, ["Internal server error", "/v1/messages", "500"], id="500"),
]


@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "no-stream"])
@pytest.mark.parametrize("reply, error_type, mentions", ERROR_CASES)
async def test_error_bodies_become_typed_errors(fake_server, make_provider, reply, error_type, mentions, streaming):
    fake_server.queue(reply())
    provider = make_provider(model="claude-nope-9" if error_type is errors.ModelNotFound else MODEL)

    with pytest.raises(errors.ProviderError) as caught:
        await collect(provider, ask(stream=streaming))

    assert type(caught.value) is error_type
    for text in mentions:
        assert text.lower() in str(caught.value).lower()
    assert len(fake_server.requests) == 1


@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "no-stream"])
async def test_prompt_too_long_carries_the_stated_limit(fake_server, make_provider, streaming):
    fake_server.queue(wire.prompt_too_long_error(tokens=210000, maximum=200000))

    with pytest.raises(errors.ContextLengthExceeded) as caught:
        await collect(make_provider(), ask(stream=streaming))

    assert (caught.value.limit, caught.value.status) == (200000, 400)


async def test_spec_context_length_wording_is_recognised(fake_server, make_provider):
    fake_server.queue(
        wire.error_response(400, "invalid_request_error", "This request exceeds the maximum number of tokens for the model")
    )

    with pytest.raises(errors.ContextLengthExceeded, match="maximum number of tokens"):
        await collect(make_provider(), ask())


async def test_error_event_inside_the_stream_is_overloaded(fake_server, make_provider):
    events = wire.text_events(["partial"])[:4] + [wire.stream_error("overloaded_error", "Overloaded")]
    fake_server.queue(wire.sse_response(events))
    seen = []

    with pytest.raises(errors.OverloadedError, match="Overloaded"):
        async for event in make_provider().stream(ask()):
            seen.append(event)

    assert TextDelta("partial") in seen


async def test_empty_key_sends_no_credentials_and_names_the_env_var(fake_server, make_provider):
    fake_server.queue(wire.error_response(401, "authentication_error", "x-api-key header is required"))

    with pytest.raises(errors.AuthenticationError, match="ANTHROPIC_API_KEY"):
        await collect(make_provider(api_key=""), ask())

    headers = fake_server.requests[0].headers
    assert "authorization" not in headers and "x-api-key" not in headers


# ---- retries (the SDK's own, honouring retry-after) -------------------------------------------


@pytest.mark.parametrize("failure", [wire.rate_limit_error, wire.overloaded_error], ids=["429", "529"])
async def test_retry_after_then_success(fake_server, make_provider, failure):
    fake_server.queue(failure(retry_after="1.5"), wire.sse_response(wire.text_events(["recovered"])))

    started = time.monotonic()
    _, reply = await collect(make_provider(max_retries=2), ask())
    waited = time.monotonic() - started

    assert reply.content == "recovered"
    assert len(fake_server.requests) == 2
    assert fake_server.requests[1].headers["x-stainless-retry-count"] == "1"
    assert fake_server.requests[1].json == fake_server.requests[0].json
    # The SDK's own first backoff is under 1 s; waiting the server's 1.5 s shows
    # Retry-After was honoured. (A lower bound: a slow machine cannot break it.)
    assert waited >= 1.5


@pytest.mark.parametrize(
    "failure, error_type",
    [(wire.rate_limit_error, errors.RateLimitError), (wire.overloaded_error, errors.OverloadedError)],
    ids=["429", "529"],
)
async def test_exhausted_retries(fake_server, make_provider, failure, error_type):
    fake_server.queue(failure(retry_after="0.01"), failure(retry_after="0.01"))

    with pytest.raises(error_type, match="retries exhausted"):
        await collect(make_provider(max_retries=1), ask())

    assert len(fake_server.requests) == 2


# ---- transport failures -----------------------------------------------------------------------


async def test_connection_refused_names_the_url(make_provider):
    url = closed_port_url()

    with pytest.raises(errors.ProviderConnectionError) as caught:
        await collect(make_provider(base_url=url), ask())

    assert url in str(caught.value)


async def test_slow_server_times_out(fake_server, make_provider):
    fake_server.queue(FakeResponse(delay=1.0, body=b"{}"))

    with pytest.raises(errors.ProviderTimeout) as caught:  # the late "{}" would be a different error
        await collect(make_provider(timeout_secs=0.3), ask())

    assert fake_server.url in str(caught.value) and "0.3s" in str(caught.value)


@pytest.mark.parametrize("stream", [True, False])
async def test_a_server_that_never_answers_is_given_up_on_within_the_timeout_retries_included(
    fake_server, make_provider, stream
):
    for _ in range(3):  # every attempt would hang: the SDK retries a timed-out attempt max_retries times
        fake_server.queue(FakeResponse(delay=3.0, body=b"{}"))
    started = time.monotonic()
    with pytest.raises(errors.ProviderTimeout) as caught:
        await collect(make_provider(timeout_secs=0.5, max_retries=2), ask(stream=stream))
    waited = time.monotonic() - started
    # One attempt in all: the SDK's retry of a timed-out attempt (3 x 0.5 s plus backoff) never
    # started, and zeph gave up only once the timeout had passed. How long it takes: benchmarks/timeouts.py.
    assert len(fake_server.requests) == 1
    assert waited >= 0.45, waited
    assert "sent nothing for 0.5s" in str(caught.value) and "llm.timeout_secs" in str(caught.value)


async def test_stream_that_stalls_mid_reply_times_out(fake_server, make_provider):
    fake_server.queue(wire.sse_response(wire.text_events(["a", "b", "c"]), chunk_delay=1.0))

    with pytest.raises(errors.ProviderTimeout, match="0.3s"):
        await collect(make_provider(timeout_secs=0.3), ask())


async def test_stream_dropped_mid_way(fake_server, make_provider):
    fake_server.queue(wire.sse_response(wire.text_events(["one ", "two ", "three"]), drop_after=5))
    seen = []

    with pytest.raises(errors.ProviderConnectionError, match="broke off") as caught:
        async for event in make_provider().stream(ask()):
            seen.append(event)

    assert "/v1/messages" in str(caught.value)
    assert [e.text for e in seen if isinstance(e, TextDelta)] == ["one ", "two "]
    assert fake_server.requests[0].outcome == "dropped"


async def test_stream_ending_without_message_stop_is_a_bad_response(fake_server, make_provider):
    fake_server.queue(wire.sse_response(wire.text_events(["cut"])[:-2]))

    with pytest.raises(errors.BadResponse, match="message_stop"):
        await collect(make_provider(), ask())


@pytest.mark.parametrize(
    "reply, streaming",
    [
        (FakeResponse(body=b"<html>proxy error</html>", content_type="text/html"), False),
        (FakeResponse(body=b'{"type": "message", "content": '), False),
        (FakeResponse.stream(["event: message_start\ndata: {not json\n\n"], wire.SSE_CONTENT_TYPE), True),
    ],
    ids=["html", "truncated-json", "sse-bad-json"],
)
async def test_malformed_replies_are_bad_responses(fake_server, make_provider, reply, streaming):
    fake_server.queue(reply)

    with pytest.raises(errors.BadResponse):
        await collect(make_provider(), ask(stream=streaming))


# ---- the consumer stopping early ---------------------------------------------------------------


async def wait_for_outcome(record, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while not record.outcome and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return record.outcome


async def test_consumer_stopping_early_closes_the_response(fake_server, make_provider):
    long_reply = wire.text_events([f"word{i} " for i in range(60)])
    fake_server.queue(wire.sse_response(long_reply, chunk_delay=0.02))
    fake_server.queue(wire.sse_response(wire.text_events(["again"])))
    provider = make_provider()

    stream = provider.stream(ask())
    async for event in stream:
        if isinstance(event, TextDelta):
            break
    await stream.aclose()

    assert await wait_for_outcome(fake_server.requests[0]) == "client-closed"
    _, reply = await collect(provider, ask())  # the provider is still usable
    assert reply.content == "again"


async def test_cancelled_consumer_closes_the_response(fake_server, make_provider):
    fake_server.queue(wire.sse_response(wire.text_events([f"w{i} " for i in range(60)]), chunk_delay=0.02))
    first_text = asyncio.Event()

    async def consume() -> None:
        async for event in make_provider().stream(ask()):
            if isinstance(event, TextDelta):
                first_text.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_text.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert await wait_for_outcome(fake_server.requests[0]) == "client-closed"


async def test_aclose_then_reuse_creates_a_new_client(fake_server, make_provider):
    fake_server.queue(wire.sse_response(wire.text_events(["one"])), wire.sse_response(wire.text_events(["two"])))
    provider = make_provider()

    _, first = await collect(provider, ask())
    await provider.aclose()
    _, second = await collect(provider, ask())

    assert (first.content, second.content) == ("one", "two")


@pytest.mark.parametrize("stream", [True, False])
async def test_an_html_page_with_status_200_is_not_an_api_reply(fake_server, make_provider, stream):
    fake_server.queue(html_page(), html_page())
    with pytest.raises(errors.BadResponse) as caught:
        await collect(make_provider(), ask(stream=stream))
    message = str(caught.value)
    assert "/v1/messages sent an HTML page ('Guest Wi-Fi \u2013 sign in'), not an API reply" in message


async def test_a_connection_reset_mid_reply_says_what_happened(fake_server, make_provider):
    response = wire.sse_response(wire.text_events(["one ", "two ", "three"]))
    response.reset_after = 3
    fake_server.queue(response)
    with pytest.raises(errors.ProviderConnectionError) as caught:
        await collect(make_provider(), ask())
    reason = str(caught.value).split("broke off mid-reply: ", 1)[1]
    assert reason.strip() and "reset" in reason.lower()
