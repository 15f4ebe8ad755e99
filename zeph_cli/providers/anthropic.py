"""Adapter for Anthropic's Messages API (`POST /v1/messages`, streamed over SSE).

Invariant: a conversation leaves as one cached top-level `system` prompt plus
user/assistant turns that strictly alternate, replies come back only as
`messages` stream events, and every SDK or transport failure leaves as a typed
`zeph_cli.errors` error. An image goes as a base64 `image` block, in a user turn or
inside a `tool_result`'s content after its text; a result without images keeps
its content a plain string.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

import anthropic

try:  # anthropic >= 2 runs on httpx2; earlier releases on httpx
    import httpx2 as _http
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx as _http  # type: ignore[no-redef]

from .. import errors
from ..messages import (
    ImagePart,
    Message,
    StreamEvent,
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
from .base import (
    ChatRequest, Provider, ProviderSettings, answer_within, connection_error, describe_status_error, html_page_error,
    refuse_html_page, tap_request, tapping, timeout_error,
)
from .http_trust import trust_for

SYSTEM_SEPARATOR = "\n---\n"


# An `event: error` inside a 200 stream carries only the error type; these are
# the HTTP statuses the API uses for the same types.
_STATUS_OF_ERROR_TYPE = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


def _image(image: ImagePart) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": image.mime_type, "data": image.data}}


def _block(part: Any) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text} if part.text else None
    if isinstance(part, ImagePart):
        return _image(part)
    if isinstance(part, ToolCallPart):
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": part.arguments}
    if isinstance(part, ToolResultPart):
        content: str | list[dict[str, Any]] = part.content
        if part.images:
            text = [{"type": "text", "text": part.content}] if part.content else []
            content = [*text, *(_image(i) for i in part.images)]
        return {
            "type": "tool_result",
            "tool_use_id": part.tool_call_id,
            "content": content,
            "is_error": part.is_error,
        }
    return None


def to_wire(messages: Iterable[Message]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return (system blocks, messages) for the Messages API.

    All system messages become one cached system block; context and tool
    messages are user turns; consecutive turns of one role are merged, and in
    a user turn the tool results come first, as the API requires. Two more
    cache breakpoints: the end of the history before the running turn (before
    the per-turn context blocks that precede it, which change every turn), so
    the next turn re-reads the history from the cache; and the conversation's
    last block before any closing context (the enhancement prompt), so the
    turn's next tool round does.
    """
    messages = list(messages)
    system_texts: list[str] = []
    turns: list[dict[str, Any]] = []
    last_block: dict[int, dict[str, Any]] = {}  # message index → its last wire block
    for index, message in enumerate(messages):
        if message.role == "system":
            if message.content.strip():
                system_texts.append(message.content)
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = [b for b in map(_block, message.parts) if b is not None]
        if not blocks:
            continue
        last_block[index] = blocks[-1]
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        if turn["role"] == "user":
            turn["content"].sort(key=lambda b: b["type"] != "tool_result")  # stable: results first
    for index in _breakpoints(messages, last_block):
        last_block[index]["cache_control"] = {"type": "ephemeral"}
    system: list[dict[str, Any]] = []
    if system_texts:
        system = [
            {"type": "text", "text": SYSTEM_SEPARATOR.join(system_texts), "cache_control": {"type": "ephemeral"}}
        ]
    return system, turns


def _breakpoints(messages: list[Message], sent: dict[int, dict[str, Any]]) -> set[int]:
    """The messages whose last block carries a cache breakpoint (at most two)."""
    if not sent:
        return set()
    shown = sorted(sent)
    end = next((i for i in reversed(shown) if messages[i].role != "context"), shown[-1])
    points = {end}
    running = next((i for i in reversed(shown) if messages[i].role == "user"), None)
    if running is not None:
        before = running - 1
        while before >= 0 and messages[before].role == "context":
            before -= 1
        if before in sent and before < end:
            points.add(before)
    return points


