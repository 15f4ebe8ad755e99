"""Context overflow recognised wherever an OpenAI-compatible server shows it: an error status,
an error event inside the stream, or a stream the server ends empty (llama-cpp-python, llama.cpp)
— through the real `openai` SDK against replies captured from the real servers."""

from __future__ import annotations

import pytest

from tests.fakes import llamacpp_wire as local
from tests.fakes import openai_wire
from tests.fakes.server import FakeResponse
from zeph_cli import errors
from zeph_cli.messages import Message, StreamEnd, TextDelta, UsageUpdate
from zeph_cli.providers.base import ChatRequest, ProviderSettings
from zeph_cli.providers.openai import OpenAIProvider

CHAT = "/v1/chat/completions"
SSE = local.SSE_TYPE
BIG = "Summarise: " + " ".join(f"word{i % 50}" for i in range(3000))


def compatible(url: str, **overrides) -> OpenAIProvider:
    values = dict(kind="compatible", name="compatible", model="", base_url=url + "/v1", max_retries=0)
    values.update(overrides)
    return OpenAIProvider(ProviderSettings(**values))


def big_request(*, stream: bool = True) -> ChatRequest:
    return ChatRequest(messages=(Message.system("You are zeph."), Message.user(BIG)), max_tokens=64, stream=stream)


async def run(provider: OpenAIProvider, request: ChatRequest) -> list:
    try:
        return [event async for event in provider.stream(request)]
    finally:
        await provider.aclose()


# ---- llama-cpp-python: 200, then an empty stream ------------------------------------


async def test_empty_stream_is_asked_again_and_becomes_context_length_exceeded(fake_server):
    fake_server.queue(local.python_server_empty_stream(), local.python_server_context_exceeded(), path=CHAT)

    with pytest.raises(errors.ContextLengthExceeded) as caught:
        await run(compatible(fake_server.url), big_request())

    assert caught.value.limit == 2048  # never the 8498 tokens requested
    assert caught.value.status == 400
    assert "maximum context length is 2048 tokens" in str(caught.value)
    streamed, probe = fake_server.requests_to(CHAT)
    assert streamed.json["stream"] is True
    assert "stream" not in probe.json or probe.json["stream"] is False
    assert probe.json["max_tokens"] == 1
    assert probe.json["messages"] == streamed.json["messages"]


async def test_empty_stream_probe_survives_the_connection_the_server_dropped(fake_server):
    # A first probe attempt fails at the socket (the real server closes the kept-alive
    # connection after the empty stream); the probe is retried even with max_retries=0.
    dropped = FakeResponse.stream([b"x"], SSE, drop_after=0)
    fake_server.queue(local.python_server_empty_stream(), dropped, local.python_server_context_exceeded(), path=CHAT)

    with pytest.raises(errors.ContextLengthExceeded) as caught:
        await run(compatible(fake_server.url), big_request())

    assert caught.value.limit == 2048
    assert len(fake_server.requests_to(CHAT)) == 3


async def test_empty_stream_that_was_not_an_overflow_stays_a_broken_stream(fake_server):
    fits = openai_wire.json_response(openai_wire.completion(content="x", finish_reason="length", usage=None))
    fake_server.queue(local.python_server_empty_stream(), fits, path=CHAT)

    with pytest.raises(errors.ProviderConnectionError, match="ended the stream before the reply was complete"):
        await run(compatible(fake_server.url), big_request())

    assert len(fake_server.requests_to(CHAT)) == 2


async def test_empty_stream_whose_probe_fails_otherwise_stays_a_broken_stream(fake_server):
    # The probe's own error (here the model is unknown) states no overflow: the stream's error stands.
    fake_server.queue(local.python_server_empty_stream(), openai_wire.model_not_found(), path=CHAT)

    with pytest.raises(errors.ProviderConnectionError, match="ended the stream before the reply was complete"):
        await run(compatible(fake_server.url), big_request())

    assert len(fake_server.requests_to(CHAT)) == 2


async def test_a_stream_cut_after_some_text_is_not_probed(fake_server):
    cut = local.python_server_text_stream(["Hel", "lo"])
    cut.chunks = cut.chunks[:3]  # role + two pieces, then the body ends: no finish_reason, no [DONE]
    fake_server.queue(cut, path=CHAT)
    seen: list = []

    with pytest.raises(errors.ProviderConnectionError, match="ended the stream"):
        provider = compatible(fake_server.url)
        try:
            async for event in provider.stream(big_request()):
                seen.append(event)
        finally:
            await provider.aclose()

    assert [e.text for e in seen if isinstance(e, TextDelta)] == ["Hel", "lo"]
    assert len(fake_server.requests_to(CHAT)) == 1


