"""What api.anthropic.com sends for `POST /v1/messages`, as `FakeResponse`s.

Invariant: every builder here reproduces the real wire format — SSE framing
(`event:` line, one compact JSON `data:` line, blank line), the JSON shapes of
messages, usage and `{"type":"error","error":{...}}` bodies, and the headers
(`request-id`, `retry-after`) — so the real SDK parses it exactly as in production.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes import image_bytes
from tests.fakes.server import FakeResponse

MESSAGES_PATH = "/v1/messages"
SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"
REQUEST_ID = "req_011CTestFakeServer0000001"


def _dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"))


def sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {_dumps(data)}\n\n"


# ---- single stream events ----------------------------------------------------


def message_start(
    *,
    model: str = "claude-sonnet-4-6",
    input_tokens: int = 25,
    cache_creation_input_tokens: int = 0,
    cache_read_input_tokens: int = 0,
    message_id: str = "msg_01XFDUDYJgAACzvnptvVoYEL",
) -> str:
    return sse(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": input_tokens,
                    "cache_creation_input_tokens": cache_creation_input_tokens,
                    "cache_read_input_tokens": cache_read_input_tokens,
                    "output_tokens": 1,
                    "service_tier": "standard",
                },
            },
        },
    )


def ping() -> str:
    return sse("ping", {"type": "ping"})


def text_block_start(index: int) -> str:
    return sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})


def text_delta(index: int, text: str) -> str:
    return sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}})


def tool_use_start(index: int, tool_id: str, name: str) -> str:
    return sse(
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": tool_id, "name": name, "input": {}}},
    )


def input_json_delta(index: int, partial_json: str) -> str:
    return sse(
        "content_block_delta",
        {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": partial_json}},
    )


def block_stop(index: int) -> str:
    return sse("content_block_stop", {"type": "content_block_stop", "index": index})


def message_delta(stop_reason: str = "end_turn", output_tokens: int = 15) -> str:
    return sse(
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": {"output_tokens": output_tokens}},
    )


def message_stop() -> str:
    return sse("message_stop", {"type": "message_stop"})


def stream_error(error_type: str = "overloaded_error", message: str = "Overloaded") -> str:
    """The `event: error` the API sends inside an already-started 200 stream."""
    return sse("error", {"type": "error", "error": {"type": error_type, "message": message}})


# ---- whole streams -------------------------------------------------------------


def text_events(
    texts: list[str],
    *,
    stop_reason: str = "end_turn",
    output_tokens: int = 15,
    **start: Any,
) -> list[str]:
    """The events of a plain text reply, one SSE event per list item."""
    return [
        message_start(**start),
        text_block_start(0),
        ping(),
        *(text_delta(0, t) for t in texts),
        block_stop(0),
        message_delta(stop_reason, output_tokens),
        message_stop(),
    ]


def tool_events(
    calls: list[tuple[str, str, list[str]]],
    *,
    preface: str = "",
    output_tokens: int = 80,
    **start: Any,
) -> list[str]:
    """A reply with optional text, then tool_use blocks whose JSON arrives in the given fragments."""
    events = [message_start(**start)]
    index = 0
    if preface:
        events += [text_block_start(0), text_delta(0, preface), block_stop(0)]
        index = 1
    for tool_id, name, fragments in calls:
        events.append(tool_use_start(index, tool_id, name))
        events.append(input_json_delta(index, ""))  # the API opens every tool block with an empty fragment
        events += [input_json_delta(index, f) for f in fragments]
        events.append(block_stop(index))
        index += 1
    events += [message_delta("tool_use", output_tokens), message_stop()]
    return events


def sse_response(events: list[str], *, drop_after: int | None = None, chunk_delay: float = 0.0) -> FakeResponse:
    response = FakeResponse.stream(events, SSE_CONTENT_TYPE, drop_after=drop_after, chunk_delay=chunk_delay)
    response.headers.update({"request-id": REQUEST_ID, "cache-control": "no-cache"})
    return response


def split_bytes(events: list[str], size: int = 7) -> list[bytes]:
    """The same stream cut into small chunks that split events and UTF-8 characters, as TCP may."""
    raw = "".join(events).encode()
    return [raw[i : i + size] for i in range(0, len(raw), size)]


# ---- non-streaming replies --------------------------------------------------------


def message_json(
    content: list[dict[str, Any]],
    *,
    model: str = "claude-sonnet-4-6",
    stop_reason: str = "end_turn",
    input_tokens: int = 25,
    output_tokens: int = 15,
    cache_creation_input_tokens: int = 0,
    cache_read_input_tokens: int = 0,
) -> FakeResponse:
    body = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "cache_creation_input_tokens": cache_creation_input_tokens,
            "cache_read_input_tokens": cache_read_input_tokens,
            "output_tokens": output_tokens,
            "service_tier": "standard",
        },
    }
    return FakeResponse.json(body, headers={"request-id": REQUEST_ID})


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool_use_block(tool_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": arguments}


# ---- error replies ---------------------------------------------------------------


def error_response(status: int, error_type: str, message: str, headers: dict[str, str] | None = None) -> FakeResponse:
    body = {"type": "error", "error": {"type": error_type, "message": message}, "request_id": REQUEST_ID}
    return FakeResponse.json(body, status=status, headers={"request-id": REQUEST_ID, **(headers or {})})


def authentication_error() -> FakeResponse:
    return error_response(401, "authentication_error", "invalid x-api-key")


def rate_limit_error(retry_after: str = "0.02") -> FakeResponse:
    """429 with `retry-after` (the API sends whole seconds; tests pass a fraction the SDK honours)."""
    return error_response(
        429,
        "rate_limit_error",
        "This request would exceed the rate limit for your organization of 50,000 input tokens per minute. "
        "For details, refer to: https://docs.claude.com/en/api/rate-limits.",
        {"retry-after": retry_after, "anthropic-ratelimit-input-tokens-remaining": "0"},
    )


def overloaded_error(retry_after: str | None = "0.02") -> FakeResponse:
    return error_response(529, "overloaded_error", "Overloaded", {"retry-after": retry_after} if retry_after else None)


def prompt_too_long_error(tokens: int = 210000, maximum: int = 200000) -> FakeResponse:
    return error_response(400, "invalid_request_error", f"prompt is too long: {tokens} tokens > {maximum} maximum")


def model_not_found_error(model: str) -> FakeResponse:
    return error_response(404, "not_found_error", f"model: {model}")


def api_error() -> FakeResponse:
    return error_response(500, "api_error", "Internal server error")


# ---- images: checked as the Messages API checks them, counted as it counts them -------------------------

IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


def _image_blocks(body: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(where, role, block) of every image block: in a turn's content or inside a tool_result's content."""
    found = []
    for m, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        for b, block in enumerate(content if isinstance(content, list) else []):
            if block.get("type") == "image":
                found.append((f"messages.{m}.content.{b}", message.get("role", ""), block))
            inner = block.get("content") if block.get("type") == "tool_result" else None
            for i, item in enumerate(inner if isinstance(inner, list) else []):
                if item.get("type") == "image":
                    found.append((f"messages.{m}.content.{b}.content.{i}", message.get("role", ""), item))
    return found


