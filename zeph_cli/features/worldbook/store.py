"""Worldbook entries on disk (ETOS block 7), bound to a project (its workspace root) or to one session.

Invariant: every stored entry is well formed — non-empty content, a known position, a
depth only for `at_depth` (0 or more), non-empty keywords that compile when they are
regexes, and what its scope needs (a project root for `project`, an existing session for
`session`). Bad input raises `UsageError` naming the culprit and leaves the table as it was.
What a place sees (`in_force`) is the enabled entries of its project and of its session.
"""

from __future__ import annotations

import builtins
import json
import re
from dataclasses import dataclass, replace
from typing import Any

from ...store.sqlite import Database

from ...errors import NotFound, UsageError
from ...store.conversations import now_iso
from ...store.transactions import write_transaction

SCOPES = ("project", "session")
POSITIONS = ("before", "after", "an_top", "outlet", "an_bottom", "at_depth")
ISOLATED_KEY = "worldbook_isolated"  # conversation metadata: the session runs in worldbook isolation mode

_COLUMNS = (
    'id, scope, project_root, conversation_id, keywords, regex, case_sensitive, content, position, depth, "order", '
    "enabled, created_at, updated_at"
)


@dataclass(frozen=True)
class WorldbookRecord:
    """A stored worldbook entry."""
    id: int
    scope: str  # project | session
    project_root: str | None
    conversation_id: int | None
    keywords: tuple[str, ...]  # empty = constant (always on)
    regex: bool
    case_sensitive: bool
    content: str
    position: str
    depth: int
    order: int
    enabled: bool
    created_at: str
    updated_at: str

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "scope": self.scope, "project_root": self.project_root,
            "conversation_id": self.conversation_id, "keywords": list(self.keywords), "regex": self.regex,
            "case_sensitive": self.case_sensitive, "content": self.content, "position": self.position,
            "depth": self.depth, "order": self.order, "enabled": self.enabled,
            "created_at": self.created_at, "updated_at": self.updated_at,
        }


def _record(row: tuple) -> WorldbookRecord:
    (id_, scope, root, conversation_id, keywords, regex, case, content, position, depth, order, enabled,
     created, updated) = row
    try:
        words = tuple(str(k) for k in json.loads(keywords or "[]"))
    except (ValueError, TypeError):
        words = (str(keywords),)
    return WorldbookRecord(id_, scope, root, conversation_id, words, bool(regex), bool(case), content, position,
                           int(depth or 0), int(order), bool(enabled), created, updated)


def check_entry(record: WorldbookRecord) -> WorldbookRecord:
    """The record with its content and keywords tidied; `UsageError` naming the first problem."""
    content = record.content.strip()
    if not content:
        raise UsageError("a worldbook entry needs some content: it is empty")
    if record.position not in POSITIONS:
        raise UsageError(f"{record.position!r} is not a worldbook position: use {', '.join(POSITIONS)}")
    if record.position != "at_depth" and record.depth:
        raise UsageError(f"--depth goes with --position at_depth (this entry's position is {record.position})")
    if record.depth < 0:
        raise UsageError(f"--depth must be 0 or more, not {record.depth}")
    keywords = tuple(k.strip() for k in record.keywords)
    if any(not k for k in keywords):
        raise UsageError("a worldbook keyword is empty")
    if record.regex:
        for keyword in keywords:
            try:
                re.compile(keyword)
            except re.error as exc:
                raise UsageError(f"keyword {keyword!r} is not a valid regex: {exc}") from None
    if record.scope not in SCOPES:
        raise UsageError(f"{record.scope!r} is not a worldbook scope: use project or session")
    return replace(record, content=content, keywords=keywords)


class WorldbookStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def add(
        self,
        content: str,
        *,
        keywords: tuple[str, ...] | list[str] = (),
        regex: bool = False,
        case_sensitive: bool = False,
        position: str = "an_top",
        depth: int = 0,
        order: int = 100,
        enabled: bool = True,
        project_root: str | None = None,
        conversation_id: int | None = None,
    ) -> WorldbookRecord:
        """A new entry bound to `conversation_id` (a session) when given, else to `project_root`."""
        scope = "session" if conversation_id is not None else "project"
        if scope == "project" and not project_root:
            raise UsageError("a project worldbook entry needs a project root")
        if scope == "session":
            self._check_session(conversation_id)
        stamp = now_iso()
        record = check_entry(WorldbookRecord(
            0, scope, project_root if scope == "project" else None, conversation_id, tuple(keywords), regex,
            case_sensitive, content, position, depth, order, enabled, stamp, stamp,
        ))
        with write_transaction(self.db):
            cursor = self.db.execute(
                f"insert into worldbook_entries ({_COLUMNS.removeprefix('id, ')}) "
                "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                self._values(record),
            )
        assert cursor.lastrowid is not None  # an insert's row
        return self.get(cursor.lastrowid)

    @staticmethod
    def _values(r: WorldbookRecord) -> list[Any]:
        return [r.scope, r.project_root, r.conversation_id, json.dumps(list(r.keywords)), int(r.regex),
                int(r.case_sensitive), r.content, r.position, r.depth, r.order, int(r.enabled), r.created_at,
                r.updated_at]

    def _check_session(self, conversation_id: int | None) -> None:
        row = self.db.execute("select 1 from conversations where id = ?", [conversation_id]).fetchone()
        if row is None:
            raise UsageError(f"no session with id {conversation_id} (see `zeph sessions list`)")

    def get(self, entry_id: int) -> WorldbookRecord:
        row = self.db.execute(f"select {_COLUMNS} from worldbook_entries where id = ?", [entry_id]).fetchone()
        if row is None:
            raise NotFound(f"no worldbook entry with id {entry_id} (see `zeph worldbook list --all`)")
        return _record(row)

    def list(self, project_root: str | None = None, conversation_id: int | None = None) -> list[WorldbookRecord]:
        """Every entry (both filters None), or those bound to `project_root` or to `conversation_id`."""
        if project_root is None and conversation_id is None:
            rows = self.db.execute(f'select {_COLUMNS} from worldbook_entries order by "order", id').fetchall()
        else:
            rows = self.db.execute(
                f"select {_COLUMNS} from worldbook_entries where (scope = 'project' and project_root = ?) "
                "or (scope = 'session' and conversation_id = ?) order by \"order\", id",
                [project_root, conversation_id],
            ).fetchall()
        return [_record(r) for r in rows]

    def in_force(self, project_root: str | None, conversation_id: int | None) -> builtins.list[WorldbookRecord]:
        """The enabled entries of this project and this session."""
        return [r for r in self.list(project_root or "", conversation_id) if r.enabled]

    def update(self, entry_id: int, **changes: Any) -> WorldbookRecord:
        """Change any of keywords, regex, case_sensitive, content, position, depth, order, enabled."""
        current = self.get(entry_id)
        allowed = {"keywords", "regex", "case_sensitive", "content", "position", "depth", "order", "enabled"}
        unknown = set(changes) - allowed
        if unknown:
            raise ValueError(f"unknown worldbook fields {sorted(unknown)}")
        if "keywords" in changes:
            changes["keywords"] = tuple(changes["keywords"])
        if changes.get("position") not in (None, "at_depth") and "depth" not in changes:
            changes["depth"] = 0  # moved out of at_depth: its depth goes with it
        record = check_entry(replace(current, **changes))
        if record == current:
            return current
        record = replace(record, updated_at=now_iso())
        with write_transaction(self.db):
            self.db.execute(
                "update worldbook_entries set keywords = ?, regex = ?, case_sensitive = ?, content = ?, position = ?, "
                'depth = ?, "order" = ?, enabled = ?, updated_at = ? where id = ?',
                [json.dumps(list(record.keywords)), int(record.regex), int(record.case_sensitive), record.content,
                 record.position, record.depth, record.order, int(record.enabled), record.updated_at, entry_id],
            )
        return self.get(entry_id)

    def remove(self, entry_id: int) -> WorldbookRecord:
        record = self.get(entry_id)
        with write_transaction(self.db):
            self.db.execute("delete from worldbook_entries where id = ?", [entry_id])
        return record
