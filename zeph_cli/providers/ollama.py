"""Ollama adapter: `/api/chat` through the official `ollama` SDK.

Invariant: every request is one SDK call against `settings.base_url` (retried here
on 429/503/refused connections, since the SDK has no retry), and every failure
leaves as a typed error from `zeph_cli.errors`, never as an SDK or httpx exception. Images go as base64 strings in the `images`
list of the message that carries them (a user message, or a tool result's own
`tool` message); a message without images has no `images` key.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import httpx
import ollama

from .. import errors
from ..messages import (
    ImagePart,
    Message,
    StreamEvent,
    StreamEnd,
    TextDelta,
    TextPart,
    ToolCallDelta,
    ToolSpec,
    Usage,
    UsageUpdate,
)
from ..models import ModelProfile, profile_for, served_profile, with_window
from .base import (
    DISCOVERY_TIMEOUT_SECS,
    ChatRequest,
    Provider,
    ProviderSettings,
    connection_error,
    describe_status_error,
    html_page_error,
    tap_request,
    tapping,
    timeout_error,
)
from ..waiting import within
from .http_trust import trust_for
from .server_facts import OLLAMA_WINDOW_CAP, ServerFacts, from_ollama_show

T = TypeVar("T")


DEFAULT_WINDOW_CAP = OLLAMA_WINDOW_CAP
RETRY_STATUSES = (429, 503)
_ROLES = {"system": "system", "context": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
# Ollama's own wordings, beyond the shared patterns in `errors`.
_OLLAMA_CONTEXT_RE = re.compile(
    r"exceeds the context length|longer than the context length|exceed_context_size_error", re.IGNORECASE
)
# What the SDK call can raise: its own errors, httpx's, and the parse errors of a
# bad reply (JSONDecodeError / pydantic ValidationError are ValueErrors; a JSON
# line that is not an object gives AttributeError/TypeError).
_SDK_ERRORS = (
    ollama.ResponseError,
    ollama.RequestError,
    httpx.HTTPError,
    httpx.StreamError,
    ConnectionError,
    ValueError,
    TypeError,
    AttributeError,
)


class OllamaProvider(Provider):
    kind = "ollama"
    retry_base_delay = 0.5  # seconds; doubled per attempt
    retry_max_delay = 30.0

    def __init__(self, settings: ProviderSettings, *, retry_base_delay: float | None = None) -> None:
        super().__init__(settings)
        if retry_base_delay is not None:
            self.retry_base_delay = retry_base_delay
        self._client: ollama.AsyncClient | None = None
        self._profile: ModelProfile | None = None
        self._facts: ServerFacts | None = None
        self._show_answered = False
        self._retry_after: float | None = None

    # ---- client ------------------------------------------------------------

    def _sdk(self) -> ollama.AsyncClient:
        if self._client is None:
            headers = {"Authorization": f"Bearer {self.settings.api_key}"} if self.settings.api_key else None
            trust = trust_for(self.settings.base_url, httpx.create_ssl_context)
            self._client = ollama.AsyncClient(
                host=self.settings.base_url,
                timeout=self.settings.timeout_secs,
                headers=headers,
                event_hooks={"request": [tap_request], "response": [self._remember_retry_after]},
                **({"verify": trust} if trust else {}),
            )
        return self._client

    async def _remember_retry_after(self, response: httpx.Response) -> None:
        if response.status_code in RETRY_STATUSES:
            self._retry_after = _parse_retry_after(response.headers.get("retry-after"))

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    # ---- profile -----------------------------------------------------------

    async def profile(self) -> ModelProfile:
        """The window zeph budgets for and sends as `num_ctx` with every request:
        the Modelfile's num_ctx, else the model's trained length capped at
        DEFAULT_WINDOW_CAP (the table's window, capped, when /api/show has none)."""
        if self._profile is None:
            facts = await self.discover()
            if facts.window:
                self._profile = served_profile(self.model, facts.window, facts.source)
            elif self._show_answered:
                table = profile_for(self.model)
                capped = min(table.context_window, DEFAULT_WINDOW_CAP)
                self._profile = with_window(table, capped, f"{table.window_source}, capped at {DEFAULT_WINDOW_CAP}")
            else:
                self._profile = profile_for(self.model)
        return self._profile

    async def discover(self) -> ServerFacts:
        """`/api/show` of the configured model, within DISCOVERY_TIMEOUT_SECS; silent on failure."""
        if self._facts is None:
            try:
                show = await within(self._sdk().show(self.model), DISCOVERY_TIMEOUT_SECS)
            except (TimeoutError, *_SDK_ERRORS):
                self._facts = ServerFacts()
            else:
                self._show_answered = True
                self._facts = from_ollama_show(show.parameters, show.modelinfo or {})
        return self._facts

    # ---- chat --------------------------------------------------------------

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        kwargs = {
            "model": self.model,
            "messages": to_wire_messages(request.messages),
            "tools": [_wire_tool(t) for t in request.tools] or None,
            "options": _options(request),
        }
        if not request.stream:
            with tapping(request.wire_tap):
                reply = await self._with_retries(lambda: self._chat(kwargs, stream=False))
            for event in _events(reply, 0, final=True):
                yield event
            return

        with tapping(request.wire_tap):  # the SDK sends the request when the stream is first read
            chunks, first = await self._with_retries(lambda: self._open_stream(kwargs))
        try:
            chunk: ollama.ChatResponse | None = first
            next_index = 0
            while chunk is not None:
                events = _events(chunk, next_index)
                next_index += sum(1 for e in events if isinstance(e, ToolCallDelta))
                for event in events:
                    yield event
                if chunk.done:
                    return
                chunk = await self._next_chunk(chunks)
            raise errors.BadResponse(
                f"{self.name} at {self.endpoint} ended the reply stream before its final message",
                provider=self.name,
            )
        finally:
            await chunks.aclose()

    def _chat(self, kwargs: dict[str, Any], *, stream: bool) -> Awaitable[Any]:
        """The SDK's chat request with the tools' JSON schemas sent as written: its `Tool` model keeps
        one level of `properties` and drops `anyOf` (nested schemas, as MCP tools have, would arrive empty)."""
        tools = kwargs.get("tools")
        from ollama._types import ChatRequest  # the model chat() itself builds

        body = ChatRequest(**{**kwargs, "tools": None}, stream=stream).model_dump(exclude_none=True)
        if tools:
            body["tools"] = tools
        return self._sdk()._request(ollama.ChatResponse, "POST", "/api/chat", json=body, stream=stream)

    async def _open_stream(self, kwargs: dict[str, Any]) -> tuple[AsyncGenerator[ollama.ChatResponse, None], Any]:
        # The SDK sends the request on the first __anext__, so status errors surface here.
        chunks = await self._chat(kwargs, stream=True)
        try:
            first = await chunks.__anext__()
        except StopAsyncIteration:
            raise errors.BadResponse(
                f"{self.name} at {self.endpoint} answered with an empty stream", provider=self.name
            ) from None
        except BaseException:
            await chunks.aclose()
            raise
        return chunks, first

    async def _next_chunk(self, chunks: AsyncIterator[ollama.ChatResponse]) -> ollama.ChatResponse | None:
        try:
            return await chunks.__anext__()
        except StopAsyncIteration:
            return None
        except _SDK_ERRORS as exc:
            raise self._map_error(exc, mid_stream=True) from exc

    async def _with_retries(self, call: Callable[[], Awaitable[T]]) -> T:
        attempt = 0
        while True:
            self._retry_after = None
            try:
                return await call()
            except _SDK_ERRORS as exc:
                if attempt >= self.settings.max_retries or not _retryable(exc):
                    raise self._map_error(exc, mid_stream=False) from exc
            await asyncio.sleep(self._backoff(attempt))
            attempt += 1

    def _backoff(self, attempt: int) -> float:
        if self._retry_after is not None:
            return min(self._retry_after, self.retry_max_delay)
        return min(self.retry_base_delay * 2**attempt, self.retry_max_delay)

    # ---- errors ------------------------------------------------------------

    def _map_error(self, exc: Exception, *, mid_stream: bool) -> errors.ProviderError:
        url = self.endpoint
        if isinstance(exc, ollama.ResponseError):
            return self._status_error(exc)
        if isinstance(exc, httpx.TimeoutException):
            return timeout_error(self.name, url, self.settings.timeout_secs)
        if isinstance(exc, (httpx.ConnectError, ConnectionError)):
            return connection_error(
                self.name, url, "nothing is listening there. Start Ollama with `ollama serve`, "
                "or point OLLAMA_HOST / the provider's base_url at the address it listens on",
            )
        if isinstance(exc, httpx.TransportError):
            what = "the connection dropped in the middle of the reply" if mid_stream else "the connection failed"
            return errors.ProviderConnectionError(
                f"{self.name} at {url}: {what} ({type(exc).__name__}: {errors.reason_of(exc)})", provider=self.name
            )
        page = html_page_error(self.name, url, exc.doc) if isinstance(exc, json.JSONDecodeError) else None
        if page is not None:
            return page
        if isinstance(exc, (ValueError, TypeError, AttributeError, httpx.DecodingError)):
            return errors.BadResponse(
                f"{self.name} at {url} sent a reply zeph cannot read ({type(exc).__name__}: {exc})",
                provider=self.name,
            )
        return errors.ProviderError(
            f"{self.name} at {url} failed: {type(exc).__name__}: {errors.reason_of(exc)}", provider=self.name
        )

    def _status_error(self, exc: ollama.ResponseError) -> errors.ProviderError:
        text = str(exc.error)
        status = exc.status_code if exc.status_code > 0 else None
        error = describe_status_error(
            provider=self.name,
            status=status,
            message=text,
            key_env=self.settings.api_key_env,
            url=self.endpoint,
            model=self.model,
            error_type="context_length_exceeded" if _OLLAMA_CONTEXT_RE.search(text) else "",
        )
        if isinstance(error, errors.ModelNotFound):
            return errors.ModelNotFound(
                f"{error} Run `ollama pull {self.model}` to download it.", provider=self.name, status=status
            )
        if status is None and type(error) is errors.ProviderError:
            # An {"error": ...} line inside a 200 stream: the server gave up mid-reply.
            return errors.ProviderError(
                f"{self.name} at {self.endpoint} reported an error while answering: {text}", provider=self.name
            )
        return error


# ---- wire translation -------------------------------------------------------


def to_wire_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """Neutral messages → Ollama chat messages (context → system; one `tool` message per result)."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        results = message.tool_results
        if results:
            for r in results:
                result: dict[str, Any] = {"role": "tool", "content": r.content, "tool_name": r.name}
                if r.images:
                    result["images"] = [i.data for i in r.images]
                wire.append(result)
            continue
        entry: dict[str, Any] = {
            "role": _ROLES[message.role],
            "content": "".join(p.text for p in message.parts if isinstance(p, TextPart)),
        }
        images = [p.data for p in message.parts if isinstance(p, ImagePart)]
        if images:
            entry["images"] = images
        if message.tool_calls:
            entry["tool_calls"] = [
                {"function": {"name": c.name, "arguments": dict(c.arguments)}} for c in message.tool_calls
            ]
        wire.append(entry)
    return wire


def _wire_tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


def _options(request: ChatRequest) -> dict[str, Any]:
    options: dict[str, Any] = {"num_predict": request.max_tokens}
    if request.temperature is not None:
        options["temperature"] = request.temperature
    if request.context_window:
        options["num_ctx"] = request.context_window
    return options


def _events(chunk: ollama.ChatResponse, first_index: int, *, final: bool = False) -> list[StreamEvent]:
    """The events one chat chunk (or, with final=True, a whole non-streamed reply) carries."""
    events: list[StreamEvent] = []
    message = chunk.message
    if message.content:
        events.append(TextDelta(message.content))
    for offset, call in enumerate(message.tool_calls or ()):
        events.append(
            ToolCallDelta(
                index=first_index + offset,
                id=getattr(call, "id", None) or None,
                name=call.function.name,
                arguments=json.dumps(dict(call.function.arguments or {}), ensure_ascii=False),
            )
        )
    if chunk.done or final:
        usage = Usage(input_tokens=chunk.prompt_eval_count or 0, output_tokens=chunk.eval_count or 0)
        events.append(UsageUpdate(usage))
        events.append(StreamEnd(chunk.done_reason or "stop"))
    return events


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, ollama.ResponseError):
        return exc.status_code in RETRY_STATUSES
    return isinstance(exc, (httpx.ConnectError, ConnectionError))


def _parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds (a number, or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
