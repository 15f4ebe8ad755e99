"""Conversations and their messages, with dual visibility (full-text search: `store.search`).

Invariant: messages are only ever appended or re-flagged, never rewritten or
dropped by anything but `delete_conversation`; readers choose what they see
through `agent_visible` / `user_visible`, so the user's scroll-back survives
whatever the agent's context loses. An agent-visible history read costs what it
returns: it seeks the visibility index and parses only rows its last read did not.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .sqlite import Database

from ..errors import NotFound, SessionBusy
from ..messages import Message, Role
from ..tokens import Calibration
from .transactions import write_transaction
from .turn_lock import TurnLock, lock_path

if TYPE_CHECKING:
    from .search import SearchHit  # `zeph sessions search` only

TITLE_LENGTH = 60
UNSENT_KEY = "unsent"  # message metadata: a prompt no reply answered, and why (hidden from the agent)
# Conversation metadata of a sub-agent's session: {"parent": the session that started it, "call_id": its task
# call there, "description", "mode", "depth"}. Such sessions are listed under their parent, not on their own.
SUBAGENT_KEY = "subagent"
_NOT_SUBAGENT = f"not (json_valid(c.metadata) and json_extract(c.metadata, '$.{SUBAGENT_KEY}') is not null)"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def make_title(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1].rstrip() + "…"


@dataclass(frozen=True)
class Conversation:
    """A stored session: its row, with its metadata parsed."""
    id: int
    title: str
    created_at: str
    updated_at: str
    provider: str
    model: str
    cwd: str
    metadata: dict[str, Any] = field(default_factory=dict)
    message_count: int = 0


@dataclass(frozen=True)
class StoredMessage:
    """A stored message with its id, time and visibility flags."""
    id: int
    conversation_id: int
    message: Message
    created_at: str
    agent_visible: bool = True
    user_visible: bool = True
    compacted_at: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    token_count: int | None = None
    token_counter: str | None = None

    @property
    def role(self) -> str:
        return self.message.role

    @property
    def partial(self) -> bool:
        return bool(self.metadata.get("partial"))


def _conversation(row: dict[str, Any]) -> Conversation:
    return Conversation(
        id=row["id"],
        title=row["title"] or "",
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        provider=row["provider"] or "",
        model=row["model"] or "",
        cwd=row["cwd"] or "",
        metadata=json.loads(row.get("metadata") or "{}"),
        message_count=row.get("message_count") or 0,
    )


# What a history read fetches, in this order; `content` only for rows that have no
# `parts` (stored before parts existed): the text is in `parts` otherwise.
_HISTORY_COLUMNS = (
    "id, conversation_id, role, parts, case when parts is null or parts = '' then content end, "
    "created_at, agent_visible, user_visible, compacted_at, metadata, token_count, token_counter"
)
# What a row's message was parsed from (role, parts, content), and the message.
_Parsed = tuple[str, str | None, str | None, Message]


def _parse(role: Role, parts: str | None, content: str | None) -> _Parsed:
    return (role, parts, content, Message.from_parts_json(role, parts, content or ""))


def _stored(row: tuple[Any, ...], parsed: _Parsed) -> StoredMessage:
    (message_id, conversation_id, _role, _parts, _content, created_at,
     agent_visible, user_visible, compacted_at, metadata, token_count, token_counter) = row  # fmt: skip
    return StoredMessage(
        id=message_id,
        conversation_id=conversation_id,
        message=parsed[3],
        created_at=created_at,
        agent_visible=bool(agent_visible),
        user_visible=bool(user_visible),
        compacted_at=compacted_at,
        metadata=json.loads(metadata or "{}"),
        token_count=token_count,
        token_counter=token_counter,
    )


_CONVERSATION_COLUMNS = (
    "c.id, c.title, c.created_at, c.updated_at, c.provider, c.model, c.cwd, c.metadata, "
    "(select count(*) from messages m where m.conversation_id = c.id and m.user_visible = 1) as message_count"
)


def message_record(
    conversation_id: int,
    message: Message,
    *,
    metadata: dict[str, Any],
    stamp: str,
    token_count: int | None = None,
    token_counter: str | None = None,
    agent_visible: bool = True,
    user_visible: bool = True,
    compacted_at: str | None = None,
    position: float | None = None,
) -> dict[str, Any]:
    """The `messages` row for one message, exactly as `insert_message` writes it."""
    record: dict[str, Any] = {
        "conversation_id": conversation_id,
        "role": message.role,
        "content": message.content,
        "parts": message.parts_json(),
        "created_at": stamp,
        "agent_visible": int(agent_visible),
        "user_visible": int(user_visible),
        "compacted_at": compacted_at,
        "metadata": json.dumps(metadata, ensure_ascii=False),
        "token_count": token_count,
        "token_counter": token_counter,
    }
    if position is not None:
        record["position"] = position
    return record


def insert_message(
    db: Database,
    conversation_id: int,
    message: Message,
    *,
    metadata: dict[str, Any],
    token_count: int | None = None,
    token_counter: str | None = None,
    agent_visible: bool = True,
    user_visible: bool = True,
    compacted_at: str | None = None,
    position: float | None = None,
    stamp: str | None = None,
) -> StoredMessage:
    """Insert one message row (inside the caller's transaction) and touch its conversation.

    `position` None = after everything (the row's id); compaction passes the
    position of the range a summary replaces.
    """
    stamp = stamp or now_iso()
    record = message_record(
        conversation_id,
        message,
        metadata=metadata,
        stamp=stamp,
        token_count=token_count,
        token_counter=token_counter,
        agent_visible=agent_visible,
        user_visible=user_visible,
        compacted_at=compacted_at,
        position=position,
    )
    message_id = db.insert("messages", record)
    db.execute("update conversations set updated_at = ? where id = ?", [stamp, conversation_id])
    return StoredMessage(
        id=message_id,
        conversation_id=conversation_id,
        message=message,
        created_at=stamp,
        agent_visible=agent_visible,
        user_visible=user_visible,
        compacted_at=compacted_at,
        metadata=metadata,
        token_count=token_count,
        token_counter=token_counter,
    )


class ConversationStore:
    """The one way the agent and the commands read and write conversations."""

    def __init__(self, db: Database) -> None:
        self.db = db
        # Each conversation's last agent-visible read, parsed, by message id.
        self._last_read: dict[int, dict[int, _Parsed]] = {}

    def close(self) -> None:
        self.db.close()

    # ---- conversations ------------------------------------------------------

    def create_conversation(
        self, *, provider: str, model: str, cwd: str, title: str = "", metadata: dict[str, Any] | None = None
    ) -> Conversation:
        stamp = now_iso()
        with write_transaction(self.db):
            conversation_id = self.db.insert(
                "conversations",
                {
                    "title": make_title(title) if title else "",
                    "created_at": stamp,
                    "updated_at": stamp,
                    "provider": provider,
                    "model": model,
                    "cwd": cwd,
                    "metadata": json.dumps(metadata or {}),
                }
            )
        return self.get_conversation(conversation_id)

    def get_conversation(self, conversation_id: int) -> Conversation:
        rows = list(
            self.db.query(f"select {_CONVERSATION_COLUMNS} from conversations c where c.id = ?", [conversation_id])
        )
        if not rows:
            raise NotFound(f"no session with id {conversation_id} (see `zeph sessions list`)")
        return _conversation(rows[0])

    def latest_conversation(self) -> Conversation | None:
        """The session updated last (a sub-agent's session is not one to continue)."""
        rows = list(
            self.db.query(
                f"select {_CONVERSATION_COLUMNS} from conversations c where {_NOT_SUBAGENT} "
                "order by c.updated_at desc, c.id desc limit 1"
            )
        )
        return _conversation(rows[0]) if rows else None

    def list_conversations(self, limit: int = 50, *, subagents: bool = False) -> list[Conversation]:
        """The sessions updated last; sub-agents' sessions only with `subagents` (they show under their parent)."""
        where = "" if subagents else f"where {_NOT_SUBAGENT} "
        sql = f"select {_CONVERSATION_COLUMNS} from conversations c {where}order by c.updated_at desc, c.id desc limit ?"
        return [_conversation(r) for r in self.db.query(sql, [limit])]

    def subagent_sessions(self, parent_id: int) -> list[Conversation]:
        """The sessions of the sub-agents session `parent_id` started, oldest first."""
        sql = (
            f"select {_CONVERSATION_COLUMNS} from conversations c where json_valid(c.metadata) "
            f"and json_extract(c.metadata, '$.{SUBAGENT_KEY}.parent') = ? order by c.id"
        )
        return [_conversation(r) for r in self.db.query(sql, [parent_id])]

    def update_conversation(self, conversation_id: int, **fields: Any) -> None:
        if "metadata" in fields:
            fields["metadata"] = json.dumps(fields["metadata"])
        fields["updated_at"] = now_iso()
        with write_transaction(self.db):
            if not self.db.update("conversations", conversation_id, fields):
                raise NotFound(f"no session with id {conversation_id} (see `zeph sessions list`)")

    def set_metadata(self, conversation_id: int, key: str, value: object | None) -> Conversation:
        """Set metadata `key` of a stored session (None removes it), starting from its metadata as stored, so
        what another part wrote meanwhile (the compaction guard, say) stays; the session as it now is."""
        with write_transaction(self.db):
            metadata = {k: v for k, v in self.get_conversation(conversation_id).metadata.items() if k != key}
            if value is not None:
                metadata[key] = value
            self.update_conversation(conversation_id, metadata=metadata)
            return self.get_conversation(conversation_id)

    def delete_conversation(self, conversation_id: int) -> int:
        """Delete a conversation and its messages; return how many messages went with it. Refused while a turn
        runs on it (`SessionBusy`): the lock is held through the deletion and its file removed with it."""
        self.get_conversation(conversation_id)
        lock = self.turn_lock(conversation_id)
        if not lock.try_acquire():
            raise SessionBusy(f"another zeph is running a turn on session {conversation_id}; "
                              "delete it when that turn has ended")
        try:
            count = self._delete_rows(conversation_id)
        except BaseException:
            lock.release()
            raise
        lock.remove()
        for child in self.subagent_sessions(conversation_id):  # its sub-agents' sessions go with it
            try:
                self.delete_conversation(child.id)
            except SessionBusy:
                pass  # a sub-agent still running (another zeph): its session stays
        return count

    def _delete_rows(self, conversation_id: int) -> int:
        with write_transaction(self.db):
            count = self.db.execute(
                "select count(*) from messages where conversation_id = ?", [conversation_id]
            ).fetchone()[0]
            for table in ("tool_runs", "tool_outputs", "messages"):
                self.db.execute(f"delete from {table} where conversation_id = ?", [conversation_id])
            self.db.execute("delete from conversations where id = ?", [conversation_id])
        self._last_read.pop(conversation_id, None)
        return count

    def turn_lock(self, conversation_id: int) -> TurnLock:
        """The lock that keeps the session's turns one at a time across processes (not taken yet)."""
        return TurnLock(lock_path(Path(self.db.path), conversation_id) if self.db.path else None)

    # ---- messages -----------------------------------------------------------

    def add_message(
        self,
        conversation_id: int,
        message: Message,
        *,
        token_count: int | None = None,
        token_counter: str | None = None,
        metadata: dict[str, Any] | None = None,
        agent_visible: bool = True,
        user_visible: bool = True,
    ) -> StoredMessage:
        with write_transaction(self.db):
            return insert_message(
                self.db,
                conversation_id,
                message,
                token_count=token_count,
                token_counter=token_counter,
                metadata=metadata or {},
                agent_visible=agent_visible,
                user_visible=user_visible,
            )

    def history(
        self, conversation_id: int, *, agent_visible: bool | None = None, user_visible: bool | None = None
    ) -> list[StoredMessage]:
        """Messages in order, filtered by visibility (None = either)."""
        where = ["conversation_id = ?"]
        args: list[Any] = [conversation_id]
        if agent_visible is not None:
            where.append("agent_visible = ?")
            args.append(int(agent_visible))
        if user_visible is not None:
            where.append("user_visible = ?")
            args.append(int(user_visible))
        sql = f"select {_HISTORY_COLUMNS} from messages where {' and '.join(where)} order by position, id"
        rows = self.db.execute(sql, args)
        if not agent_visible:
            return [_stored(row, _parse(*row[2:5])) for row in rows]
        return self._agent_history(conversation_id, rows)

    def _agent_history(self, conversation_id: int, rows: Iterable[tuple[Any, ...]]) -> list[StoredMessage]:
        """The agent reads its history every turn: parse only rows the last read did not return.

        A row is reused only when its stored text is unchanged (an id reused after
        a deletion is parsed afresh), and only what this read returns is kept, so
        memory follows what the agent sees. Reused messages are shared (immutable).
        """
        earlier = self._last_read.get(conversation_id, {})
        kept: dict[int, _Parsed] = {}
        history = []
        for row in rows:
            message_id, source = row[0], row[2:5]
            parsed = earlier.get(message_id)
            if parsed is None or parsed[:3] != source:
                parsed = _parse(*source)
            kept[message_id] = parsed
            history.append(_stored(row, parsed))
        self._last_read[conversation_id] = kept
        return history

    def withdraw_prompt(self, message_id: int, reason: str) -> None:
        """A prompt no reply answered: hidden from the agent (later turns do not send it again), kept in the
        user's scroll-back marked `unsent` with why."""
        with write_transaction(self.db):
            row = self.db.execute("select metadata from messages where id = ?", [message_id]).fetchone()
            if row is None:
                raise NotFound(f"no message with id {message_id}")
            metadata = {**json.loads(row[0] or "{}"), UNSENT_KEY: reason}
            self.db.execute("update messages set agent_visible = 0, metadata = ? where id = ?",
                            [json.dumps(metadata, ensure_ascii=False), message_id])

    def set_token_counts(self, counts: list[tuple[int, int, str]]) -> None:
        """Cache token counts: (message id, count, tokenizer name)."""
        if not counts:
            return
        with write_transaction(self.db):
            self.db.conn.executemany(
                "update messages set token_count = ?, token_counter = ? where id = ?",
                [(count, counter, mid) for mid, count, counter in counts],
            )

    def search(self, text: str, limit: int = 20) -> list["SearchHit"]:
        """Messages the user can see that match `text` (full-text), best first."""
        from .search import search_messages

        return search_messages(self.db, text, limit)

    # ---- token calibration ----------------------------------------------------

    def calibration(self, provider: str, model: str) -> Calibration:
        rows = list(
            self.db.query(
                "select factor, samples from token_calibration where provider = ? and model = ?", [provider, model]
            )
        )
        return Calibration(rows[0]["factor"], rows[0]["samples"]) if rows else Calibration()

    def save_calibration(self, provider: str, model: str, calibration: Calibration) -> None:
        with write_transaction(self.db):
            self.db.upsert(
                "token_calibration",
                {
                    "provider": provider,
                    "model": model,
                    "factor": calibration.factor,
                    "samples": calibration.samples,
                    "updated_at": now_iso(),
                },
                key=("provider", "model"),
            )
