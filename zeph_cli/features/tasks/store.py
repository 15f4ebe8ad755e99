"""A session's task list on disk (`task_items`) and the spans of messages its items were in progress for
(`task_spans`).

Invariant: the list is only ever replaced whole, in one transaction with the spans it opens and closes, so
the two always agree: an item is in progress exactly when it has one open span (`last_message_id` and
`closed_status` null). A span opens at the message that put its item in progress; while open its text
follows the item's (an item reworded while in progress is the same item). It closes at the newest message
when the item leaves progress, keeping the text and status the item then has (`completed`, `abandoned` or
`pending`), or, when the item leaves the list while in progress, its last text and `abandoned`. A closed
span is never written again: an id the model reuses later (for a new item or the same one) opens a span of
its own and leaves the earlier ones as they closed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ...store.sqlite import Database
from ...store.transactions import write_transaction
from .items import ABANDONED, IN_PROGRESS, TaskItem


class Span(NamedTuple):
    """Messages `first_id` through `last_id` (None = up to the newest) were written while item `item_id`
    was in progress."""

    item_id: str
    text: str
    first_id: int
    last_id: int | None
    closed_status: str | None = None  # the item's status when the span closed; None while open


class TaskStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def items(self, conversation_id: int) -> list[TaskItem]:
        rows = self.db.execute(
            "select id, text, status from task_items where conversation_id = ? order by position", [conversation_id]
        )
        return [TaskItem(*row) for row in rows]

    def spans(self, conversation_id: int) -> list[Span]:
        rows = self.db.execute(
            "select item_id, text, first_message_id, last_message_id, closed_status from task_spans where conversation_id = ? "
            "order by first_message_id, id",
            [conversation_id],
        )
        return [Span(*row) for row in rows]

    def replace(self, conversation_id: int, items: Sequence[TaskItem], *, opened_at: int, closed_at: int) -> None:
        """Make `items` (checked) the session's list. An item newly in progress opens a span at `opened_at`
        (the message that made the call); an item still in progress gives its open span its text now; an
        item that leaves progress closes its span at `closed_at` (the newest message now) with its new text
        and status, or with its last text and `abandoned` when it leaves the list."""
        with write_transaction(self.db):
            before = {item.id: item for item in self.items(conversation_id)}
            after = {item.id: item for item in items}
            for item_id, old in before.items():
                new = after.get(item_id)
                if old.status == IN_PROGRESS and (new is None or new.status != IN_PROGRESS):
                    text, status = (old.text, ABANDONED) if new is None else (new.text, new.status)
                    self.db.execute(
                        "update task_spans set last_message_id = ?, closed_status = ?, text = ? "
                        "where conversation_id = ? and item_id = ? and last_message_id is null",
                        [max(closed_at, opened_at), status, text, conversation_id, item_id],
                    )
            for item in items:
                if item.status != IN_PROGRESS:
                    continue
                old_item = before.get(item.id)
                if old_item is None or old_item.status != IN_PROGRESS:
                    self.db.insert("task_spans", {"conversation_id": conversation_id, "item_id": item.id,
                                                  "text": item.text, "first_message_id": opened_at})
                else:
                    self.db.execute("update task_spans set text = ? where conversation_id = ? and item_id = ? "
                                    "and last_message_id is null", [item.text, conversation_id, item.id])
            self.db.execute("delete from task_items where conversation_id = ?", [conversation_id])
            for position, item in enumerate(items):
                self.db.insert("task_items", {"conversation_id": conversation_id, "id": item.id, "text": item.text,
                                              "status": item.status, "position": position})

    def newest_message_id(self, conversation_id: int, role: str | None = None) -> int | None:
        """The id of the session's newest stored message (of `role`, when given), or None."""
        sql = "select max(id) from messages where conversation_id = ?" + (" and role = ?" if role else "")
        row = self.db.execute(sql, [conversation_id, *([role] if role else [])]).fetchone()
        return row[0] if row else None
