"""Helpers for the vector index tests: a real zeph database with messages, and unit vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from zeph_cli.features.memory.vectors import VectorRow
from zeph_cli.messages import Message, TextPart, ToolCallPart
from zeph_cli.store import ConversationStore, open_database


def open_store(path: Path) -> ConversationStore:
    return ConversationStore(open_database(path))


def add_conversation(store: ConversationStore, count: int, *, text: str = "message") -> tuple[int, list[int]]:
    """A conversation of `count` user messages with text; its id and the message ids."""
    conversation = store.create_conversation(provider="fake", model="fake-model", cwd="/tmp")
    ids = [store.add_message(conversation.id, text_message(f"{text} {i}")).id for i in range(count)]
    return conversation.id, ids


def text_message(text: str, role: str = "user") -> Message:
    return Message(role, (TextPart(text),))  # type: ignore[arg-type]


def tool_call_only() -> Message:
    return Message("assistant", (ToolCallPart("call_1", "read_file", {"path": "a.txt"}),))


def unit_vectors(count: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def rows_for(conversation_id: int, ids: list[int], vectors: np.ndarray) -> list[VectorRow]:
    return [VectorRow(message_id, conversation_id, vectors[i]) for i, message_id in enumerate(ids)]


def brute_force(ids: list[int], vectors: np.ndarray, query: np.ndarray, limit: int) -> list[int]:
    """The `limit` nearest ids by cosine, computed the plain way."""
    q = query / np.linalg.norm(query)
    scores = [(float(np.dot(v, q)), i) for i, v in zip(ids, vectors)]
    return [i for _, i in sorted(scores, key=lambda s: -s[0])[:limit]]
