"""`compress_context`: the model compresses its own context on demand.

Invariant: it changes only what the model sees of the conversation — never a
file — so it runs without asking; the work is the agent's compactor, reached
through the tool context, and the result is one line saying what was freed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import Tool, ToolContext, ToolResult
from .failures import ToolFailure



class CompressContextTool(Tool, declared="compress_context"):
    def subject(self, arguments: Mapping[str, Any]) -> str:
        return str(arguments.get("strategy", ""))

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        if context.compress is None:
            raise ToolFailure("context compression is not available in this session.")
        return ToolResult(await context.compress(arguments["strategy"]))
