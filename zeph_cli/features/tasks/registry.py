"""The subgoal registry: a session's task list and its items' message spans, as compaction reads them.

Invariant: reads only (the spans are written by `TaskStore.replace`), with light imports. Every span of
an item takes the item's current state: in progress -> active (the earlier spans too: the work goes on),
completed -> completed, abandoned or no longer listed -> abandoned; an item back to pending gives no
subgoal (its messages are ordinary history). Subgoals come in the order their spans opened.
"""

from __future__ import annotations

from ...context.compaction.subgoals import ABANDONED, ACTIVE, COMPLETED, Subgoal
from ...store.sqlite import Database
from . import items as task
from .items import TaskItem
from .store import TaskStore

_STATE = {task.IN_PROGRESS: ACTIVE, task.COMPLETED: COMPLETED, task.ABANDONED: ABANDONED}


def task_items(db: Database, conversation_id: int) -> list[TaskItem]:
    """The session's task list, in order (empty when it has none)."""
    return TaskStore(db).items(conversation_id)


def subgoals(db: Database, conversation_id: int) -> list[Subgoal]:
    """The session's subgoals: one per recorded span, in the state of its item now."""
    store = TaskStore(db)
    status = {item.id: item.status for item in store.items(conversation_id)}
    found = []
    for span in store.spans(conversation_id):
        state = _STATE.get(status.get(span.item_id, task.ABANDONED))
        if state is not None:
            found.append(Subgoal(span.item_id, span.text, state, span.first_id, span.last_id))
    return found
