"""`task`: hand a self-contained job to a sub-agent and get its final answer back as the result.

Invariant: the tool only checks its arguments and passes the job on: the sub-agent is run by the
agent, through `ToolContext.run_subagent` (tools never import the agent), which refuses what the
session may not start (a mode above its own, unknown tools, a depth beyond `max_depth`) as a
`ToolFailure`, and reports the sub-agent's progress through `ToolContext.progress`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import SubagentRequest, Tool, ToolContext, ToolResult
from .failures import ToolFailure


class TaskTool(Tool, declared="task"):
    def subject(self, arguments: Mapping[str, Any]) -> str:
        return str(arguments.get("description", ""))

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        if context.run_subagent is None:
            raise ToolFailure("task: sub-agents are not available in this session.")
        description = str(arguments["description"]).strip()
        prompt = str(arguments["prompt"]).strip()
        if not prompt:
            raise ToolFailure("task: 'prompt' is empty: say the whole job the sub-agent should do.")
        tools = arguments.get("tools")
        names: tuple[str, ...] | None = None
        if tools is not None:
            if not all(isinstance(name, str) for name in tools):
                raise ToolFailure(f"task: 'tools' must be a list of tool names, got {tools!r}"[:300])
            names = tuple(dict.fromkeys(name.strip() for name in tools if name.strip()))
            if not names:  # [] or only blanks: never read as "every tool"
                raise ToolFailure("task: tools is empty; leave it out for every tool of the mode, or name some")
        request = SubagentRequest(
            description=description or prompt.splitlines()[0][:60],
            prompt=prompt,
            mode=arguments.get("mode"),
            tools=names,
            call_id=context.call_id,
        )
        return await context.run_subagent(request, context.progress or (lambda event: None))
