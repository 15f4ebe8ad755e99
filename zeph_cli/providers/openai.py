"""OpenAI Chat Completions adapter, for api.openai.com and OpenAI-compatible servers.

Invariant: every request goes through the official SDK's `chat.completions.create`
(whose own retries honour Retry-After); every reply, streamed or not, leaves as
`messages` events ending in exactly one `StreamEnd`, and every failure as a
typed `zeph_cli.errors` error. Images go as `image_url` data URLs in a user message's
content; a tool message cannot carry one, so a tool result's images follow the
round's tool messages in one user message, each labelled by its call id. A
message without images leaves exactly as it did before images existed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterable
from pathlib import PurePath
from typing import Any
from urllib.parse import urlsplit

import httpx2  # the SDK's own HTTP client library: its default TLS context
import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from .. import errors
from ..messages import (
    ImagePart,
    Message,
    StreamEnd,
    StreamEvent,
    TextDelta,
    TextPart,
    ToolCallDelta,
    ToolSpec,
    Usage,
    UsageUpdate,
)
from ..images import tool_image_label
from ..models import ModelProfile, served_profile
from ..paths import cache_dir
from . import facts_cache, server_facts
from .base import (
    DISCOVERY_TIMEOUT_SECS,
    ChatRequest,
    Provider,
    ProviderSettings,
    answer_within,
    connection_error,
    describe_status_error,
    html_page_error,
    refuse_html_page,
    tap_request,
    tapping,
    timeout_error,
)
from .http_trust import trust_for
from .server_facts import ServerFacts


# Hosted APIs whose windows the model table knows: never probed.
HOSTED_HOSTS = ("api.openai.com",)


def wire_messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Our conversation as Chat Completions `messages` (system and context both become `system`)."""
    wire: list[dict[str, Any]] = []
    pending_images: list[tuple[str, str, ImagePart]] = []  # (call id, tool, image) of the tool messages just sent

    def flush() -> None:
        if pending_images:
            wire.append(tool_images_message(pending_images))
            pending_images.clear()

    for message in messages:
        if message.role in ("user", "assistant") or (message.role == "tool" and not message.tool_results):
            flush()  # after the round's last tool message (a system message between them may stay between)
        text = "".join(p.text for p in message.parts if isinstance(p, TextPart))
        if message.role in ("system", "context"):
            wire.append({"role": "system", "content": text})
        elif message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": text or None}
            calls = message.tool_calls
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)},
                    }
                    for call in calls
                ]
            elif entry["content"] is None:
                entry["content"] = ""
            wire.append(entry)
        elif message.role == "tool" and message.tool_results:
            wire.extend(
                {"role": "tool", "tool_call_id": r.tool_call_id, "content": r.content} for r in message.tool_results
            )
            pending_images.extend((r.tool_call_id, r.name, image) for r in message.tool_results for image in r.images)
            continue
        elif message.images:  # a user message with images: its parts in order
            content: list[dict[str, Any]] = []
            for part in message.parts:
                if isinstance(part, TextPart) and part.text:
                    content.append({"type": "text", "text": part.text})
                elif isinstance(part, ImagePart):
                    content.append(_image_url(part))
            wire.append({"role": "user", "content": content})
        else:  # user, or a tool message carrying only text
            wire.append({"role": "user", "content": message.content})
    flush()
    return wire


def _image_url(image: ImagePart) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"}}


def tool_images_message(images: list[tuple[str, str, ImagePart]]) -> dict[str, Any]:
    """The user message that carries a round's tool-result images (tool messages take text only)."""
    content: list[dict[str, Any]] = []
    for call_id, name, image in images:
        content.append({"type": "text", "text": tool_image_label(name, call_id)})
        content.append(_image_url(image))
    return {"role": "user", "content": content}


