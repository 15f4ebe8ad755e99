"""Byte-accurate OpenAI Chat Completions wire payloads for the fake server.

Builders return `FakeResponse`s shaped exactly like api.openai.com replies:
`data: {chunk}\\n\\n` SSE events ending in `data: [DONE]`, full JSON completions,
and the real `{"error": {"message", "type", "param", "code"}}` error bodies with
the headers the API sends alongside them.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes import image_bytes
from tests.fakes.server import FakeResponse

CHUNK_ID = "chatcmpl-AcFwUHSq3pH2kFh8s5CWB0ZqYq9Qe"
CREATED = 1733945300
FINGERPRINT = "fp_0aa8d3e20b"
SSE = "text/event-stream; charset=utf-8"

# Headers OpenAI sends on every reply (values shortened but in the real format).
BASE_HEADERS = {
    "x-request-id": "req_6f3c1d0c2b8e4f7a9d1e2c3b4a5f6e7d",
    "openai-processing-ms": "187",
    "openai-version": "2020-10-01",
}


# ---- streaming ----------------------------------------------------------------


def chunk(
    *,
    model: str = "gpt-4o-2024-08-06",
    delta: dict[str, Any] | None = None,
    finish_reason: str | None = None,
    include_usage: bool = True,
) -> dict[str, Any]:
    """One `chat.completion.chunk` with a single choice.

    With `stream_options.include_usage` the API adds `"usage": null` to every
    chunk but the last; compatible servers without usage leave the key out.
    """
    body: dict[str, Any] = {
        "id": CHUNK_ID,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
        "choices": [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish_reason}],
    }
    if include_usage:
        body["usage"] = None
    return body


def usage_body(prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0, reasoning_tokens: int = 0) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def usage_chunk(
    prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0, *, model: str = "gpt-4o-2024-08-06"
) -> dict[str, Any]:
    """The final chunk `include_usage` adds: empty `choices`, the request's usage."""
    return {
        "id": CHUNK_ID,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
        "choices": [],
        "usage": usage_body(prompt_tokens, completion_tokens, cached_tokens),
    }


def sse(data: dict[str, Any] | str) -> str:
    """One server-sent event exactly as the API frames it."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return f"data: {payload}\n\n"


DONE = "data: [DONE]\n\n"


def text_chunks(
    pieces: list[str],
    *,
    finish_reason: str = "stop",
    usage: tuple[int, int, int] | None = (12, 5, 0),
    model: str = "gpt-4o-2024-08-06",
) -> list[str]:
    """SSE events of a text reply: role chunk, one chunk per piece, finish, usage, [DONE].

    `usage=None` streams like a compatible server that reports no usage at all.
    """
    with_usage = usage is not None
    events = [sse(chunk(model=model, delta={"role": "assistant", "content": "", "refusal": None}, include_usage=with_usage))]
    events += [sse(chunk(model=model, delta={"content": p}, include_usage=with_usage)) for p in pieces]
    events.append(sse(chunk(model=model, delta={}, finish_reason=finish_reason, include_usage=with_usage)))
    if usage is not None:
        events.append(sse(usage_chunk(*usage, model=model)))
    events.append(DONE)
    return events


def tool_call_chunks(
    calls: list[tuple[str, str, list[str]]],
    *,
    usage: tuple[int, int, int] | None = (80, 40, 0),
    model: str = "gpt-4o-2024-08-06",
) -> list[str]:
    """SSE events of parallel tool calls: `(id, name, argument fragments)` each.

    As the API does, the first chunk of a call carries index, id, type, name and
    empty arguments; later chunks carry only the index and an arguments fragment.
    """
    with_usage = usage is not None
    events = [sse(chunk(model=model, delta={"role": "assistant", "content": None, "refusal": None}, include_usage=with_usage))]
    for index, (call_id, name, fragments) in enumerate(calls):
        head = {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        events.append(sse(chunk(model=model, delta={"tool_calls": [head]}, include_usage=with_usage)))
        for fragment in fragments:
            part = {"index": index, "function": {"arguments": fragment}}
            events.append(sse(chunk(model=model, delta={"tool_calls": [part]}, include_usage=with_usage)))
    events.append(sse(chunk(model=model, delta={}, finish_reason="tool_calls", include_usage=with_usage)))
    if usage is not None:
        events.append(sse(usage_chunk(*usage, model=model)))
    events.append(DONE)
    return events


def stream_response(events: list[str], *, drop_after: int | None = None, chunk_delay: float = 0.0) -> FakeResponse:
    response = FakeResponse.stream(events, SSE, drop_after=drop_after, chunk_delay=chunk_delay)
    response.headers.update(BASE_HEADERS)
    return response


# ---- non-streaming ------------------------------------------------------------


def completion(
    *,
    content: str | None = "Hello!",
    tool_calls: list[tuple[str, str, dict[str, Any]]] | None = None,
    finish_reason: str = "stop",
    usage: tuple[int, int, int] | None = (12, 5, 0),
    model: str = "gpt-4o-2024-08-06",
) -> dict[str, Any]:
    """A full `chat.completion` object; tool calls are `(id, name, arguments dict)`."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None, "annotations": []}
    if tool_calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for cid, name, args in tool_calls
        ]
    body: dict[str, Any] = {
        "id": CHUNK_ID,
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
    }
    if usage is not None:
        body["usage"] = usage_body(*usage)
    return body


