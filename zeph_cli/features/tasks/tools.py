"""`todo_write`: the model replaces the session's task list.

Invariant: a list that fails its checks (`items.checked_items`) is refused with one line naming the
culprit and the stored list is unchanged; a list that passes replaces the stored one whole, with the
spans of its items' progress (`TaskStore.replace`), and the result is the list as it now reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...tools.base import Tool, ToolContext, ToolResult
from ...tools.failures import ToolFailure
from .items import BadTaskList, checked_items, render_list, tally
from .store import TaskStore
from .tool_specs import TODO_WRITE


class TodoWriteTool(Tool, declared=TODO_WRITE):
    def subject(self, arguments: Mapping[str, Any]) -> str:
        items = arguments.get("items")
        return f"{len(items)} items" if isinstance(items, list) else ""

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        if context.database is None or context.conversation_id is None:
            raise ToolFailure("todo_write: this session keeps no task list (it is not stored)")
        try:
            items = checked_items(arguments.get("items"))
        except BadTaskList as exc:
            raise ToolFailure(f"todo_write: {exc}. The list is unchanged; send the whole list again.") from None
        store = TaskStore(context.database)
        conversation = context.conversation_id
        newest = store.newest_message_id(conversation) or 0
        calling = store.newest_message_id(conversation, "assistant") or newest
        store.replace(conversation, items, opened_at=calling, closed_at=newest)
        if not items:
            return ToolResult("The task list is now empty.", summary="list cleared")
        return ToolResult(f"The task list is now:\n{render_list(items)}", summary=tally(items))
