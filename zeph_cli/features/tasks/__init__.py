"""The task list: a session's checklist the model keeps with `todo_write`, sent as the `<todo>` block, shown
beside the chat transcript and by `zeph ask -u`, and read by compaction as subgoals (the spans of messages
an item was in progress for, `registry.py`).

Invariant: the list lives in the `task_items` and `task_spans` tables (`store.py`), replaced whole and only
by `todo_write`; nothing here but this declaration is imported until a session uses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...context.blocks import Registration
from .. import ChatCommand, Feature
from .tool_specs import TODO_WRITE

if TYPE_CHECKING:
    from ...agent.source_host import SourceHost

# The modes todo_write is offered in: agent (multi-step work) and plan (a plan is a task list). Not ask,
# which answers questions: one-step work, where the tool would cost every request its schema and tempt a
# small model into keeping a list for a single answer.
TASK_MODES = ("agent", "plan")


def _offered(session: SourceHost) -> bool:
    return session.mode in TASK_MODES


FEATURE = Feature(
    "tasks",
    sources=(Registration(f"{__name__}.source", "TasksSource"),),
    tools=(TODO_WRITE,),
    tools_offered=_offered,
    chat_commands=(
        ChatCommand("tasks", "", "Show or hide the task list beside the transcript.",
                    (f"{__name__}.chat_commands", "tasks_command")),
    ),
)