def json_response(payload: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> FakeResponse:
    return FakeResponse.json(payload, status=status, headers={**BASE_HEADERS, **(headers or {})})


# ---- real error bodies --------------------------------------------------------


def error_body(message: str, type_: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def invalid_api_key(key_hint: str = "sk-proj-****************************************************wxyz") -> FakeResponse:
    message = (
        f"Incorrect API key provided: {key_hint}. You can find your API key at "
        "https://platform.openai.com/account/api-keys."
    )
    return json_response(error_body(message, "invalid_request_error", "invalid_api_key"), status=401)


def rate_limited(retry_after: str = "1", model: str = "gpt-4o") -> FakeResponse:
    message = (
        f"Rate limit reached for {model} in organization org-xg8wH2rQbQ8bQ3hbOLG1GmEN on tokens per min (TPM): "
        "Limit 30000, Used 29554, Requested 1203. Please try again in 1.514s. "
        "Visit https://platform.openai.com/account/rate-limits to learn more."
    )
    headers = {
        "retry-after": retry_after,
        "x-ratelimit-limit-requests": "500",
        "x-ratelimit-limit-tokens": "30000",
        "x-ratelimit-remaining-requests": "499",
        "x-ratelimit-remaining-tokens": "446",
        "x-ratelimit-reset-requests": "120ms",
        "x-ratelimit-reset-tokens": "1.514s",
    }
    return json_response(error_body(message, "tokens", "rate_limit_exceeded"), status=429, headers=headers)


def context_length_exceeded(limit: int = 128000, used: int = 130000) -> FakeResponse:
    message = (
        f"This model's maximum context length is {limit} tokens. However, your messages resulted in "
        f"{used} tokens. Please reduce the length of the messages."
    )
    return json_response(
        error_body(message, "invalid_request_error", "context_length_exceeded", param="messages"), status=400
    )


def model_not_found(model: str = "gpt-x") -> FakeResponse:
    message = f"The model `{model}` does not exist or you do not have access to it."
    return json_response(error_body(message, "invalid_request_error", "model_not_found"), status=404)


def server_error(headers: dict[str, str] | None = None) -> FakeResponse:
    message = (
        "The server had an error while processing your request. Sorry about that! You can retry your request, "
        "or contact us through our help center at help.openai.com if the error persists. "
        "(Please include the request ID req_6f3c1d0c2b8e4f7a9d1e2c3b4a5f6e7d in your message.)"
    )
    return json_response(error_body(message, "server_error"), status=500, headers=headers)


def overloaded(headers: dict[str, str] | None = None) -> FakeResponse:
    message = (
        "That model is currently overloaded with other requests. You can retry your request, or contact us "
        "through our help center at help.openai.com if the error persists. "
        "(Please include the request ID req_6f3c1d0c2b8e4f7a9d1e2c3b4a5f6e7d in your message.)"
    )
    return json_response(error_body(message, "server_error"), status=503, headers=headers)


# ---- images: checked as Chat Completions checks them, counted as it counts them --------------------------

IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}


def _image_parts(body: dict[str, Any]) -> list[tuple[int, str, dict[str, Any]]]:
    """(message index, role, part) of every `image_url` content part."""
    found = []
    for m, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "image_url":
                found.append((m, message.get("role", ""), part))
    return found


def _data_url_bytes(url: str) -> tuple[str, bytes | None]:
    head, _, data = url.partition(",")
    if not head.startswith("data:") or not head.endswith(";base64"):
        return "", None
    return head[len("data:"):-len(";base64")], image_bytes.decode(data)


def check_images(body: dict[str, Any]) -> FakeResponse | None:
    """The 400 the API answers a request whose images it rejects (an image outside a user message, a data
    URL that does not decode to a PNG, JPEG, GIF or WebP of the stated type); None when all are valid."""
    for m, role, part in _image_parts(body):
        if role != "user":
            message = (
                f"Invalid 'messages[{m}]'. Image URLs are only allowed for messages with role 'user', "
                f"but this message with role '{role}' contains an image URL."
            )
            return json_response(error_body(message, "invalid_request_error", "invalid_value", f"messages[{m}]"), 400)
        mime, raw = _data_url_bytes(str((part.get("image_url") or {}).get("url", "")))
        if raw is None or mime not in IMAGE_FORMATS or image_bytes.sniff(raw) != mime:
            message = (
                "You uploaded an unsupported image. Please make sure your image has of one the following formats: "
                "['png', 'jpeg', 'gif', 'webp']."
            )
            return json_response(error_body(message, "invalid_request_error", "invalid_image_format"), 400)
    return None


def image_prompt_tokens(body: dict[str, Any], base: int = 85, per_tile: int = 170) -> int:
    """What the API adds to prompt_tokens for the request's images (gpt-4o's figures by default)."""
    total = 0
    for _, _, part in _image_parts(body):
        _, raw = _data_url_bytes(part["image_url"]["url"])
        total += image_bytes.openai_image_tokens(raw or b"", base, per_tile)
    return total


def vision_responder(text: str = "I see it.", text_tokens: int = 12):
    """A responder answering every chat request as the API does for gpt-4o: a 400 for an image it would
    reject, else a streamed reply whose prompt_tokens are `text_tokens` plus what the images cost."""

    def respond(request: Any) -> FakeResponse | None:
        if request.path != "/v1/chat/completions":
            return None
        body = request.json
        problem = check_images(body)
        if problem is not None:
            return problem
        return stream_response(text_chunks([text], usage=(text_tokens + image_prompt_tokens(body), 5, 0)))

    return respond
