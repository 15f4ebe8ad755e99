"""Sessions imported from another tool's history, written as zeph's own (`zeph sessions import`).

Invariant: an imported session is written in one transaction — all of its new
messages or none — so an interrupted import leaves whole sessions only, and
running it again resumes. Importing is idempotent: a session is known again by
its source and key (`conversations.metadata.imported`), a message by its import
key (the source's id, or its position in the session and a hash of its text),
and what is already stored is never written twice — also when imports run at
once: the session is looked up, and its stored messages read, under the write
lock the transaction takes first (BEGIN IMMEDIATE), so of two imports of the same
session one writes it and the other finds it written; a unique index on the
source and key (migration m015) holds the schema to it. Messages keep the source's
time as `created_at` (UTC, the store's format; one without a time takes the time of
the message before it) and are appended in the source's order, so `position` (= id) gives the source's order; the session's
`created_at`/`updated_at` are its first and last message's times.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..messages import Message
from .conversations import make_title, message_record, now_iso
from .sqlite import Database
from .transactions import write_transaction

IMPORTED_KEY = "imported"  # conversation metadata: {"from": source, "session": the source's session key}
EXTERNAL_ID_KEY = "external_id"  # message metadata: the source's id of the message
IMPORT_KEY = "import_key"  # message metadata, for a message the source gave no id: "<position>:<text hash>"


@dataclass(frozen=True)
class ImportedMessage:
    """One message to import: `created_at` in the store's format (None: the time of the import)."""

    role: str  # user | assistant
    text: str
    created_at: str | None = None
    external_id: str | None = None
    position: int = 0  # its place among the source session's messages (for a message without an id)

    @property
    def key(self) -> str:
        """What tells this message apart within its session on a later import."""
        if self.external_id is not None:
            return f"id:{self.external_id}"
        digest = hashlib.sha256(f"{self.role}\0{self.text}".encode()).hexdigest()[:16]
        return f"{self.position}:{digest}"


@dataclass
class ImportedSession:
    """A session of the source: its key there, title, model and messages in order."""

    source: str  # jsonl | llm
    key: str
    title: str = ""
    model: str = ""
    messages: list[ImportedMessage] = field(default_factory=list)


@dataclass(frozen=True)
class SessionWritten:
    """What importing one session did."""

    conversation_id: int
    added: int  # messages written now
    already: int  # messages a previous import wrote
    created: bool  # a new session (False: one imported before, continued)


def imported_sessions(db: Database, source: str) -> dict[str, int]:
    """The sessions imported before from `source`: their key there -> conversation id."""
    rows = db.execute(
        f"select id, json_extract(metadata, '$.{IMPORTED_KEY}.session') from conversations "
        f"where json_extract(metadata, '$.{IMPORTED_KEY}.from') = ? "
        f"and json_extract(metadata, '$.{IMPORTED_KEY}.session') is not null",  # as the index is (m015)
        [source],
    )
    return {str(key): conversation_id for conversation_id, key in rows if key is not None}


def imported_session(db: Database, source: str, key: str) -> int | None:
    """The conversation imported before as `source`'s session `key` (found by its unique index)."""
    row = db.execute(
        f"select min(id) from conversations where json_extract(metadata, '$.{IMPORTED_KEY}.from') = ? "
        f"and json_extract(metadata, '$.{IMPORTED_KEY}.session') = ?",
        [source, key],
    ).fetchone()
    return row[0] if row else None


def _stored_keys(db: Database, conversation_id: int) -> set[str]:
    rows = db.execute(
        f"select json_extract(metadata, '$.{EXTERNAL_ID_KEY}'), json_extract(metadata, '$.{IMPORT_KEY}') "
        "from messages where conversation_id = ?",
        [conversation_id],
    )
    keys: set[str] = set()
    for external_id, import_key in rows:
        if external_id is not None:
            keys.add(f"id:{external_id}")
        if import_key is not None:
            keys.add(str(import_key))
    return keys


def pending(db: Database, session: ImportedSession, conversation_id: int | None) -> list[ImportedMessage]:
    """`session`'s messages that are not stored yet (in `conversation_id`, the session imported before, if
    any), in order; a message whose key repeats within the source counts once."""
    seen = set() if conversation_id is None else _stored_keys(db, conversation_id)
    fresh: list[ImportedMessage] = []
    for message in session.messages:
        if message.key not in seen:
            seen.add(message.key)
            fresh.append(message)
    return fresh


def write_session(db: Database, session: ImportedSession) -> SessionWritten:
    """Write `session`'s messages that are not stored yet, in one transaction: into the session imported
    before from the same source and key, or a new session. Looked up inside the transaction, so an
    import running at the same time cannot write the session in between."""
    stamp = now_iso()
    with write_transaction(db):
        conversation_id = imported_session(db, session.source, session.key)
        fresh = pending(db, session, conversation_id)
        already = len(session.messages) - len(fresh)
        if not fresh:
            return SessionWritten(conversation_id or 0, 0, already, False)
        created = conversation_id is None
        times = _times(fresh, stamp)
        if conversation_id is None:
            conversation_id = db.insert("conversations", {
                "title": make_title(session.title or _first_user_text(fresh)),
                "created_at": min(times),
                "updated_at": max(times),
                "provider": session.source,
                "model": session.model,
                "cwd": "",
                "metadata": json.dumps({IMPORTED_KEY: {"from": session.source, "session": session.key}},
                                       ensure_ascii=False),
            })
        rows = [_record(conversation_id, message, at) for message, at in zip(fresh, times)]
        columns = list(rows[0])
        db.conn.executemany(
            f"insert into messages ({', '.join(columns)}) values ({', '.join('?' * len(columns))})",
            [[row[c] for c in columns] for row in rows],
        )
        db.execute(
            "update conversations set updated_at = max(updated_at, ?) where id = ?", [max(times), conversation_id]
        )
    return SessionWritten(conversation_id, len(fresh), already, created)


def _times(messages: Sequence[ImportedMessage], stamp: str) -> list[str]:
    """Each message's time: its own, else the one before it has (the first known one for those before
    it), else `stamp` when the source gave none."""
    last = next((m.created_at for m in messages if m.created_at), stamp)
    times = []
    for message in messages:
        last = message.created_at or last
        times.append(last)
    return times


def _first_user_text(messages: Sequence[ImportedMessage]) -> str:
    return next((m.text for m in messages if m.role == "user"), messages[0].text if messages else "")


def _record(conversation_id: int, message: ImportedMessage, at: str) -> dict:
    metadata: dict[str, str] = {}
    if message.external_id is not None:
        metadata[EXTERNAL_ID_KEY] = message.external_id
    else:
        metadata[IMPORT_KEY] = message.key
    return message_record(conversation_id, Message.text(message.role, message.text), metadata=metadata, stamp=at)  # type: ignore[arg-type]


def external_ids(db: Database, message_ids: Sequence[int]) -> dict[int, str]:
    """The source's id of each of `message_ids` that was imported with one."""
    if not message_ids:
        return {}
    marks = ",".join("?" * len(message_ids))
    rows = db.execute(
        f"select id, json_extract(metadata, '$.{EXTERNAL_ID_KEY}') from messages where id in ({marks})",
        list(message_ids),
    )
    return {message_id: str(value) for message_id, value in rows if value is not None}