def tool_to_wire(tool: ToolSpec) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}


def _usage(raw: Any) -> Usage:
    def count(name: str) -> int:
        return int(getattr(raw, name, None) or 0)

    return Usage(
        input_tokens=count("input_tokens"),
        output_tokens=count("output_tokens"),
        cache_read_tokens=count("cache_read_input_tokens"),
        cache_write_tokens=count("cache_creation_input_tokens"),
    )


class _StreamTranslator:
    """Turns raw Messages API stream events into `messages` stream events."""

    def __init__(self) -> None:
        self.tool_index: dict[int, int] = {}  # content-block index -> tool-call index
        self.stop_reason = "end_turn"
        self.ended = False

    def feed(self, event: Any) -> Iterator[StreamEvent]:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            usage = _usage(getattr(getattr(event, "message", None), "usage", None))
            yield UsageUpdate(Usage(usage.input_tokens, 0, usage.cache_read_tokens, usage.cache_write_tokens))
        elif kind == "content_block_start":
            block = getattr(event, "content_block", None)
            if getattr(block, "type", None) == "tool_use":
                index = self.tool_index.setdefault(getattr(event, "index", -1), len(self.tool_index))
                start_input = getattr(block, "input", None)
                arguments = json.dumps(start_input) if start_input else ""
                yield ToolCallDelta(index, getattr(block, "id", None), getattr(block, "name", None), arguments)
            elif getattr(block, "type", None) == "text" and (text := getattr(block, "text", "")):
                yield TextDelta(text)
        elif kind == "content_block_delta":
            delta = getattr(event, "delta", None)
            delta_type = getattr(delta, "type", None)
            if delta_type == "text_delta" and (text := getattr(delta, "text", "")):
                yield TextDelta(text)
            elif delta_type == "input_json_delta" and getattr(event, "index", None) in self.tool_index:
                if partial := getattr(delta, "partial_json", ""):
                    yield ToolCallDelta(self.tool_index[event.index], arguments=partial)
        elif kind == "message_delta":
            self.stop_reason = getattr(getattr(event, "delta", None), "stop_reason", None) or self.stop_reason
            if getattr(event, "usage", None) is not None:
                yield UsageUpdate(_usage(event.usage))
        elif kind == "message_stop":
            self.ended = True
            yield StreamEnd(self.stop_reason)


