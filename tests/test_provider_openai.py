"""OpenAIProvider against a fake Chat Completions server, through the real `openai` SDK over HTTP."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from contextlib import aclosing

import pytest

from tests.fakes import openai_wire as wire
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
from zeph_cli.providers.base import ChatRequest, ProviderSettings
from zeph_cli.providers.openai import OpenAIProvider

PATH = "/v1/chat/completions"

READ_FILE = ToolSpec(
    "read_file",
    "Read a file from the workspace.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


def make_provider(url: str, *, kind: str = "openai", **overrides) -> OpenAIProvider:
    values = dict(
        kind=kind,
        name=kind,
        model="gpt-4o",
        base_url=url + "/v1",
        api_key="sk-test-123",
        api_key_env="OPENAI_API_KEY" if kind == "openai" else "",
        timeout_secs=5.0,
        max_retries=0,
    )
    values.update(overrides)
    return OpenAIProvider(ProviderSettings(**values))


def ask(text: str = "Hi", **kwargs) -> ChatRequest:
    return ChatRequest(messages=(Message.user(text),), **kwargs)


async def collect(provider: OpenAIProvider, request: ChatRequest) -> list:
    try:
        return [event async for event in provider.stream(request)]
    finally:
        await provider.aclose()


def handler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if "process_request_thread" in t.name]


# ---- streaming and the request body -------------------------------------------


async def test_streams_text_and_sends_the_openai_request_body(fake_server):
    fake_server.queue(wire.stream_response(wire.text_chunks(["Hel", "lo", " there"], usage=(12, 3, 0))), path=PATH)
    provider = make_provider(fake_server.url)
    request = ChatRequest(
        messages=(Message.system("You are zeph."), Message.context("Repo map: a.py"), Message.user("Hi")),
        tools=(READ_FILE,),
        max_tokens=1000,
    )

    events = await collect(provider, request)

    assert events == [
        TextDelta("Hel"),
        TextDelta("lo"),
        TextDelta(" there"),
        UsageUpdate(Usage(input_tokens=12, output_tokens=3)),
        StreamEnd("stop"),
    ]
    assert ReplyBuilder.from_events(events).message() == Message.assistant("Hello there")

    [sent] = fake_server.requests_to(PATH)
    body = sent.json
    assert sent.headers["authorization"] == "Bearer sk-test-123"
    assert body["model"] == "gpt-4o"
    assert body["messages"] == [
        {"role": "system", "content": "You are zeph."},
        {"role": "system", "content": "Repo map: a.py"},
        {"role": "user", "content": "Hi"},
    ]
    assert body["max_completion_tokens"] == 1000
    assert "max_tokens" not in body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert "temperature" not in body
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file from the workspace.",
                "parameters": READ_FILE.parameters,
            },
        }
    ]


async def test_compatible_kind_sends_max_tokens_temperature_and_a_placeholder_key(fake_server):
    fake_server.queue(wire.stream_response(wire.text_chunks(["ok"])), path=PATH)
    provider = make_provider(fake_server.url, kind="compatible", api_key="", model="qwen2.5-coder")

    events = await collect(provider, ask(max_tokens=256, temperature=0.2))

    assert ReplyBuilder.from_events(events).content == "ok"
    body = fake_server.requests_to(PATH)[0].json
    assert body["max_tokens"] == 256
    assert "max_completion_tokens" not in body
    assert body["temperature"] == 0.2
    assert body["model"] == "qwen2.5-coder"
    assert "tools" not in body
    assert fake_server.requests_to(PATH)[0].headers["authorization"] == "Bearer not-needed"


async def test_compatible_server_that_sends_no_usage_still_works(fake_server):
    fake_server.queue(wire.stream_response(wire.text_chunks(["no ", "usage"], usage=None)), path=PATH)
    provider = make_provider(fake_server.url, kind="compatible")

    events = await collect(provider, ask())

    assert events == [TextDelta("no "), TextDelta("usage"), StreamEnd("stop")]
    assert ReplyBuilder.from_events(events).usage == Usage()


async def test_non_streaming_request_yields_the_same_events(fake_server):
    fake_server.queue(wire.json_response(wire.completion(content="Hello there", usage=(20, 2, 0))), path=PATH)
    provider = make_provider(fake_server.url)

    events = await collect(provider, ask(stream=False, temperature=0.0))

    assert events == [TextDelta("Hello there"), UsageUpdate(Usage(input_tokens=20, output_tokens=2)), StreamEnd("stop")]
    body = fake_server.requests_to(PATH)[0].json
    assert body.get("stream") in (False, None)
    assert "stream_options" not in body
    assert body["temperature"] == 0.0
    assert body["max_completion_tokens"] == 4096


async def test_non_streaming_tool_calls_arrive_complete(fake_server):
    reply = wire.completion(
        content=None,
        tool_calls=[("call_a", "read_file", {"path": "a.py"}), ("call_b", "read_file", {"path": "b.py"})],
        finish_reason="tool_calls",
    )
    fake_server.queue(wire.json_response(reply), path=PATH)

    events = await collect(make_provider(fake_server.url), ask(stream=False, tools=(READ_FILE,)))

    assert events[:2] == [
        ToolCallDelta(0, "call_a", "read_file", '{"path": "a.py"}'),
        ToolCallDelta(1, "call_b", "read_file", '{"path": "b.py"}'),
    ]
    builder = ReplyBuilder.from_events(events)
    assert builder.stop_reason == "tool_calls"
    assert builder.message() == Message(
        "assistant",
        (ToolCallPart("call_a", "read_file", {"path": "a.py"}), ToolCallPart("call_b", "read_file", {"path": "b.py"})),
    )


# ---- tool calls ---------------------------------------------------------------


async def test_two_parallel_streamed_tool_calls_with_fragmented_arguments(fake_server):
    calls = [
        ("call_Q1", "read_file", ['{"pa', 'th": "src/', 'main.py"}']),
        ("call_Q2", "grep", ['{"pattern": ', '"TODO", "pa', 'th": "."}']),
    ]
    fake_server.queue(wire.stream_response(wire.tool_call_chunks(calls)), path=PATH)

    events = await collect(make_provider(fake_server.url), ask(tools=(READ_FILE,)))

    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert deltas == [
        ToolCallDelta(0, "call_Q1", "read_file", ""),
        ToolCallDelta(0, None, None, '{"pa'),
        ToolCallDelta(0, None, None, 'th": "src/'),
        ToolCallDelta(0, None, None, 'main.py"}'),
        ToolCallDelta(1, "call_Q2", "grep", ""),
        ToolCallDelta(1, None, None, '{"pattern": '),
        ToolCallDelta(1, None, None, '"TODO", "pa'),
        ToolCallDelta(1, None, None, 'th": "."}'),
    ]
    assert not any(isinstance(e, TextDelta) for e in events)
    assert events[-1] == StreamEnd("tool_calls")
    assert ReplyBuilder.from_events(events).tool_calls() == [
        ToolCallPart("call_Q1", "read_file", {"path": "src/main.py"}),
        ToolCallPart("call_Q2", "grep", {"pattern": "TODO", "path": "."}),
    ]


async def test_history_with_tool_calls_and_results_is_sent_in_openai_shape(fake_server):
    fake_server.queue(wire.stream_response(wire.text_chunks(["done"])), path=PATH)
    history = (
        Message.system("You are zeph."),
        Message.user("Fix a.py"),
        Message(
            "assistant",
            (
                TextPart("Let me look."),
                ToolCallPart("call_1", "read_file", {"path": "a.py"}),
                ToolCallPart("call_2", "grep", {"pattern": "TODO", "path": "."}),
            ),
        ),
        Message(
            "tool",
            (
                ToolResultPart("call_1", "print('hi')", name="read_file"),
                ToolResultPart("call_2", "a.py:1: # TODO", name="grep"),
            ),
        ),
        Message("assistant", (ToolCallPart("call_3", "read_file", {"path": "b.py"}),)),
        Message("tool", (ToolResultPart("call_3", "no such file: b.py", name="read_file", is_error=True),)),
    )

    await collect(make_provider(fake_server.url), ChatRequest(messages=history, tools=(READ_FILE,)))

    sent = fake_server.requests_to(PATH)[0].json["messages"]
    for message in sent:
        for call in message.get("tool_calls", []):
            assert isinstance(call["function"]["arguments"], str)
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
    assert sent == [
        {"role": "system", "content": "You are zeph."},
        {"role": "user", "content": "Fix a.py"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": {"path": "a.py"}}},
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "grep", "arguments": {"pattern": "TODO", "path": "."}},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "print('hi')"},
        {"role": "tool", "tool_call_id": "call_2", "content": "a.py:1: # TODO"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_3", "type": "function", "function": {"name": "read_file", "arguments": {"path": "b.py"}}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_3", "content": "no such file: b.py"},
    ]


# ---- usage --------------------------------------------------------------------


async def test_usage_separates_cached_prompt_tokens(fake_server):
    fake_server.queue(wire.stream_response(wire.text_chunks(["hi"], usage=(2006, 300, 1920))), path=PATH)

    events = await collect(make_provider(fake_server.url), ask())

    assert UsageUpdate(Usage(input_tokens=86, output_tokens=300, cache_read_tokens=1920)) in events
    usage = ReplyBuilder.from_events(events).usage
    assert usage.prompt_tokens == 2006
    assert events[-1] == StreamEnd("stop")


# ---- errors from the API ------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "error_type", "must_mention"),
    [
        (wire.invalid_api_key(), errors.AuthenticationError, ["OPENAI_API_KEY", "Incorrect API key provided", "401"]),
        (wire.rate_limited(), errors.RateLimitError, ["Rate limit reached for gpt-4o", "429"]),
        (
            wire.context_length_exceeded(),
            errors.ContextLengthExceeded,
            ["maximum context length is 128000 tokens", "130000 tokens"],
        ),
        (wire.model_not_found("gpt-x"), errors.ModelNotFound, ["'gpt-x'", "The model `gpt-x` does not exist"]),
        (wire.server_error(), errors.ProviderError, ["The server had an error", "HTTP 500", "/v1"]),
        (wire.overloaded(), errors.OverloadedError, ["That model is currently overloaded", "503"]),
    ],
    ids=["401-invalid-key", "429-rate-limit", "400-context-length", "404-model", "500-server", "503-overloaded"],
)
@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "no-stream"])
async def test_error_bodies_become_typed_errors(fake_server, response, error_type, must_mention, streaming):
    fake_server.queue(response, path=PATH)
    provider = make_provider(fake_server.url, model="gpt-x")

    with pytest.raises(errors.ProviderError) as caught:
        await collect(provider, ask(stream=streaming))

    assert type(caught.value) is error_type
    for text in must_mention:
        assert text in str(caught.value)
    assert caught.value.status == response.status
    assert "Error code:" not in str(caught.value)  # the provider's message, not the SDK's wrapper
    assert len(fake_server.requests_to(PATH)) == 1


async def test_compatible_server_error_body_with_numeric_code(fake_server):
    # llama.cpp's server answers an oversized prompt like this.
    body = {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 9000,
            "n_ctx": 8192,
        }
    }
    fake_server.queue(FakeResponse.json(body, status=400), path=PATH)

    with pytest.raises(errors.ContextLengthExceeded, match="exceeds the available context size"):
        await collect(make_provider(fake_server.url, kind="compatible"), ask())


@pytest.mark.parametrize(
    ("body", "error_type"),
    [
        # vLLM's ErrorResponse: no "error" wrapper.
        (
            {
                "object": "error",
                "message": "The model `gpt-x` does not exist.",
                "type": "NotFoundError",
                "param": None,
                "code": 404,
            },
            errors.ModelNotFound,
        ),
        # Some proxies put a bare string under "error".
        ({"error": "The model `gpt-x` does not exist."}, errors.ModelNotFound),
    ],
    ids=["vllm", "bare-string"],
)
async def test_compatible_error_shapes_keep_the_servers_message(fake_server, body, error_type):
    fake_server.queue(FakeResponse.json(body, status=404), path=PATH)

    with pytest.raises(error_type) as caught:
        await collect(make_provider(fake_server.url, kind="compatible", model="gpt-x"), ask())

    assert "The model `gpt-x` does not exist." in str(caught.value)
    assert "Error code:" not in str(caught.value)  # the SDK's own prefix is not repeated


async def test_rate_limit_then_success_is_retried_by_the_sdk_honouring_retry_after(fake_server):
    fake_server.queue(
        wire.rate_limited(retry_after="1.5"), wire.stream_response(wire.text_chunks(["after ", "retry"])), path=PATH
    )
    provider = make_provider(fake_server.url, max_retries=2)

    started = time.monotonic()
    events = await collect(provider, ask())
    elapsed = time.monotonic() - started

    assert ReplyBuilder.from_events(events).content == "after retry"
    requests = fake_server.requests_to(PATH)
    assert len(requests) == 2
    assert requests[1].headers["x-stainless-retry-count"] == "1"
    assert requests[0].json == requests[1].json
    # Waited the server's 1.5 s, longer than the SDK's own first backoff (under 1 s).
    # (A lower bound: a slow machine cannot break it.)
    assert elapsed >= 1.5


@pytest.mark.parametrize(
    ("response", "error_type"),
    [
        (wire.rate_limited(retry_after="0.01"), errors.RateLimitError),
        (wire.overloaded(headers={"retry-after": "0.01"}), errors.OverloadedError),
    ],
    ids=["429", "503"],
)
async def test_exhausted_retries_raise_the_typed_error(fake_server, response, error_type):
    fake_server.queue(response, response, path=PATH)
    provider = make_provider(fake_server.url, max_retries=1)

    with pytest.raises(error_type, match="retries exhausted"):
        await collect(provider, ask())

    assert len(fake_server.requests_to(PATH)) == 2


async def test_error_event_inside_the_stream_is_a_provider_error(fake_server):
    events = wire.text_chunks(["par"])[:2] + [
        wire.sse(wire.error_body("The server had an error while processing your request.", "server_error"))
    ]
    fake_server.queue(wire.stream_response(events), path=PATH)

    with pytest.raises(errors.ProviderError, match="The server had an error while processing"):
        await collect(make_provider(fake_server.url), ask())


# ---- transport failures -------------------------------------------------------


@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "no-stream"])
async def test_connection_refused_names_the_url(streaming):
    url = closed_port_url()
    provider = make_provider(url, kind="compatible", name="lmstudio")

    with pytest.raises(errors.ProviderConnectionError) as caught:
        await collect(provider, ask(stream=streaming))

    assert f"{url}/v1" in str(caught.value)
    assert "lmstudio" in str(caught.value)


async def test_no_answer_within_the_timeout(fake_server):
    fake_server.queue(FakeResponse(status=200, body=b"{}", delay=1.5), path=PATH)
    provider = make_provider(fake_server.url, timeout_secs=0.3)

    with pytest.raises(errors.ProviderTimeout) as caught:  # the late "{}" would be a different error
        await collect(provider, ask())

    assert f"{fake_server.url}/v1" in str(caught.value)
    assert "0.3s" in str(caught.value)


@pytest.mark.parametrize("stream", [True, False])
async def test_a_server_that_never_answers_is_given_up_on_within_the_timeout_retries_included(fake_server, stream):
    for _ in range(3):  # every attempt would hang: the SDK retries a timed-out attempt max_retries times
        fake_server.queue(FakeResponse(status=200, body=b"{}", delay=3.0), path=PATH)
    provider = make_provider(fake_server.url, timeout_secs=0.5, max_retries=2)
    started = time.monotonic()
    with pytest.raises(errors.ProviderTimeout) as caught:
        await collect(provider, ask(stream=stream))
    waited = time.monotonic() - started
    # One attempt in all: the SDK's retry of a timed-out attempt (3 x 0.5 s plus backoff) never
    # started, and zeph gave up only once the timeout had passed. How long it takes: benchmarks/timeouts.py.
    assert len(fake_server.requests_to(PATH)) == 1
    assert waited >= 0.45, waited
    assert "sent nothing for 0.5s" in str(caught.value) and "llm.timeout_secs" in str(caught.value)


async def test_stream_that_stalls_mid_reply_times_out(fake_server):
    events = wire.text_chunks(["slow"])
    fake_server.queue(wire.stream_response(events, chunk_delay=1.5), path=PATH)
    provider = make_provider(fake_server.url, timeout_secs=0.3)

    with pytest.raises(errors.ProviderTimeout, match="0.3s"):
        await collect(provider, ask())


async def test_stream_dropped_mid_way_raises_connection_error(fake_server):
    events = wire.text_chunks(["one ", "two ", "three"])
    fake_server.queue(wire.stream_response(events, drop_after=3), path=PATH)  # role, "one ", "two ", then cut
    provider = make_provider(fake_server.url)
    seen = []

    with pytest.raises(errors.ProviderConnectionError) as caught:
        try:
            async for event in provider.stream(ask()):
                seen.append(event)
        finally:
            await provider.aclose()

    assert seen == [TextDelta("one "), TextDelta("two ")]
    assert "mid-reply" in str(caught.value)
    assert f"{fake_server.url}/v1" in str(caught.value)


async def test_stream_that_ends_without_finish_reason_is_incomplete(fake_server):
    # The body ends cleanly (terminating chunk sent) but no finish_reason and no [DONE].
    events = wire.text_chunks(["half a rep"])[:2]
    fake_server.queue(wire.stream_response(events), path=PATH)

    with pytest.raises(errors.ProviderConnectionError, match="before the reply was complete"):
        await collect(make_provider(fake_server.url), ask())


async def test_malformed_stream_event_is_a_bad_response(fake_server):
    events = wire.text_chunks(["ok"])[:2] + ["data: {not json\n\n", wire.DONE]
    fake_server.queue(wire.stream_response(events), path=PATH)

    with pytest.raises(errors.BadResponse, match="undecodable JSON"):
        await collect(make_provider(fake_server.url), ask())


@pytest.mark.parametrize(
    "response",
    [
        FakeResponse(status=200, body=b"<html><body>Bad gateway page</body></html>", content_type="text/html"),
        FakeResponse(status=200, body=b'{"id": "x", "choices": [', content_type="application/json"),
        FakeResponse.json({"object": "chat.completion", "choices": []}),
    ],
    ids=["html", "truncated-json", "no-choices"],
)
async def test_malformed_non_streaming_reply_is_a_bad_response(fake_server, response):
    fake_server.queue(response, path=PATH)

    with pytest.raises(errors.BadResponse) as caught:
        await collect(make_provider(fake_server.url), ask(stream=False))

    assert f"{fake_server.url}/v1" in str(caught.value)


# ---- consumer stops early -----------------------------------------------------


@pytest.mark.parametrize("how", ["aclose", "cancel"])
async def test_consumer_stopping_early_closes_the_response(fake_server, how):
    slow = wire.stream_response(wire.text_chunks([f"w{i} " for i in range(40)]), chunk_delay=0.05)  # ~2 s in all
    fake_server.queue(slow, wire.stream_response(wire.text_chunks(["again"])), path=PATH)
    provider = make_provider(fake_server.url)
    first = asyncio.Event()
    earlier = set(handler_threads())  # other tests' slow handlers may still be winding down

    async def consume() -> None:
        async with aclosing(provider.stream(ask())) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    first.set()
                    if how == "aclose":
                        return  # leaving `aclosing` closes the generator

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 30)
    if how == "cancel":
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        await task

    # The response was closed as the consumer left: the SDK's pool holds no connection for it, and
    # the server's handler notices the closed socket before its ~2 s of chunks run out (the bound
    # only ends a would-be hang).
    assert list(provider._client._client._transport._pool.connections) == []
    record = fake_server.requests_to(PATH)[0]
    deadline = time.monotonic() + 30.0
    while (not record.outcome or set(handler_threads()) - earlier) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert record.outcome == "client-closed"
    assert set(handler_threads()) - earlier == set()

    # The provider is still usable afterwards.
    events = await collect(provider, ask())
    assert ReplyBuilder.from_events(events).content == "again"


async def test_aclose_is_safe_before_and_after_use(fake_server):
    fake_server.queue(wire.stream_response(wire.text_chunks(["a"])), wire.stream_response(wire.text_chunks(["b"])))
    provider = make_provider(fake_server.url)
    await provider.aclose()  # nothing created yet

    assert ReplyBuilder.from_events(await collect(provider, ask())).content == "a"
    assert ReplyBuilder.from_events(await collect(provider, ask())).content == "b"  # a fresh client after aclose()
    await provider.aclose()


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("content_type", ["text/html; charset=utf-8", "application/octet-stream"])
async def test_an_html_page_with_status_200_is_not_an_api_reply(fake_server, stream, content_type):
    fake_server.queue(html_page(content_type), html_page(content_type), path=PATH)  # a portal answers every request
    provider = make_provider(fake_server.url, kind="compatible")
    with pytest.raises(errors.BadResponse) as caught:
        await collect(provider, ask(stream=stream))
    message = str(caught.value)
    assert f"{fake_server.url}/v1 sent an HTML page ('Guest Wi-Fi \u2013 sign in'), not an API reply" in message
    assert "base_url" in message


async def test_a_connection_reset_mid_reply_says_what_happened(fake_server):
    response = wire.stream_response(wire.text_chunks(["one ", "two ", "three"]))
    response.reset_after = 2
    fake_server.queue(response, path=PATH)
    with pytest.raises(errors.ProviderConnectionError) as caught:
        await collect(make_provider(fake_server.url), ask())
    message = str(caught.value)
    assert "broke mid-reply: " in message and not message.rstrip().endswith(":")
    assert "reset" in message.split("broke mid-reply: ", 1)[1].lower()


async def test_an_html_error_page_is_one_line_of_its_text(fake_server):
    # What `python -m http.server` (and many proxies) answer to a POST: an HTML page with status 501.
    page = (
        b'<!DOCTYPE HTML>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>Error response</title>\n</head>\n'
        b"<body>\n<h1>Error response</h1>\n<p>Error code: 501</p>\n<p>Message: Unsupported method ('POST').</p>\n"
        b"</body>\n</html>\n"
    )
    fake_server.queue(FakeResponse(status=501, body=page, content_type="text/html;charset=utf-8"), path=PATH)
    provider = make_provider(fake_server.url, kind="compatible")
    with pytest.raises(errors.ProviderError) as caught:
        await collect(provider, ask())
    message = str(caught.value)
    assert "\n" not in message and "<" not in message
    assert message.endswith("(HTTP 501) at " + fake_server.url + "/v1: Error response Error code: 501 Message: Unsupported method ('POST').")
