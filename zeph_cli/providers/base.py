"""The one protocol every provider adapter implements, and shared error mapping.

Invariant: an adapter turns a `ChatRequest` into wire calls and wire replies into
`messages` stream events, nothing else; every failure leaves it as one of the
typed errors in `zeph_cli.errors`, with a message naming what to fix. A request's
`wire_tap` is told each chat request exactly as it goes out: the HTTP adapters' clients
carry `tap_request` as their request hook, which hands it the body the client is about
to send (never a header); a request without a tap costs that hook one lookup.
"""

from __future__ import annotations

import abc
import contextvars
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .. import errors
from ..messages import Message, StreamEvent, ToolSpec
from ..models import ModelProfile, profile_for
from ..tokens import TokenCounter
from ..waiting import within
from .server_facts import ServerFacts
from .settings import ProviderSettings

# Asking a server about itself must never hold up start-up: every probe
# together gets this long, and any failure just means "the server did not say".
DISCOVERY_TIMEOUT_SECS = 2.0


WireTap = Callable[[str, Any], None]  # (where to, the body) of a request as it goes out


@dataclass(frozen=True)
class ChatRequest:
    """One request to a provider: the messages, the tools offered and the reply's limits."""
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int = 4096
    temperature: float | None = None
    stream: bool = True
    # The window the caller budgets for; servers that size their context per
    # request (Ollama's num_ctx) are told it so the two agree.
    context_window: int | None = None
    # Told the request as it leaves (the debug dump): where to (`POST <url>`, or the embedded
    # model's call) and the body (the bytes sent over HTTP, the arguments handed to llama.cpp).
    wire_tap: WireTap | None = field(default=None, compare=False, repr=False)


_tap: contextvars.ContextVar[WireTap | None] = contextvars.ContextVar("zeph_wire_tap", default=None)


@contextmanager
def tapping(tap: WireTap | None) -> Iterator[None]:
    """Within it, what this task's HTTP client sends is handed to `tap` (by `tap_request`).
    Wrap only the awaits that open a chat request: never a `yield`."""
    if tap is None:
        yield
        return
    token = _tap.set(tap)
    try:
        yield
    finally:
        _tap.reset(token)


async def tap_request(request: Any) -> None:
    """The request hook of every adapter's HTTP client: a request sent within `tapping` goes to its
    tap as `METHOD url` and the body bytes (a retry or a redirect sends it again)."""
    tap = _tap.get()
    if tap is not None:
        tap(f"{request.method} {request.url}", request.content)


class Provider(abc.ABC):
    """A model behind one wire API."""

    kind: str = ""
    supports_tools: bool = True

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings

    @property
    def name(self) -> str:
        return self.settings.name

    @property
    def model(self) -> str:
        return self.settings.model

    @property
    def endpoint(self) -> str:
        return self.settings.base_url

    @abc.abstractmethod
    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Yield text/tool-call deltas, usage and a final `StreamEnd`.

        With `request.stream = False` the adapter makes one non-streaming wire
        call and yields the same events from the complete reply.
        """

    async def discover(self) -> ServerFacts:
        """What the server says about itself (window, served model id), asked
        within DISCOVERY_TIMEOUT_SECS; empty facts when it says nothing, when it
        cannot be asked, or for hosted APIs whose windows the model table knows."""
        return ServerFacts()

    def forget_facts(self) -> None:
        """Drop what the server said about itself that was kept across runs (none by default)."""
        return None

    async def profile(self) -> ModelProfile:
        """Context window and output limit: the server's own word where the
        adapter can ask for it, else the model table (`window_source` says which)."""
        return profile_for(self.model)

    def token_counter(self) -> TokenCounter | None:
        """The model's own tokenizer when the adapter has one; None = the default."""
        return None

    async def aclose(self) -> None:
        return None