def wire_tools(tools: Iterable[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in tools
    ]


def _usage(usage: Any) -> Usage:
    """Chat Completions usage: `prompt_tokens` includes the cached ones, which we count apart."""
    prompt = usage.prompt_tokens or 0
    details = usage.prompt_tokens_details
    cached = (details.cached_tokens or 0) if details is not None else 0
    return Usage(input_tokens=max(prompt - cached, 0), output_tokens=usage.completion_tokens or 0, cache_read_tokens=cached)


def _chunk_events(chunk: ChatCompletionChunk) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    for choice in chunk.choices or ():
        delta = choice.delta
        if delta is None:
            continue
        if delta.content:
            events.append(TextDelta(delta.content))
        for position, call in enumerate(delta.tool_calls or ()):
            function = call.function
            events.append(
                ToolCallDelta(
                    index=call.index if call.index is not None else position,
                    id=call.id or None,
                    name=(function.name if function else None) or None,
                    arguments=(function.arguments if function else None) or "",
                )
            )
    if chunk.usage is not None:
        events.append(UsageUpdate(_usage(chunk.usage)))
    return events


def error_text(body: object, fallback: str) -> str:
    """The provider's own error message from an error body (OpenAI's or a compatible server's shape)."""
    if isinstance(body, dict):
        for key in ("message", "error", "detail"):
            value = body.get(key)
            if isinstance(value, str) and value.strip():
                return value
        return json.dumps(body)[:500]
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return fallback


def _stated_window(body: object) -> int | None:
    """The window an error body states in a field of its own (llama.cpp: `n_ctx`)."""
    if isinstance(body, dict):
        value = body.get("n_ctx")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


# Statuses that mean "this server has no such endpoint" (a lasting answer); any other error is passing.
NO_SUCH_ENDPOINT = frozenset({404, 405, 501})


def server_root(base_url: str) -> str:
    """`http://host:8080/v1` → `http://host:8080`: where llama.cpp's /props and LM Studio's /api live."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


class OpenAIProvider(Provider):
    """Chat Completions over the `openai` SDK; `kind` is "openai" or "compatible"."""

    def __init__(self, settings: ProviderSettings) -> None:
        super().__init__(settings)
        self.kind = settings.kind
        self._client: openai.AsyncOpenAI | None = None
        self._facts: ServerFacts | None = None
        self._profile: ModelProfile | None = None

    @property
    def model(self) -> str:
        """The configured model; with none configured, the one the server says it serves."""
        return self.settings.model or (self._facts.model if self._facts and self._facts.model else "")

    @property
    def display_model(self) -> str:
        """The model as shown to the user: a served GGUF path is shown by its file name."""
        model = self.model
        if model.lower().endswith(".gguf") or model.startswith(("/", "./", "../", "~")):
            return PurePath(model).name
        return model

    @property
    def discovers(self) -> bool:
        """Local and compatible servers are asked about themselves; hosted APIs are not."""
        host = (urlsplit(self.endpoint).hostname or "").lower()
        return bool(host) and host not in HOSTED_HOSTS

    # ---- what the server says about itself ------------------------------------

    async def discover(self) -> ServerFacts:
        """Ask the server (llama.cpp /props, LM Studio /api/v0/models, /v1/models) at once,
        within DISCOVERY_TIMEOUT_SECS; the first that states a window (or a model id)
        wins, in that order. Cached per instance; every failure is silent."""
        if self._facts is not None:
            return self._facts
        if not self.discovers:
            self._facts = ServerFacts()
            return self._facts
        cached = facts_cache.load(cache_dir(), self._facts_key)
        if cached is not None:  # stated within the last few minutes: not asked again
            self._facts = cached
            return cached
        root, model = server_root(self.endpoint), self.settings.model
        # In order of trust: llama.cpp's running window, LM Studio's loaded model and
        # its window, then the OpenAI listing (vLLM's max_model_len, the first id).
        probes = (
            (f"{root}/props", server_facts.from_llamacpp_props),
            (f"{root}/api/v0/models", lambda body: server_facts.from_lmstudio_models(body, model)),
            ("/models", lambda body: server_facts.from_models_listing(body, model)),
        )
        tasks = [asyncio.ensure_future(self._get_json(path)) for path, _ in probes]
        done, pending = await asyncio.wait(tasks, timeout=DISCOVERY_TIMEOUT_SECS)
        for task in pending:  # a probe still waiting has nothing to say
            task.cancel()
        if pending:
            await asyncio.wait(pending)
        facts, answered = ServerFacts(), True
        for (_, read), task in zip(probes, tasks):
            reached, body = task.result() if task in done else (False, None)
            answered = answered and reached
            if body is not None:
                facts = facts.merged(read(body))
        self._facts = facts
        if answered:  # every probe had its lasting answer (not a server down, loading or busy): kept a while
            facts_cache.save(cache_dir(), self._facts_key, facts)
        return facts

    @property
    def _facts_key(self) -> str:
        return f"{self.kind} {self.endpoint} {self.settings.model}"

    def forget_facts(self) -> None:
        """What the server said is stale (its context-length error said otherwise): ask it again next time."""
        facts_cache.forget(cache_dir(), self._facts_key)

    async def _get_json(self, path: str) -> tuple[bool, Any]:
        """One GET through the SDK's client (its auth header included): whether the server answered for
        good (the JSON, or that it has no such endpoint), and the JSON it sent (None on any failure).
        A server still loading its model (llama.cpp's 503), refusing the key or busy has not answered."""
        client = self._sdk().with_options(timeout=DISCOVERY_TIMEOUT_SECS, max_retries=0)
        try:
            return True, await client.get(path, cast_to=object)
        except openai.APIStatusError as exc:
            return exc.status_code in NO_SUCH_ENDPOINT, None
        except Exception:  # noqa: BLE001 — a probe: whatever went wrong, the server simply did not say
            return False, None

    async def profile(self) -> ModelProfile:
        if self._profile is None:
            facts = await self.discover()
            self._profile = served_profile(self.model, facts.window, facts.source)
        return self._profile

    def _sdk(self) -> openai.AsyncOpenAI:
        if self._client is None:
            trust = trust_for(self.settings.base_url, httpx2.create_ssl_context)
            client_options: dict[str, Any] = {"verify": trust} if trust else {}
            self._client = openai.AsyncOpenAI(
                api_key=self.settings.api_key or "not-needed",
                base_url=self.settings.base_url,
                timeout=self.settings.timeout_secs,
                max_retries=self.settings.max_retries,
                http_client=openai.DefaultAsyncHttpxClient(event_hooks={"request": [tap_request]}, **client_options),
            )
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        # Current OpenAI (reasoning) models require max_completion_tokens;
        # most compatible servers only understand max_tokens.
        limit = "max_completion_tokens" if self.kind == "openai" else "max_tokens"
        params: dict[str, Any] = {
            "model": self.model,
            "messages": wire_messages(request.messages),
            limit: request.max_tokens,
        }
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if request.tools:
            params["tools"] = wire_tools(request.tools)
        return params

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        params = self._params(request)
        timeout = self.settings.timeout_secs
        started = False
        try:
            if not request.stream:
                with tapping(request.wire_tap):
                    reply = await answer_within(self._sdk().chat.completions.create(**params, stream=False), timeout)
                for event in self._reply_events(reply):
                    yield event
                return
            with tapping(request.wire_tap):
                stream = await answer_within(
                    self._sdk().chat.completions.create(**params, stream=True, stream_options={"include_usage": True}),
                    timeout,
                )
            await refuse_html_page(self.name, self.endpoint, stream.response)
            started = True
            finish: str | None = None
            chunks = 0
            async with stream:  # closes the HTTP response however the consumer leaves
                async for chunk in stream:
                    chunks += 1
                    for event in _chunk_events(chunk):
                        yield event
                    for choice in chunk.choices or ():
                        finish = choice.finish_reason or finish
            if finish is None:
                if chunks == 0:
                    # llama.cpp's servers answer a prompt too big for their window with
                    # 200 and an empty stream: the complaint only reaches their log (or
                    # an `error:` line SSE clients ignore). Asked without streaming,
                    # they say it in an error status.
                    await self._raise_why_stream_was_empty(params)
                raise errors.ProviderConnectionError(
                    f"{self.name} at {self.endpoint} ended the stream before the reply was complete "
                    "(no finish_reason received)",
                    provider=self.name,
                )
            yield StreamEnd(finish)
        except openai.APIStatusError as exc:
            raise self._api_error(exc, exc.status_code) from exc
        except (openai.APITimeoutError, TimeoutError) as exc:
            raise timeout_error(self.name, self.endpoint, timeout) from exc
        except openai.APIConnectionError as exc:
            reason = errors.reason_of(exc.__cause__) if exc.__cause__ is not None else exc.message
            if started:
                raise errors.ProviderConnectionError(
                    f"the connection to {self.name} at {self.endpoint} broke mid-reply: {reason}", provider=self.name
                ) from exc
            raise connection_error(self.name, self.endpoint, reason) from exc
        except openai.APIResponseValidationError as exc:
            raise self._bad_response(str(exc)) from exc
        except openai.APIError as exc:  # an error event inside the stream
            raise self._api_error(exc, None) from exc
        except openai.OpenAIError as exc:
            raise errors.ProviderError(f"{self.name}: {errors.reason_of(exc)}", provider=self.name) from exc
        except ValueError as exc:  # undecodable JSON in the body or an SSE event
            raise self._bad_response(f"undecodable JSON ({exc})") from exc

    async def _raise_why_stream_was_empty(self, params: dict[str, Any]) -> None:
        """Send the same request once more without streaming, asking for one token, and
        raise the context-length error the server states (or name the HTML page it sends);
        return if it states none."""
        probe = {**params, ("max_completion_tokens" if self.kind == "openai" else "max_tokens"): 1}
        # The server may have closed the connection the empty stream came on: retry once.
        client = self._sdk().with_options(max_retries=max(self.settings.max_retries, 1))
        try:
            reply = await client.chat.completions.create(**probe, stream=False)
        except openai.APIStatusError as exc:
            error = self._api_error(exc, exc.status_code)
            if isinstance(error, errors.ContextLengthExceeded):
                raise errors.ContextLengthExceeded(
                    f"{error} (the streamed reply ended empty; asked again without streaming, the server said so)",
                    provider=self.name,
                    status=error.status,
                    limit=error.limit,
                ) from exc
            return  # another complaint: it says nothing about the empty stream
        except (openai.OpenAIError, ValueError):
            return
        page = html_page_error(self.name, self.endpoint, reply) if isinstance(reply, str) else None
        if page is not None:  # served with a content type that hid it from the stream
            raise page

    def _reply_events(self, reply: object) -> list[StreamEvent]:
        page = html_page_error(self.name, self.endpoint, reply) if isinstance(reply, str) else None
        if page is not None:
            raise page
        if not isinstance(reply, ChatCompletion) or not reply.choices or reply.choices[0].message is None:
            raise self._bad_response(f"no choices in {str(reply)[:200]!r}")
        choice = reply.choices[0]
        message = choice.message
        events: list[StreamEvent] = []
        if message.content:
            events.append(TextDelta(message.content))
        for index, call in enumerate(message.tool_calls or ()):
            function = getattr(call, "function", None)
            if function is not None:
                events.append(ToolCallDelta(index, call.id, function.name, function.arguments or ""))
        if reply.usage is not None:
            events.append(UsageUpdate(_usage(reply.usage)))
        events.append(StreamEnd(choice.finish_reason or "stop"))
        return events

    def _api_error(self, exc: openai.APIError, status: int | None) -> errors.ProviderError:
        code = exc.code or ""  # OpenAI: "invalid_api_key"...; llama.cpp puts the HTTP status here
        error_type = code if code and not code.lstrip("-").isdigit() else (exc.type or "")
        return describe_status_error(
            provider=self.name,
            status=status,
            message=error_text(exc.body, exc.message),
            key_env=self.settings.api_key_env,
            url=self.endpoint,
            model=self.model,
            error_type=error_type,
            limit=_stated_window(exc.body),
        )

    def _bad_response(self, detail: str) -> errors.BadResponse:
        return errors.BadResponse(f"{self.name} at {self.endpoint} sent a reply zeph cannot use: {detail}", provider=self.name)
