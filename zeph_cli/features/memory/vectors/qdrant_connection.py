"""Reaching a qdrant server: a client with short timeouts, and an error chain said in one line.

Invariant: no request is made here; qdrant-client is imported only when a client is made; a failure is
`VectorIndexDown` naming the URL. Shared by recall's qdrant index and the code index's.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .base import VectorIndexDown

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

TIMEOUT_S = 2


def connect(url: str) -> QdrantClient:
    """A client for the server at `url` with short timeouts (no request is made here)."""
    try:
        from qdrant_client import QdrantClient
    except ImportError:
        raise VectorIndexDown(
            'vector_backend = "qdrant" needs qdrant-client: pip install "zeph-cli[qdrant]"'
        ) from None
    try:
        return QdrantClient(url=url, timeout=TIMEOUT_S, check_compatibility=False)
    except Exception as exc:  # noqa: BLE001 — a malformed URL
        raise VectorIndexDown(f"qdrant at {url} cannot be used: {reason(exc)}") from None


def reason(exc: BaseException) -> str:
    """The innermost, most specific words of an error chain, on one line."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    for candidate in reversed(seen):
        text = str(candidate).strip()
        if text:
            text = re.sub(r"\s+", " ", text)
            return re.sub(r"^\[Errno -?\d+\]\s*", "", text)[:200]
    return type(exc).__name__