async def test_unstreamed_overflow_carries_the_limit(fake_server):
    fake_server.queue(local.python_server_context_exceeded(), path=CHAT)

    with pytest.raises(errors.ContextLengthExceeded) as caught:
        await run(compatible(fake_server.url), big_request(stream=False))

    assert (caught.value.limit, caught.value.status) == (2048, 400)
    assert len(fake_server.requests_to(CHAT)) == 1


async def test_llama_cpp_python_streams_no_usage_even_when_asked(fake_server):
    fake_server.queue(local.python_server_text_stream(["W", "onder", "ful", "!"]), path=CHAT)

    events = await run(compatible(fake_server.url), ChatRequest(messages=(Message.user("Say hi"),)))

    [sent] = fake_server.requests_to(CHAT)
    assert sent.json["stream_options"] == {"include_usage": True}
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Wonderful!"
    assert not [e for e in events if isinstance(e, UsageUpdate)]  # the frontends show an estimate
    assert events[-1] == StreamEnd("stop")


# ---- llama.cpp's C++ server ---------------------------------------------------------


async def test_llama_server_error_status_reads_n_ctx(fake_server):
    fake_server.queue(local.llama_server_exceeds_context_reply(n_prompt_tokens=5000, n_ctx=4096), path=CHAT)

    with pytest.raises(errors.ContextLengthExceeded) as caught:
        await run(compatible(fake_server.url, model="m"), big_request())

    assert caught.value.limit == 4096


async def test_llama_server_old_wording_is_an_overflow_without_a_limit(fake_server):
    fake_server.queue(FakeResponse.json(local.OLD_LLAMA_SERVER_EXCEEDS, status=400), path=CHAT)

    with pytest.raises(errors.ContextLengthExceeded) as caught:
        await run(compatible(fake_server.url, model="m"), big_request())

    assert caught.value.limit is None


async def test_llama_server_error_line_in_the_stream_then_the_probe(fake_server):
    # llama-server writes a streamed error as an `error: {...}` SSE line, a field SSE
    # clients ignore: the SDK sees an empty stream; the probe hears the 400.
    error_line = "error: " + FakeResponse.json(local.llama_server_exceeds_context()).body.decode() + "\n\n"
    fake_server.queue(
        FakeResponse.stream([error_line], SSE), local.llama_server_exceeds_context_reply(5000, 4096), path=CHAT
    )

    with pytest.raises(errors.ContextLengthExceeded) as caught:
        await run(compatible(fake_server.url, model="m"), big_request())

    assert caught.value.limit == 4096


@pytest.mark.parametrize(
    "error, limit",
    [
        (local.llama_server_exceeds_context(n_prompt_tokens=5000, n_ctx=4096), 4096),
        (
            openai_wire.error_body(
                "This model's maximum context length is 3000 tokens. However, you requested 3100 tokens "
                "(3036 in the messages, 64 in the completion). Please reduce the length of the messages or completion.",
                "BadRequestError",
                param=None,
            ),
            3000,
        ),
        ({"error": local.LMSTUDIO_OVERFLOW}, 4096),
    ],
    ids=["llama-server", "vllm", "lm-studio"],
)
async def test_error_event_inside_the_stream(fake_server, error, limit):
    events = [
        local.python_server_chunk({"role": "assistant"}),
        openai_wire.sse(error),
    ]
    fake_server.queue(FakeResponse.stream(events, SSE), path=CHAT)

    with pytest.raises(errors.ContextLengthExceeded) as caught:
        await run(compatible(fake_server.url, model="m"), big_request())

    assert caught.value.limit == limit
    assert len(fake_server.requests_to(CHAT)) == 1  # the server said why: no probe


async def test_openai_status_error_carries_the_limit(fake_server):
    fake_server.queue(openai_wire.context_length_exceeded(limit=128000, used=130000), path=CHAT)
    provider = OpenAIProvider(
        ProviderSettings(kind="openai", name="openai", model="gpt-4o", base_url=fake_server.url + "/v1", api_key="k",
                         max_retries=0)
    )

    with pytest.raises(errors.ContextLengthExceeded) as caught:
        await run(provider, big_request())

    assert caught.value.limit == 128000


def test_reason_of_never_gives_an_empty_reason():
    from zeph_cli.errors import reason_of

    class ReadError(Exception):
        pass

    try:
        try:
            raise ConnectionResetError(104, "Connection reset by peer")
        except ConnectionResetError:
            raise ReadError("")  # httpx: an empty message over the real cause
    except ReadError as caught:
        assert reason_of(caught) == "[Errno 104] Connection reset by peer"
    assert reason_of(ReadError("")) == "the connection was reset or closed while the reply was being read (ReadError)"
    assert reason_of(KeyError()) == "KeyError, with no details given"
    assert reason_of(ValueError("bad value")) == "bad value"
