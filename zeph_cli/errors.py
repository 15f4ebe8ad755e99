"""Typed errors every layer raises and the CLI turns into one-line messages.

Invariant: each error's `str()` is a complete, user-facing sentence naming the
culprit (a config key, a file, a URL, an environment variable); `exit_code`
is what a command ending on it returns. Stdlib only.
"""

from __future__ import annotations

import functools
import re


class ZephError(Exception):
    exit_code = 1


class UsageError(ZephError):
    """Bad command-line arguments or standard input."""

    exit_code = 2


class ConfigError(ZephError):
    exit_code = 2


class StoreError(ZephError):
    exit_code = 1


class ReplyNotStored(StoreError):
    """A reply that arrived (and was shown) but could not be written; `text` is what it said."""

    def __init__(self, message: str, text: str) -> None:
        super().__init__(message)
        self.text = text


class NotFound(ZephError):
    exit_code = 1


class SessionBusy(ZephError):
    """Another zeph runs a turn on the session, and what was asked cannot wait for it."""

    exit_code = 1


class ContextBudgetExceeded(ZephError):
    """A request would leave above the context budget and nothing more can be dropped."""


class ProviderError(ZephError):
    """Anything that went wrong talking to a model provider."""

    exit_code = 1

    def __init__(self, message: str, *, provider: str = "", status: int | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.status = status


class AuthenticationError(ProviderError):
    pass


class ProviderConnectionError(ProviderError):
    pass


class RateLimitError(ProviderError):
    pass


class OverloadedError(ProviderError):
    pass


class ContextLengthExceeded(ProviderError):
    """The request did not fit the model's context window.

    `limit` is the window the provider stated (tokens), when its message or
    error body said so; None when it did not.
    """

    def __init__(
        self, message: str, *, provider: str = "", status: int | None = None, limit: int | None = None
    ) -> None:
        super().__init__(message, provider=provider, status=status)
        self.limit = limit


class ProviderTimeout(ProviderError):
    pass


class ModelNotFound(ProviderError):
    pass


class BadResponse(ProviderError):
    """The provider answered with something we cannot use."""


class ProviderUnavailable(ProviderError):
    """The provider cannot be used at all here (missing extra, missing model file)."""

    exit_code = 2


# What a failure means when its exception says nothing at all: httpx's ReadError on a
# reset connection, and the anyio errors under it, have empty messages.
_SILENT_FAILURES = {
    "ReadError": "the connection was reset or closed while the reply was being read",
    "WriteError": "the connection was reset or closed while the request was being sent",
    "RemoteProtocolError": "the server closed the connection in the middle of a message",
    "BrokenResourceError": "the connection was reset",
    "ClosedResourceError": "the connection was closed",
    "EndOfStream": "the connection was closed",
}


def reason_of(exc: BaseException) -> str:
    """What `exc` (or an exception under it) says; when none says anything, what its type
    means — a message never ends in an empty reason."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 8:
        text = str(current).strip()
        if text:
            return text
        seen.append(current)
        current = current.__cause__ or current.__context__
    for failure in seen:
        meaning = _SILENT_FAILURES.get(type(failure).__name__)
        if meaning:
            return f"{meaning} ({type(failure).__name__})"
    return f"{type(exc).__name__}, with no details given"


# Context-length patterns from the spec (Claude, OpenAI, Ollama), plus the wordings
# the providers use today, matched case-insensitively against error messages.
CONTEXT_LENGTH_PATTERNS: tuple[str, ...] = (
    "maximum number of tokens",
    "maximum context length",
    "context_length_exceeded",
    "context length exceeded",
    "prompt is too long",
    "input too long",
    "exceeds the context window",
    "exceed context limit",
    "exceeds the available context size",
    "requested tokens",
    "exceeds the context length",
    "longer than the context length",
    "exceed context window",  # llama-cpp-python: "Requested tokens (N) exceed context window of M"
    "context length of only",  # LM Studio: "...loaded with context length of only 4096 tokens"
    "when context the overflows",  # LM Studio: "Trying to keep the first N tokens when context the overflows"
    "maximum model length",  # vLLM: "The decoder prompt (length N) is longer than the maximum model length of M"
    "exceed_context_size_error",  # llama.cpp server's error type
)


@functools.cache
def _context_length_re() -> re.Pattern[str]:  # compiled when an error is read, not by every start-up
    return re.compile("|".join(re.escape(p) for p in CONTEXT_LENGTH_PATTERNS), re.IGNORECASE)


def is_context_length_message(text: str) -> bool:
    """True when a provider's error text says the request did not fit the context window."""
    return bool(_context_length_re().search(text or ""))


# The window a context-length error states, per wording: {L} marks the limit,
# {N} any other number. A request size is never read as the limit
# ("210000 tokens > 200000 maximum" is 200000).
_NUMBER = r"\d{1,3}(?:,\d{3})+|\d+"
_LIMIT_WORDINGS = (
    # OpenAI, vLLM, llama-cpp-python's server, OpenRouter ("This endpoint's ..."):
    # "This model's maximum context length is 3000 tokens. However, you requested 3100 tokens ..."
    r"maximum context length is {L} tokens",
    # llama-cpp-python's own text: "Requested tokens (2195) exceed context window of 2048"
    r"exceeds? (?:the )?context window of {L}",
    # llama.cpp server: "request (5000 tokens) exceeds the available context size (4096 tokens)"
    r"available context size \({L} tokens?\)",
    # Anthropic: "prompt is too long: 210000 tokens > 200000 maximum"
    r"tokens? > {L} maximum",
    # Anthropic: "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000"
    r"exceed context limit: {N} \+ {N} > {L}",
    # LM Studio: "... However, the model is loaded with context length of only 4096 tokens"
    r"context length of only {L} tokens?",
    # vLLM: "The decoder prompt (length 9000) is longer than the maximum model length of 8192"
    r"maximum model length of {L}",
    # vLLM: "Input prompt (9000 tokens) is too long and exceeds limit of 8192"
    r"too long and exceeds limit of {L}",
    # Mistral: "Prompt contains 40000 tokens ..., too large for model with 32768 maximum context length"
    r"model with {L} maximum context length",
    # Gemini: "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)"
    r"maximum number of tokens allowed \({L}\)",
    # llama.cpp's error object, also inside Ollama's error string: "n_ctx":4096 or \"n_ctx\":4096
    r"\\?\"n_ctx\\?\"\s*:\s*{L}",
)


@functools.cache
def _limit_patterns() -> tuple[re.Pattern[str], ...]:
    return tuple(
        re.compile(w.replace("{L}", f"(?P<limit>{_NUMBER})").replace("{N}", f"(?:{_NUMBER})"), re.IGNORECASE)
        for w in _LIMIT_WORDINGS
    )


def context_limit_from_message(text: str) -> int | None:
    """The context window (tokens) a provider's context-length error states, or None.

    Only the limit is read, never the size of the request that overflowed it;
    a message that states no limit (llama.cpp's "the request exceeds the
    available context size, try increasing it") gives None.
    """
    for pattern in _limit_patterns():
        match = pattern.search(text or "")
        if match:
            value = int(match.group("limit").replace(",", ""))
            if value > 0:
                return value
    return None
