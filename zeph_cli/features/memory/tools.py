"""`memory_save` and `memory_search`: the model's hands on long-term memory.

Invariant: memory_save is a write tool — it goes through the permission policy like
any other write (asked about unless allowed) and is not offered in ask and plan
modes; memory_search only reads. Both reach the memories through the tool
context's `memories` accessor and turn every refusal into one line for the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import ZephError
from ...tools.base import Tool, ToolContext, ToolResult
from .tool_specs import DEFAULT_SEARCH_LIMIT, MAX_MEMORY_CHARS, MAX_SEARCH_LIMIT, MEMORY_SAVE, MEMORY_SCOPES, MEMORY_SEARCH
from ...tools.failures import ToolFailure
from ...tools.memory_access import MemoryAccess



def _memories(context: ToolContext, tool: str) -> MemoryAccess:
    if context.memories is None:
        raise ToolFailure(f"{tool}: long-term memory is not available in this session")
    return context.memories


class MemorySaveTool(Tool, declared=MEMORY_SAVE):
    def subject(self, arguments: Mapping[str, Any]) -> str:
        return str(arguments.get("content", ""))

    def preview(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        scope = arguments.get("scope") or (context.memories.default_scope() if context.memories else "project")
        return f"save a {scope} memory: {arguments.get('content', '')}"

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        content = arguments["content"].strip()
        if not content:
            raise ToolFailure("memory_save: argument 'content' is empty; give the fact to remember")
        if len(content) > MAX_MEMORY_CHARS:
            raise ToolFailure(
                f"memory_save: content is {len(content)} characters; keep one fact under {MAX_MEMORY_CHARS}"
            )
        scope = arguments.get("scope")
        if scope is not None and scope not in MEMORY_SCOPES:
            raise ToolFailure(f"memory_save: argument 'scope' must be user, project or session, got {scope!r}")
        confidence = arguments.get("confidence", 1.0)
        if not 0 <= confidence <= 1:
            raise ToolFailure(f"memory_save: argument 'confidence' must be between 0 and 1, got {confidence!r}")
        memories = _memories(context, self.name)
        try:
            memory, created = memories.save(content, scope, float(confidence), "tool")
        except ZephError as exc:
            raise ToolFailure(f"memory_save: {exc}") from None
        if not created:
            return ToolResult(
                f"Already saved as memory #{memory.id} ({memory.scope} scope); nothing added.",
                summary=f"already memory #{memory.id}",
            )
        return ToolResult(
            f"Saved memory #{memory.id} ({memory.scope} scope, confidence {memory.confidence:g}).",
            summary=f"saved memory #{memory.id} ({memory.scope})",
        )


class MemorySearchTool(Tool, declared=MEMORY_SEARCH):
    def subject(self, arguments: Mapping[str, Any]) -> str:
        return str(arguments.get("query", ""))

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        query = arguments["query"].strip()
        if not query:
            raise ToolFailure("memory_search: argument 'query' is empty; say what to look for")
        limit = min(arguments.get("limit") or DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT)
        try:
            found, warning = _memories(context, self.name).search(query, limit)
        except ZephError as exc:
            raise ToolFailure(f"memory_search: {exc}") from None
        if not found:
            return ToolResult(f"No saved memory matches {query!r}.", summary="no memories")
        lines = [
            f"#{m.id} [{m.scope}, confidence {m.confidence:g}, score {m.score:.2f}] "
            + m.content.replace("\n", "\n    ")
            for m in found
        ]
        if warning:
            lines.append(f"(note: {warning})")
        count = len(found)
        return ToolResult("\n".join(lines), summary=f"{count} memor{'y' if count == 1 else 'ies'}")
