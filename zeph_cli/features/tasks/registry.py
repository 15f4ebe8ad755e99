"""The subgoal registry: a session's task list and its items' message spans, as compaction reads them.

Invariant: reads only (the spans are written by `TaskStore.replace`), with light imports, and a span's
state and text come from its own row, never from the list as it is now (ids are the model's and come back
for new items: a new list starts at "1" again). An open span (its item in progress) is active; a span
closed as completed or abandoned stays so (abandoned: also an item that left the list while in progress;
an item completed and later left off the list stays completed). A span closed because its item went back
to pending takes the state of the item's next span when the item was put in progress again with the same
id and the same text (the same item: the work goes on, so while it is in progress its earlier spans are
active too, and they close as it does); otherwise (still pending, left the list, or its id reused for
another text) it gives no subgoal: its messages are ordinary history. Subgoals come in the order their
spans opened.
"""

from __future__ import annotations

from ...context.compaction.subgoals import ABANDONED, ACTIVE, COMPLETED, Subgoal
from ...store.sqlite import Database
from . import items as task
from .items import TaskItem
from .store import TaskStore

_STATE = {task.COMPLETED: COMPLETED, task.ABANDONED: ABANDONED}  # a closed span's status -> its state


def task_items(db: Database, conversation_id: int) -> list[TaskItem]:
    """The session's task list, in order (empty when it has none)."""
    return TaskStore(db).items(conversation_id)


def subgoals(db: Database, conversation_id: int) -> list[Subgoal]:
    """The session's subgoals: one per recorded span that has a state (see the module's invariant)."""
    spans = TaskStore(db).spans(conversation_id)
    found: list[Subgoal] = []
    resumed: dict[str, tuple[str, str | None]] = {}  # item id -> (text, state) of its next span, newest first
    for span in reversed(spans):
        if span.last_id is None:
            state: str | None = ACTIVE
        elif span.closed_status == task.PENDING:
            text, later = resumed.get(span.item_id, ("", None))
            state = later if text == span.text else None
        else:
            state = _STATE.get(span.closed_status or "")
        resumed[span.item_id] = (span.text, state)
        if state is not None:
            found.append(Subgoal(span.item_id, span.text, state, span.first_id, span.last_id))
    return found[::-1]
