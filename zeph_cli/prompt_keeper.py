"""Keeping the typed prompt of a `zeph ask` that could not start or store its turn.

Invariant: the prompt ends up somewhere the user is told about — a session in
the database when the store takes it, else a new file under the data
directory's `unsaved-prompts/` (never overwriting another) — and the returned
sentence says where; only when both fail does it say the prompt was lost.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

from .errors import StoreError
from .messages import Message
from .store import Conversation, ConversationStore

RESCUE_DIR_NAME = "unsaved-prompts"


def keep_prompt(
    store: ConversationStore,
    conversation: Conversation | None,
    text: str,
    *,
    provider: str,
    model: str,
    cwd: str,
    system: str | None,
    data_dir: Path,
) -> str:
    """Store `text` as a user message (in `conversation`, else a new session); say where it is kept."""
    try:
        if conversation is None:
            metadata = {"system": system} if system else {}
            conversation = store.create_conversation(provider=provider, model=model, cwd=cwd, title=text, metadata=metadata)
        store.add_message(conversation.id, Message.user(text))
    except StoreError:
        return rescue_prompt(text, data_dir)
    return f"your prompt is saved in session {conversation.id}: zeph sessions show {conversation.id}"


def rescue_prompt(text: str, data_dir: Path) -> str:
    """Write `text` to a new file under `data_dir/unsaved-prompts/`; say where (or that it could not)."""
    folder = data_dir / RESCUE_DIR_NAME
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for attempt in range(1000):
            path = folder / (f"{stamp}.txt" if attempt == 0 else f"{stamp}-{attempt}.txt")
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                continue
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text if text.endswith("\n") else text + "\n")
            return f"your prompt is not in the database; it is kept in {path}"
    except OSError as exc:
        return f"your prompt could not be kept ({folder}: {exc.strerror or exc})"
    return f"your prompt could not be kept ({folder} has no free file name)"