def describe_status_error(
    *,
    provider: str,
    status: int | None,
    message: str,
    key_env: str = "",
    url: str = "",
    model: str = "",
    error_type: str = "",
    limit: int | None = None,
) -> errors.ProviderError:
    """Map an HTTP error reply to the typed error a user can act on.

    A context-length error carries the window as `limit`: the one given (read
    from the error body by the adapter), else the one its message states.
    """
    text = one_line_reason(message) or f"HTTP {status}"
    kind = (error_type or "").lower()
    if errors.is_context_length_message(text) or kind in ("context_length_exceeded", "exceed_context_size_error"):
        return errors.ContextLengthExceeded(
            f"{provider}: the request does not fit the model's context window: {text}",
            provider=provider,
            status=status,
            limit=limit or errors.context_limit_from_message(text),
        )
    if status in (401, 403) or kind in ("authentication_error", "permission_error", "invalid_api_key"):
        hint = f" Set {key_env} to a valid key." if key_env else ""
        return errors.AuthenticationError(
            f"{provider} rejected the credentials (HTTP {status}): {text}.{hint}", provider=provider, status=status
        )
    if status == 429 or kind in ("rate_limit_error", "rate_limit_exceeded"):
        return errors.RateLimitError(
            f"{provider} rate limit reached (HTTP 429), retries exhausted: {text}", provider=provider, status=status
        )
    if status in (503, 529) or kind == "overloaded_error":
        return errors.OverloadedError(
            f"{provider} is overloaded (HTTP {status}), retries exhausted: {text}", provider=provider, status=status
        )
    if status == 404 and ("model" in text.lower() or kind == "not_found_error"):
        return errors.ModelNotFound(
            f"{provider}: model {model!r} not found: {text}", provider=provider, status=status
        )
    where = f" at {url}" if url else ""
    return errors.ProviderError(f"{provider} error (HTTP {status}){where}: {text}", provider=provider, status=status)


_TAG = re.compile(r"<(script|style)\b.*?</\1>|<[^>]+>", re.IGNORECASE | re.DOTALL)
REASON_CHARS = 300


def one_line_reason(body: str) -> str:
    """An error body as one line: an HTML error page reduced to its text (title first), whitespace
    collapsed, cut at REASON_CHARS."""
    text = (body or "").strip()
    if _HTML_START.match(text):
        inside = re.search(r"<body[^>]*>(.*)", text, re.IGNORECASE | re.DOTALL)
        text = _TAG.sub(" ", inside.group(1) if inside else text)
    text = " ".join(text.split())
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


def connection_error(provider: str, url: str, reason: str) -> errors.ProviderConnectionError:
    return errors.ProviderConnectionError(
        f"cannot connect to {provider} at {url}: {reason}", provider=provider
    )


T = TypeVar("T")


async def answer_within(opening: Awaitable[T], timeout: float) -> T:
    """`opening` (a request up to its answer, the SDK's own retries included) given `timeout`
    seconds in all; past it, `TimeoutError`. The SDKs retry a timed-out attempt, which would
    turn one `llm.timeout_secs` of silence into (1 + max_retries) of them."""
    return await within(opening, timeout)


def timeout_error(provider: str, url: str, timeout: float) -> errors.ProviderTimeout:
    return errors.ProviderTimeout(
        f"{provider} at {url} sent nothing for {timeout:g}s, so zeph gave up waiting "
        "(llm.timeout_secs: raise it or ZEPH_LLM_TIMEOUT_SECS)",
        provider=provider,
    )


_HTML_START = re.compile(r"\s*(<!doctype html|<html)", re.IGNORECASE)
_HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def html_page_error(provider: str, url: str, body: str, content_type: str = "") -> errors.BadResponse | None:
    """A `BadResponse` naming the HTML page that came where an API reply should (a login or proxy
    page, a web UI at base_url), or None when `body` is not one."""
    if "text/html" not in content_type.lower() and not _HTML_START.match(body or ""):
        return None
    title = _HTML_TITLE.search(body or "")
    named = " ".join(title.group(1).split())[:80] if title else ""
    page = f"an HTML page ({named!r})" if named else "an HTML page"
    return errors.BadResponse(
        f"{provider} at {url} sent {page}, not an API reply: check that base_url is the API's address "
        "and that no proxy or login page is in the way",
        provider=provider,
    )


async def refuse_html_page(provider: str, url: str, response: Any) -> None:
    """Raise `html_page_error` when a streamed reply's `httpx.Response` is an HTML page (read whole)."""
    content_type = response.headers.get("content-type", "")
    if "html" in content_type.lower():
        body = (await response.aread()).decode("utf-8", "replace")
        error = html_page_error(provider, url, body, content_type)
        if error is not None:
            raise error