class AnthropicProvider(Provider):
    kind = "anthropic"

    def __init__(self, settings: ProviderSettings) -> None:
        super().__init__(settings)
        self._client: anthropic.AsyncAnthropic | None = None

    @property
    def _url(self) -> str:
        return self.endpoint.rstrip("/") + "/v1/messages"

    def _get_client(self) -> anthropic.AsyncAnthropic:
        if self._client is None:
            # An empty key must send no auth header at all (the SDK would send an invalid one).
            headers = {} if self.settings.api_key else {"Authorization": anthropic.omit}
            trust = trust_for(self.settings.base_url, _http.create_ssl_context)
            client_options: dict[str, Any] = {"verify": trust} if trust else {}
            self._client = anthropic.AsyncAnthropic(
                api_key=self.settings.api_key,
                base_url=self.settings.base_url,
                timeout=self.settings.timeout_secs,
                max_retries=self.settings.max_retries,
                default_headers=headers,  # type: ignore[arg-type]  # the SDK drops a header set to omit; its hint says str
                http_client=anthropic.DefaultAsyncHttpxClient(event_hooks={"request": [tap_request]}, **client_options),
            )
        return self._client

    def _request_kwargs(self, request: ChatRequest) -> dict[str, Any]:
        system, turns = to_wire(request.messages)
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": request.max_tokens, "messages": turns}
        if system:
            kwargs["system"] = system
        if request.tools:
            kwargs["tools"] = [tool_to_wire(t) for t in request.tools]
        if request.temperature is not None:
            # Not a named parameter of every SDK release; the API accepts it.
            kwargs["extra_body"] = {"temperature": request.temperature}
        return kwargs

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        kwargs = self._request_kwargs(request)
        client = self._get_client()
        timeout = self.settings.timeout_secs
        try:
            if not request.stream:
                with tapping(request.wire_tap):
                    reply = await answer_within(client.messages.create(**kwargs), timeout)
                for event in self._reply_events(reply):
                    yield event
                return
            translator = _StreamTranslator()
            with tapping(request.wire_tap):
                opened = await answer_within(client.messages.create(stream=True, **kwargs), timeout)
            async with opened as events:
                await refuse_html_page(self.name, self._url, events.response)
                async for raw in events:
                    for event in translator.feed(raw):
                        yield event
            if not translator.ended:
                raise errors.BadResponse(
                    f"{self.name} at {self._url} ended the stream before message_stop; the reply is incomplete",
                    provider=self.name,
                )
        except anthropic.APIStatusError as exc:
            raise self._status_error(exc) from exc
        except (anthropic.APITimeoutError, _http.TimeoutException, TimeoutError) as exc:
            raise timeout_error(self.name, self.endpoint, timeout) from exc
        except anthropic.APIConnectionError as exc:
            raise connection_error(self.name, self.endpoint, errors.reason_of(exc.__cause__ or exc)) from exc
        except _http.HTTPError as exc:
            raise errors.ProviderConnectionError(
                f"the stream from {self.name} at {self._url} broke off mid-reply: {errors.reason_of(exc)}",
                provider=self.name,
            ) from exc
        except (json.JSONDecodeError, anthropic.APIResponseValidationError) as exc:
            raise errors.BadResponse(
                f"{self.name} at {self._url} sent a reply that is not valid Messages API JSON: {exc}",
                provider=self.name,
            ) from exc
        except anthropic.AnthropicError as exc:
            raise errors.ProviderError(f"{self.name} request to {self._url} failed: {errors.reason_of(exc)}", provider=self.name) from exc

    def _reply_events(self, reply: Any) -> list[StreamEvent]:
        page = html_page_error(self.name, self._url, reply) if isinstance(reply, str) else None
        if page is not None:
            raise page
        content = getattr(reply, "content", None)
        if not isinstance(content, list):
            raise errors.BadResponse(
                f"{self.name} at {self._url} sent a reply without a content list: {str(reply)[:200]}",
                provider=self.name,
            )
        events: list[StreamEvent] = []
        text = "".join(getattr(b, "text", None) or "" for b in content if getattr(b, "type", None) == "text")
        if text:
            events.append(TextDelta(text))
        calls = [b for b in content if getattr(b, "type", None) == "tool_use"]
        for index, block in enumerate(calls):
            arguments = json.dumps(getattr(block, "input", None) or {})
            events.append(ToolCallDelta(index, getattr(block, "id", None), getattr(block, "name", None), arguments))
        events.append(UsageUpdate(_usage(getattr(reply, "usage", None))))
        events.append(StreamEnd(getattr(reply, "stop_reason", None) or "end_turn"))
        return events

    def _status_error(self, exc: anthropic.APIStatusError) -> errors.ProviderError:
        body = exc.body if isinstance(exc.body, dict) else {}
        error = body.get("error")
        error = error if isinstance(error, dict) else {}
        error_type = str(error.get("type") or "")
        message = str(error.get("message") or (exc.body if isinstance(exc.body, str) else "") or exc)
        status = exc.status_code
        if status < 400:  # an `event: error` inside a 200 stream
            status = _STATUS_OF_ERROR_TYPE.get(error_type, 500)
        return describe_status_error(
            provider=self.name,
            status=status,
            message=message,
            key_env=self.settings.api_key_env,
            url=self._url,
            model=self.model,
            error_type=error_type,
        )

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()
