"""What the model is told about todo_write: name, kind, description and argument schema.

Invariant: data only (the registry offers tools from declarations; the implementation in `tools.py`
is imported when the tool is first used).
"""

from __future__ import annotations

from ...tools.specs import ToolDeclaration

PENDING, IN_PROGRESS, COMPLETED, ABANDONED = "pending", "in_progress", "completed", "abandoned"
STATUSES = (PENDING, IN_PROGRESS, COMPLETED, ABANDONED)

# Kind "read": it changes nothing outside the session (no file, no command), so it never asks for approval;
# the modes it is offered in are the feature's choice (`__init__.py`).
TODO_WRITE = ToolDeclaration(
    "todo_write",
    "read",
    "Keep a task list for multi-step work (three or more steps, or when the user gives a list). Each call "
    "replaces the whole list: send every item, each with a short id, its text and its status. Keep exactly "
    "one item in_progress while you work, mark it completed as soon as it is done, and abandoned if it is "
    "dropped. The list is shown to the user and sent back to you in <todo>. Not for one-step questions or chat.",
    {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "description": "The whole list, in order.",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "A short unique id, e.g. \"1\"."},
                        "text": {"type": "string", "description": "The step, in a few words."},
                        "status": {"type": "string", "enum": list(STATUSES)},
                    },
                    "required": ["id", "text", "status"],
                },
            },
        },
        "required": ["items"],
    },
    ("zeph_cli.features.tasks.tools", "TodoWriteTool"),
    "task tools",
)
