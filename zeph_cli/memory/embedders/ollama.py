"""Embeddings from Ollama: `/api/embed` through the official SDK's sync client.

Invariant: every request is one `Client.embed` call with `truncate` on (Ollama cuts an
input longer than the model's window itself), retried here on 429/503 up to
`llm.max_retries` times (the SDK has no retries); rows come back in input order,
unit length; every failure leaves as a one-line `EmbeddingError` (see `remote`),
never as an SDK or httpx exception.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

import httpx
import ollama

from ... import errors
from .remote import BATCH_SIZE, MAX_CHARS, Failure, stored_model_name
from .rows import embed_in_batches

if TYPE_CHECKING:
    import numpy as np

    from ...providers.base import ProviderSettings

RETRY_STATUSES = (429, 503)


class OllamaEmbedder:
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
        self.settings = settings
        self.embedding_model = embedding_model
        self.model = stored_model_name(self.wire, embedding_model, settings.base_url)
        self.batch_size = batch_size
        self.max_chars = max_chars
        self.dimensions = 0  # known after the first reply
        if retry_base_delay is not None:
            self.retry_base_delay = retry_base_delay
        self._fail = Failure(settings.name, embedding_model, settings.base_url, settings.api_key, settings.api_key_env)
        self._client: ollama.Client | None = None
        self._lock = threading.Lock()

    def _sdk(self) -> ollama.Client:
        with self._lock:
            if self._client is None:
                headers = {"Authorization": f"Bearer {self.settings.api_key}"} if self.settings.api_key else None
                self._client = ollama.Client(host=self.settings.base_url, timeout=self.settings.timeout_secs, headers=headers)
            return self._client

    def load(self) -> None:
        """Make the client now (nothing is sent), as the embedded embedder loads its model."""
        self._sdk()

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = embed_in_batches(
            texts,
            self._embed_batch,
            batch_size=self.batch_size,
            max_chars=self.max_chars,
            bad_reply=self._fail.bad_reply,
            dimensions=self.dimensions,
        )
        self.dimensions = self.dimensions or (rows.shape[1] if texts else 0)
        return rows

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
