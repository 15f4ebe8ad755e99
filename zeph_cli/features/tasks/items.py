"""Task items as values: what a task list holds, how a list given by the model is checked, and how it reads.

Invariant: pure (no I/O; of zeph, only the statuses the tool declares). A checked list has unique non-empty ids, non-empty
texts and known statuses; a list that is not so is refused with one line naming the first culprit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from .tool_specs import ABANDONED, COMPLETED, IN_PROGRESS, PENDING, STATUSES

__all__ = ["ABANDONED", "COMPLETED", "IN_PROGRESS", "PENDING", "STATUSES", "BadTaskList", "TaskItem", "checked_items",
           "render_item", "render_list", "tally"]
MARKS = {PENDING: "[ ]", IN_PROGRESS: "[>]", COMPLETED: "[x]", ABANDONED: "[-]"}
MAX_ITEMS = 50
MAX_TEXT_CHARS = 500


class TaskItem(NamedTuple):
    """One item of a session's task list."""

    id: str
    text: str
    status: str  # one of STATUSES


class BadTaskList(ValueError):
    """A task list that cannot be kept; its message is one line naming the culprit."""


def checked_items(raw: Any) -> list[TaskItem]:
    """The items of `raw` (a list of {"id", "text", "status"} objects) as `TaskItem`s, in order; ids and texts
    are stripped. Raises `BadTaskList` naming the first item that is wrong and why."""
    if not isinstance(raw, list):
        raise BadTaskList(f"'items' must be a list of {{id, text, status}} objects, got {type(raw).__name__}")
    if len(raw) > MAX_ITEMS:
        raise BadTaskList(f"'items' has {len(raw)} items; keep the list to {MAX_ITEMS} at most")
    items: list[TaskItem] = []
    seen: set[str] = set()
    for number, entry in enumerate(raw, 1):
        where = f"item {number}"
        if not isinstance(entry, dict):
            raise BadTaskList(f"{where} must be an object with id, text and status, got {type(entry).__name__}")
        item_id = entry.get("id")
        if isinstance(item_id, int) and not isinstance(item_id, bool):
            item_id = str(item_id)
        if not isinstance(item_id, str) or not item_id.strip():
            raise BadTaskList(f"{where} has no id: give each item a short unique id such as \"{number}\"")
        item_id = item_id.strip()
        where = f"item {item_id!r}"
        if item_id in seen:
            raise BadTaskList(f"{where} appears twice: ids must be unique")
        seen.add(item_id)
        text = entry.get("text")
        if not isinstance(text, str) or not text.strip():
            raise BadTaskList(f"{where} has no text: say what the step is")
        text = " ".join(text.split())
        if len(text) > MAX_TEXT_CHARS:
            raise BadTaskList(f"{where}'s text has {len(text)} characters; keep it under {MAX_TEXT_CHARS}")
        status = entry.get("status", PENDING)
        if status not in STATUSES:
            raise BadTaskList(f"{where} has status {status!r}; use one of {', '.join(STATUSES)}")
        items.append(TaskItem(item_id, text, status))
    return items


def render_item(item: TaskItem) -> str:
    return f"{MARKS.get(item.status, '[?]')} {item.id}. {item.text}"


def render_list(items: Sequence[TaskItem]) -> str:
    """The list as plain lines, one per item: `[x] 1. text` (done), `[>]` in progress, `[ ]` pending,
    `[-]` abandoned."""
    return "\n".join(render_item(item) for item in items)


def tally(items: Sequence[TaskItem]) -> str:
    """`3 items, 1 in progress, 1 completed` (the counts that are not zero)."""
    counts = [(sum(1 for i in items if i.status == s), s.replace("_", " ")) for s in (IN_PROGRESS, COMPLETED, ABANDONED)]
    head = f"{len(items)} item{'s' if len(items) != 1 else ''}"
    return ", ".join([head, *(f"{n} {word}" for n, word in counts if n)])
