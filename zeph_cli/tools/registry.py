"""The built-in tools and which of them each mode offers.

Invariant: `agent` mode offers every tool; `ask` and `plan` offer only read
tools, so write and exec tools are not even described to the model there.
compress_context is offered only when the session has a budget to compress
against; the memory tools only while long-term memory is on. Tools are offered
from their declarations (`specs`); a tool's implementation is imported when it
is first used, so a turn that calls no tool imports none.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

from .base import Tool, ToolContext, ToolResult, ToolSet
from .specs import BUILTIN, IMPLEMENTATIONS, ToolDeclaration

READ_ONLY_MODES = ("ask", "plan")
COMPRESS_CONTEXT = "compress_context"
MEMORY_TOOLS = ("memory_save", "memory_search")
LOAD_SKILL = "load_skill"


class DeclaredTool(Tool):
    """A built-in tool as declared: its spec at once, its implementation on first use."""

    def __init__(self, declaration: ToolDeclaration) -> None:
        self.name, self.kind, self.description, self.parameters = declaration  # type: ignore[assignment]
        self._implementation: Tool | None = None

    def implementation(self) -> Tool:
        if self._implementation is None:
            module, class_name = IMPLEMENTATIONS[self.name]
            self._implementation = getattr(importlib.import_module(module), class_name)()
        return self._implementation

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return await self.implementation().run(arguments, context)

    def subject(self, arguments: Any) -> str:
        return self.implementation().subject(arguments)

    def __getattr__(self, name: str) -> Any:  # what only some tools have (`preview`)
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.implementation(), name)


def builtin_tools() -> list[Tool]:
    return [DeclaredTool(declaration) for declaration in BUILTIN.values()]


def tools_for_mode(mode: str, *, compression: bool = True, memory: bool = True) -> ToolSet:
    tools = builtin_tools()
    if not compression:
        tools = [t for t in tools if t.name != COMPRESS_CONTEXT]
    if not memory:
        tools = [t for t in tools if t.name not in MEMORY_TOOLS]
    if mode in READ_ONLY_MODES:
        tools = [t for t in tools if t.kind == "read"]
    return ToolSet({t.name: t for t in tools})


def tool_subject(name: str, arguments: dict) -> str:
    """What a call of tool `name` is about (its command or path), as its tool reports it; for a tool that is
    not built in (an MCP server's, a skill's), its arguments as compact JSON, as MCP tools report them."""
    if name == LOAD_SKILL:
        from ..features.skills.tools import LoadSkillTool

        return LoadSkillTool().subject(arguments)
    if name in BUILTIN:
        return DeclaredTool(BUILTIN[name]).subject(arguments)
    return json.dumps(arguments, separators=(",", ":"), ensure_ascii=False, sort_keys=True) if arguments else ""


def builtin_tool_names() -> list[str]:
    return list(BUILTIN)
