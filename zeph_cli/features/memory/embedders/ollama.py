"""Embeddings from Ollama: `/api/embed` through the official SDK's sync client.

Invariant: every request is one `Client.embed` call with `truncate` on (Ollama cuts an
input longer than the model's window itself), retried here on 429/503 up to
`llm.max_retries` times (the SDK has no retries); rows come back in input order,
unit length; every failure leaves as a one-line `EmbeddingError` (see `remote`),
never as an SDK or httpx exception.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import httpx
import ollama

from .... import errors
from .client import RemoteEmbedder
from .remote import BATCH_SIZE, MAX_CHARS

if TYPE_CHECKING:
    from ....providers.base import ProviderSettings

RETRY_STATUSES = (429, 503)


class OllamaEmbedder(RemoteEmbedder):
    """`embedding_model` on the Ollama server at `settings.base_url`."""

    wire = "ollama"
    retry_base_delay = 0.5  # seconds, doubled per attempt

    def __init__(
        self,
        settings: ProviderSettings,
        embedding_model: str,
        *,
        batch_size: int = BATCH_SIZE,
        max_chars: int = MAX_CHARS,
        retry_base_delay: float | None = None,
    ) -> None:
        super().__init__(settings, embedding_model, batch_size=batch_size, max_chars=max_chars)
        if retry_base_delay is not None:
            self.retry_base_delay = retry_base_delay

    def _make_client(self) -> ollama.Client:
        headers = {"Authorization": f"Bearer {self.settings.api_key}"} if self.settings.api_key else None
        return ollama.Client(host=self.settings.base_url, timeout=self.settings.timeout_secs, headers=headers)

    def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        attempt = 0
        while True:
            try:
                reply = self._sdk().embed(model=self.embedding_model, input=batch, truncate=True)
                break
            except ollama.ResponseError as exc:
                if exc.status_code in RETRY_STATUSES and attempt < self.settings.max_retries:
                    time.sleep(min(self.retry_base_delay * 2**attempt, 30.0))
                    attempt += 1
                    continue
                text = exc.error or ""
                raise self._fail.status(exc.status_code, text, too_long=errors.is_context_length_message(text)) from None
            except httpx.TimeoutException:
                raise self._fail.timeout(self.settings.timeout_secs) from None
            except (ConnectionError, httpx.TransportError) as exc:
                raise self._fail.unreachable(errors.reason_of(exc)) from None
            except (ollama.RequestError, httpx.HTTPError, ValueError, TypeError, AttributeError) as exc:
                raise self._fail.bad_reply(errors.reason_of(exc)) from None
        embeddings = getattr(reply, "embeddings", None)
        if not isinstance(embeddings, list):
            raise self._fail.bad_reply(f"no embeddings in {str(reply)[:200]!r}")
        return [list(vector) for vector in embeddings]
