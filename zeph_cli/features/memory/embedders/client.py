"""What the endpoint embedders (OpenAI-compatible, Ollama) share: settings, a lazily made client, batching.

Invariant: the SDK client is made once, under a lock, on first use (or `load()`);
`embed` always returns unit rows in input order, batched and cut as `rows`
does, and learns the model's dimensions from its first reply. Subclasses only
make their client and embed one batch.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from .remote import BATCH_SIZE, MAX_CHARS, Failure, stored_model_name
from .rows import embed_in_batches

if TYPE_CHECKING:
    import numpy as np

    from ....providers.base import ProviderSettings


class RemoteEmbedder:
    wire = ""

    def __init__(
        self, settings: ProviderSettings, embedding_model: str, *, batch_size: int = BATCH_SIZE, max_chars: int = MAX_CHARS
    ) -> None:
        self.settings = settings
        self.embedding_model = embedding_model
        self.model = stored_model_name(self.wire, embedding_model, settings.base_url)
        self.batch_size = batch_size
        self.max_chars = max_chars
        self.dimensions = 0  # known after the first reply
        self._fail = Failure(settings.name, embedding_model, settings.base_url, settings.api_key, settings.api_key_env)
        self._client: Any = None
        self._lock = threading.Lock()

    def _make_client(self) -> Any:
        raise NotImplementedError

    def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        raise NotImplementedError

    def _sdk(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self._make_client()
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
