"""The task list: a session's checklist the model keeps with `todo_write`, sent as the `<todo>` block, shown
beside the chat transcript, and read by compaction as subgoals (the spans of messages an item was in
progress for).

Invariant: the list lives in the `task_items` and `task_spans` tables (`store.py`), replaced whole and only
by `todo_write`; nothing here is imported until a session uses it.
"""

from __future__ import annotations

from .. import Feature

FEATURE = Feature("tasks")
