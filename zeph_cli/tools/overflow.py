"""`read_overflow`: paging through a tool output that was cut for the context.

Invariant: reads only outputs kept for the current conversation, by the id the
truncation marker named; the pages it returns are themselves within the
output size limit.
"""

from __future__ import annotations

from typing import Any

from .base import Tool, ToolContext, ToolResult
from .specs import DEFAULT_PAGE_LINES
from .failures import ToolFailure
from .output import page_lines



class ReadOverflowTool(Tool, declared="read_overflow"):
    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        output_id = arguments["id"].strip()
        text = context.read_overflow(output_id) if context.read_overflow else None
        if text is None:
            raise ToolFailure(f"no kept output with id {output_id!r} in this conversation")
        page = page_lines(text, arguments.get("offset", 1), arguments.get("limit", DEFAULT_PAGE_LINES))
        return ToolResult(page, summary=f"{output_id}")
