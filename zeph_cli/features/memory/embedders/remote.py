"""What the provider embedders share: the stored model name, the cut on input, one-line failures.

Invariant: a provider embedder's `model` is `<wire>/<model>@<host[:port]>`, so the
same model name served by two endpoints never shares vectors; every failure is an
`EmbeddingError` of one line naming the provider, the model, the endpoint and the
reason, with the API key (and anything shaped like one) removed. No SDK and no
numpy is imported here.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from .base import EmbeddingError

BATCH_SIZE = 64  # texts per request
# A text past this many characters is embedded by its beginning (hosted models take
# about 8k tokens: 8,000 characters fit but for unusual scripts, see SHORT_CHARS).
MAX_CHARS = 8000
# When the endpoint says a batch is too long for the model, it is sent once more
# with every text cut to this many characters.
SHORT_CHARS = 2000
REASON_CHARS = 300

_KEY_SHAPED = re.compile(r"\b(?:sk|key|api[_-]?key)-[A-Za-z0-9_\-\*\.]{3,}", re.IGNORECASE)


def endpoint_host(base_url: str) -> str:
    """`https://api.openai.com/v1` → `api.openai.com`; `http://127.0.0.1:11434` → `127.0.0.1:11434`."""
    parts = urlsplit(base_url if "://" in base_url else f"http://{base_url}")
    host = (parts.hostname or base_url).lower()
    return f"{host}:{parts.port}" if parts.port else host


def stored_model_name(wire: str, model: str, base_url: str) -> str:
    """The name stored with the vectors: which wire API, which model, which server."""
    return f"{wire}/{model}@{endpoint_host(base_url)}"


def scrubbed(text: str, api_key: str = "") -> str:
    """`text` on one line, without the API key or anything shaped like one, cut at REASON_CHARS."""
    if api_key:
        text = text.replace(api_key, "…")
    text = " ".join(_KEY_SHAPED.sub("…", text).split())
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


class Failure:
    """Builds the one-line `EmbeddingError`s of one embedder."""

    def __init__(self, provider: str, model: str, base_url: str, api_key: str = "", api_key_env: str = "") -> None:
        self.where = f"{provider} embeddings ({model} at {base_url})"
        self.model = model
        self.api_key = api_key
        self.api_key_env = api_key_env

    def __call__(self, reason: str) -> EmbeddingError:
        return EmbeddingError(f"{self.where}: {scrubbed(reason, self.api_key)}")

    def status(self, status: int | None, text: str, *, too_long: bool = False) -> EmbeddingError:
        """An HTTP error reply, said as what to do about it."""
        text = text or f"HTTP {status}"
        if too_long:
            return self(f"the input is too long for the model (HTTP {status}): {text}")
        if status in (401, 403):
            hint = f"; set {self.api_key_env} to a valid key" if self.api_key_env else ""
            return self(f"the API key was rejected (HTTP {status}): {text}{hint}")
        if status == 404 and "model" in text.lower():
            return self(f"model {self.model!r} not found (HTTP 404): {text}")
        if status == 404:
            return self(f"the server has no embeddings endpoint there (HTTP 404): {text}")
        return self(f"HTTP {status}: {text}")

    def timeout(self, seconds: float) -> EmbeddingError:
        return self(f"no answer within {seconds:g}s (llm.timeout_secs)")

    def unreachable(self, reason: str) -> EmbeddingError:
        return self(f"cannot connect: {reason}")

    def html_page(self) -> EmbeddingError:
        return self("an HTML page came instead of an API reply: check that base_url is the API's address")

    def bad_reply(self, detail: str) -> EmbeddingError:
        return self(f"a reply zeph cannot use: {detail}")
