"""The tools a session is offered: declared tools made offerable, filtered by the mode and the policy.

Invariant: tools are offered from their declarations (the core's in `specs`, and those features
register), so a turn that calls no tool imports no tool's implementation: a declared tool's is imported
when it is first used. What a mode offers is the mode's data (`config.modes`), what a session allows is
its policy's (tool groups), and this module names neither a mode nor a feature. compress_context is
offered only when the session has a budget to compress against.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..config.modes import MODES
from .base import Tool, ToolContext, ToolResult, ToolSet
from .specs import BUILTIN, ToolDeclaration

COMPRESS_CONTEXT = "compress_context"


class DeclaredTool(Tool):
    """A tool as declared: its spec at once, its implementation on first use."""

    def __init__(self, declaration: ToolDeclaration) -> None:
        self.declaration = declaration
        self.name, self.description, self.parameters = declaration.name, declaration.description, declaration.parameters
        self.kind, self.group = declaration.kind, declaration.group  # type: ignore[assignment]
        self._implementation: Tool | None = None

    def implementation(self) -> Tool:
        if self._implementation is None:
            module, class_name = self.declaration.implementation
            self._implementation = getattr(importlib.import_module(module), class_name)()
        return self._implementation

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return await self.implementation().run(arguments, context)

    def subject(self, arguments: Any) -> str:
        return self.implementation().subject(arguments)

    def kind_of_call(self, arguments: Any, context: ToolContext) -> str:
        return self.implementation().kind_of_call(arguments, context)

    def __getattr__(self, name: str) -> Any:  # what only some tools have (`preview`)
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.implementation(), name)


def _everything(group: str) -> bool:
    return True


def tools_for_mode(
    mode: str, declared: Iterable[ToolDeclaration] = (), live: Iterable[Tool] = (), *,
    compression: bool = True, allows: Callable[[str], bool] = _everything,
) -> ToolSet:
    """The tools `mode` offers, in order: the core's, then `declared` (features'), then `live` ones (an MCP
    server's); only those of a group `allows` allows, and compress_context only with `compression`."""
    offered = MODES[mode]
    tools = [*(DeclaredTool(d) for d in (*BUILTIN.values(), *declared)), *live]
    return ToolSet({
        tool.name: tool for tool in tools
        if tool.offered_in(offered) and allows(tool.group) and (compression or tool.name != COMPRESS_CONTEXT)
    })


def tool_subject(name: str, arguments: dict, declared: Mapping[str, ToolDeclaration] = BUILTIN) -> str:
    """What a call of tool `name` is about (its command or path), as its tool reports it; for a tool that is
    not declared (an MCP server's), its arguments as compact JSON, as MCP tools report them."""
    if name in declared:
        return DeclaredTool(declared[name]).subject(arguments)
    return json.dumps(arguments, separators=(",", ":"), ensure_ascii=False, sort_keys=True) if arguments else ""
