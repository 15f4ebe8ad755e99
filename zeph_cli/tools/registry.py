"""The built-in tools and which of them each mode offers.

Invariant: `agent` mode offers every tool; `ask` and `plan` offer only read
tools, so write and exec tools are not even described to the model there.
compress_context is offered only when the session has a budget to compress
against; the memory tools only while long-term memory is on.
"""

from __future__ import annotations

import json

from .base import Tool, ToolSet
from .compress import CompressContextTool
from .files import EditFileTool, ListDirectoryTool, ReadFileTool, WriteFileTool
from .memory_tools import MemorySaveTool, MemorySearchTool
from .overflow import ReadOverflowTool
from .search import FindPathTool, GrepTool
from .shell import BashTool
from .skill_tools import LoadSkillTool

READ_ONLY_MODES = ("ask", "plan")


def builtin_tools() -> list[Tool]:
    return [
        ReadFileTool(),
        ListDirectoryTool(),
        FindPathTool(),
        GrepTool(),
        WriteFileTool(),
        EditFileTool(),
        BashTool(),
        ReadOverflowTool(),
        CompressContextTool(),
        MemorySaveTool(),
        MemorySearchTool(),
    ]


MEMORY_TOOLS = (MemorySaveTool.name, MemorySearchTool.name)


def tools_for_mode(mode: str, *, compression: bool = True, memory: bool = True) -> ToolSet:
    tools = builtin_tools()
    if not compression:
        tools = [t for t in tools if t.name != CompressContextTool.name]
    if not memory:
        tools = [t for t in tools if t.name not in MEMORY_TOOLS]
    if mode in READ_ONLY_MODES:
        tools = [t for t in tools if t.kind == "read"]
    return ToolSet({t.name: t for t in tools})


def tool_subject(name: str, arguments: dict) -> str:
    """What a call of tool `name` is about (its command or path), as its tool reports it; for a tool that is
    not built in (an MCP server's, a skill's), its arguments as compact JSON, as MCP tools report them."""
    if name == LoadSkillTool.name:
        return LoadSkillTool().subject(arguments)
    tool = next((t for t in builtin_tools() if t.name == name), None)
    if tool is not None:
        return tool.subject(arguments)
    return json.dumps(arguments, separators=(",", ":"), ensure_ascii=False, sort_keys=True) if arguments else ""


def builtin_tool_names() -> list[str]:
    return [t.name for t in builtin_tools()]