def check_images(body: dict[str, Any]) -> FakeResponse | None:
    """The 400 the API answers a request whose image blocks it rejects; None when they are all valid."""
    for where, role, block in _image_blocks(body):
        source = block.get("source") or {}
        if role != "user":
            return error_response(400, "invalid_request_error", f"{where}: image blocks are only allowed in user messages")
        if source.get("type") != "base64":
            return error_response(400, "invalid_request_error", f"{where}.image.source: expected base64")
        media_type = source.get("media_type")
        if media_type not in IMAGE_TYPES:
            return error_response(
                400, "invalid_request_error",
                f"{where}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'",
            )
        raw = image_bytes.decode(source.get("data") or "")
        if not raw:
            return error_response(400, "invalid_request_error", f"{where}.image.source.base64.data: invalid base64 data")
        if image_bytes.sniff(raw) != media_type:
            return error_response(
                400, "invalid_request_error",
                f"{where}.image.source.base64.data: Image does not match the provided media type {media_type}",
            )
    return None


def image_input_tokens(body: dict[str, Any]) -> int:
    """What the API adds to input_tokens for the request's images."""
    return sum(
        image_bytes.anthropic_image_tokens(image_bytes.decode(block["source"]["data"]) or b"")
        for _, _, block in _image_blocks(body)
    )


def vision_responder(text: str = "I see it.", text_tokens: int = 25):
    """A responder answering every /v1/messages request as the API does: a 400 for an image block it would
    reject, else a streamed reply whose input_tokens are `text_tokens` plus what the images cost."""

    def respond(request: Any) -> FakeResponse | None:
        if request.path != "/v1/messages":
            return None
        body = request.json
        problem = check_images(body)
        if problem is not None:
            return problem
        return sse_response(text_events([text], input_tokens=text_tokens + image_input_tokens(body)))

    return respond
