"""Typed errors every layer raises and the CLI turns into one-line messages.

Invariant: each error's `str()` is a complete, user-facing sentence naming the
culprit (a config key, a file, a URL, an environment variable); `exit_code`
is what a command ending on it returns. Stdlib only.
"""

from __future__ import annotations

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


class NotFound(ZephError):
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
    pass


class ProviderTimeout(ProviderError):
    pass


class ModelNotFound(ProviderError):
    pass


class BadResponse(ProviderError):
    """The provider answered with something we cannot use."""


class ProviderUnavailable(ProviderError):
    """The provider cannot be used at all here (missing extra, missing model file)."""

    exit_code = 2


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
)
_CONTEXT_LENGTH_RE = re.compile("|".join(re.escape(p) for p in CONTEXT_LENGTH_PATTERNS), re.IGNORECASE)


def is_context_length_message(text: str) -> bool:
    """True when a provider's error text says the request did not fit the context window."""
    return bool(_CONTEXT_LENGTH_RE.search(text or ""))
