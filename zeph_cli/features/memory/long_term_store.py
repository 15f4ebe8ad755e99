"""Long-term memories on disk: facts saved by the user, the CLI or the model, with a scope.

Invariant: every stored memory is well formed — non-empty content, a known scope with
what that scope needs (a project root for `project`, a session for `session`), a
confidence in [0, 1] and a known source; editing the content drops its vector, so a
vector always belongs to the content beside it and names the model that made it.
What a place sees (`visible_for`) is user memories, that project's and that session's,
never archived ones.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from dataclasses import dataclass, field

from ...store.sqlite import Database

from ...errors import NotFound, UsageError
from ...store.conversations import now_iso
from ...store.transactions import write_transaction

SCOPES = ("user", "project", "session")
SOURCES = ("tool", "user", "cli")

_COLUMNS = (
    "id, content, scope, project_root, conversation_id, confidence, source, created_at, updated_at, archived, "
    "embedding_model, vector"
)


@dataclass(frozen=True)
class Memory:
    """A saved memory and its scope."""
    id: int
    content: str
    scope: str  # user | project | session
    project_root: str | None  # set for scope = project
    conversation_id: int | None  # set for scope = session
    confidence: float
    source: str  # tool | user | cli
    created_at: str
    updated_at: str
    archived: bool
    embedding_model: str | None = None  # the model `vector` was made with; None = not embedded yet
    vector: bytes | None = field(default=None, repr=False)  # float32, L2-normalized

    def as_json(self) -> dict:
        """The memory as plain JSON values (no vector)."""
        return {
            "id": self.id, "content": self.content, "scope": self.scope, "project_root": self.project_root,
            "conversation_id": self.conversation_id, "confidence": self.confidence, "source": self.source,
            "created_at": self.created_at, "updated_at": self.updated_at, "archived": self.archived,
        }


def check_scope(scope: str) -> str:
    if scope not in SCOPES:
        raise UsageError(f"{scope!r} is not a memory scope: use user, project or session")
    return scope


def check_confidence(confidence: float) -> float:
    if not 0.0 <= confidence <= 1.0:
        raise UsageError(f"memory confidence must be between 0 and 1, not {confidence!r}")
    return float(confidence)


def check_content(content: str) -> str:
    text = content.strip()
    if not text:
        raise UsageError("a memory needs some text: it is empty")
    return text


def _memory(row: tuple) -> Memory:
    (id_, content, scope, root, conversation_id, confidence, source, created, updated, archived, model, vector) = row
    return Memory(id_, content, scope, root, conversation_id, confidence, source, created, updated, bool(archived),
                  model, vector)


class MemoryStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def add(
        self,
        content: str,
        *,
        scope: str,
        source: str,
        confidence: float = 1.0,
        project_root: str | None = None,
        conversation_id: int | None = None,
    ) -> Memory:
        text = check_content(content)
        check_scope(scope)
        check_confidence(confidence)
        if source not in SOURCES:
            raise ValueError(f"unknown memory source {source!r}")
        if scope == "project" and not project_root:
            raise UsageError("a project memory needs a project root")
        if scope == "session" and conversation_id is None:
            raise UsageError("a session memory needs a session")
        stamp = now_iso()
        with write_transaction(self.db):
            cursor = self.db.execute(
                "insert into memories (content, scope, project_root, conversation_id, confidence, source, "
                "created_at, updated_at, archived) values (?, ?, ?, ?, ?, ?, ?, ?, 0)",
                [text, scope, project_root if scope == "project" else None,
                 conversation_id if scope == "session" else None, float(confidence), source, stamp, stamp],
            )
        assert cursor.lastrowid is not None  # an insert's row
        return self.get(cursor.lastrowid)

    def get(self, memory_id: int) -> Memory:
        row = self.db.execute(f"select {_COLUMNS} from memories where id = ?", [memory_id]).fetchone()
        if row is None:
            raise NotFound(f"no memory with id {memory_id} (see `zeph memory list --all`)")
        return _memory(row)

    def list(
        self,
        scope: str | None = None,
        project_root: str | None = None,
        conversation_id: int | None = None,
        include_archived: bool = False,
    ) -> list[Memory]:
        """Memories matching every filter given, oldest first."""
        where: list[str] = []
        args: list[object] = []
        if scope is not None:
            where.append("scope = ?")
            args.append(check_scope(scope))
        if project_root is not None:
            where.append("project_root = ?")
            args.append(project_root)
        if conversation_id is not None:
            where.append("conversation_id = ?")
            args.append(conversation_id)
        if not include_archived:
            where.append("archived = 0")
        clause = f" where {' and '.join(where)}" if where else ""
        rows = self.db.execute(f"select {_COLUMNS} from memories{clause} order by id", args).fetchall()
        return [_memory(r) for r in rows]

    def visible_for(self, project_root: str | None, conversation_id: int | None) -> builtins.list[Memory]:
        """The un-archived memories seen here: every user memory, this project's and this session's."""
        rows = self.db.execute(
            f"select {_COLUMNS} from memories where archived = 0 and (scope = 'user' "
            "or (scope = 'project' and project_root = ?) or (scope = 'session' and conversation_id = ?)) "
            "order by id",
            [project_root, conversation_id],
        ).fetchall()
        return [_memory(r) for r in rows]

    def update(self, memory_id: int, *, content: str | None = None, confidence: float | None = None) -> Memory:
        """Change the content and/or confidence; a new content drops the vector made from the old one."""
        current = self.get(memory_id)
        text = check_content(content) if content is not None else current.content
        level = check_confidence(confidence) if confidence is not None else current.confidence
        if text == current.content and level == current.confidence:
            return current
        stale = text != current.content
        with write_transaction(self.db):
            self.db.execute(
                "update memories set content = ?, confidence = ?, updated_at = ?"
                + (", embedding_model = null, vector = null" if stale else "")
                + " where id = ?",
                [text, level, now_iso(), memory_id],
            )
        return self.get(memory_id)

    def archive(self, memory_id: int, archived: bool = True) -> Memory:
        """Archive (or restore) a memory: archived ones are kept but never injected or searched."""
        self.get(memory_id)
        with write_transaction(self.db):
            self.db.execute(
                "update memories set archived = ?, updated_at = ? where id = ?", [int(archived), now_iso(), memory_id]
            )
        return self.get(memory_id)

    def forget(self, memory_id: int) -> Memory:
        """Delete a memory for good; the memory as it was."""
        memory = self.get(memory_id)
        with write_transaction(self.db):
            self.db.execute("delete from memories where id = ?", [memory_id])
        return memory

    def set_vector(self, memory_id: int, model: str, vector: bytes) -> None:
        self.set_vectors(model, [(self.get(memory_id), vector)])

    def set_vectors(self, model: str, embedded: Iterable[tuple[Memory, bytes]]) -> None:
        """Store vectors made by `model`, each only while its memory still has the content it was made from."""
        with write_transaction(self.db):
            for memory, vector in embedded:
                self.db.execute(
                    "update memories set embedding_model = ?, vector = ? where id = ? and content = ?",
                    [model, vector, memory.id, memory.content],
                )
