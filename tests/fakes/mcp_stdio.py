"""A small MCP server over stdio (the SDK's low-level server) for what the reference servers do only under
conditions: tools and prompts in pages, a prompt with an assistant message, a tool list that changes on
demand, a tool that requires tasks, instructions, steady progress, a call that never answers, log
messages at chosen levels, a form request, the roots, and what the client said it is.

Run as `python tests/fakes/mcp_stdio.py`; `FAKE_INSTRUCTIONS` sets its instructions, `FAKE_MARKS` a
directory where it writes `cancelled-TOOL` when a call of TOOL is cancelled by the client.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.stdio import stdio_server

PAGE = 2
EMPTY = {"type": "object", "properties": {}}

tools = [
    types.Tool(name="whoami", description="What the client said it is.", input_schema=EMPTY),
    types.Tool(name="add_tool", description="Add a tool named by `name`, then say the list changed.",
               input_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
    types.Tool(name="add_prompt", description="Add a prompt named by `name`, then say the list changed.",
               input_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
    types.Tool(name="steady", description="Report progress `steps` times, `pause` seconds apart.",
               input_schema={"type": "object", "properties": {"steps": {"type": "integer"}, "pause": {"type": "number"}}}),
    types.Tool(name="silent", description="Never answers.", input_schema=EMPTY),
    types.Tool(name="log", description="Send one log message per entry of `levels`.",
               input_schema={"type": "object", "properties": {"levels": {"type": "array", "items": {"type": "string"}}}}),
    types.Tool(name="ask", description="Ask the user for a name and an age; give back the answer.", input_schema=EMPTY),
    types.Tool(name="roots", description="The client's roots.", input_schema=EMPTY),
    types.Tool(name="research", description="Needs tasks.", input_schema=EMPTY,
               execution=types.ToolExecution(task_support="required")),
]

PROMPTS = [
    types.Prompt(name="first", description="The first page."),
    types.Prompt(name="second", description="Still the first page."),
    types.Prompt(name="dialogue", description="A user turn, an assistant turn, a user turn.",
                 arguments=[types.PromptArgument(name="topic", required=True)]),
]


def _page(items: list, params: types.PaginatedRequestParams | None) -> tuple[list, str | None]:
    start = int(params.cursor) if params is not None and params.cursor else 0
    end = start + PAGE
    return items[start:end], (str(end) if end < len(items) else None)


async def list_tools(ctx, params):
    page, cursor = _page(tools, params)
    return types.ListToolsResult(tools=page, next_cursor=cursor)


async def list_prompts(ctx, params):
    page, cursor = _page(PROMPTS, params)
    return types.ListPromptsResult(prompts=page, next_cursor=cursor)


async def get_prompt(ctx, params):
    if params.name != "dialogue":
        return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=f"the {params.name} prompt"))])
    topic = (params.arguments or {}).get("topic", "?")

    def said(role, text):
        return types.PromptMessage(role=role, content=types.TextContent(type="text", text=text))

    return types.GetPromptResult(messages=[said("user", f"Tell me about {topic}."), said("assistant", f"{topic} is a big subject."),
                                           said("user", "Then the short version.")])


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def call_tool(ctx, params):
    arguments = params.arguments or {}
    name = params.name
    if name == "whoami":
        client = ctx.session.client_params
        return _text(json.dumps(client.model_dump(by_alias=True, mode="json", exclude_none=True) if client else None))
    if name == "add_tool":
        tools.append(types.Tool(name=arguments["name"], description="Added while running.", input_schema=EMPTY))
        await ctx.session.send_tool_list_changed()
        return _text(f"added {arguments['name']}")
    if name == "add_prompt":
        PROMPTS.append(types.Prompt(name=arguments["name"], description="Added while running."))
        await ctx.session.send_prompt_list_changed()
        return _text(f"added prompt {arguments['name']}")
    if name == "steady":
        steps, pause = int(arguments.get("steps", 3)), float(arguments.get("pause", 0.2))
        for i in range(1, steps + 1):
            await anyio.sleep(pause)
            await ctx.session.report_progress(i, steps, f"step {i}")
        return _text(f"done after {steps} steps")
    if name == "silent":
        try:
            await anyio.sleep(3600)
        finally:
            marks = os.environ.get("FAKE_MARKS")
            if marks:
                Path(marks, f"cancelled-{name}").write_text("cancelled")
    if name == "log":
        for level in arguments.get("levels", []):
            await ctx.session.send_log_message(level, f"a {level} message", logger="fake")
        return _text("logged")
    if name == "ask":
        answer = await ctx.session.elicit_form("Who are you?", {
            "type": "object",
            "properties": {"name": {"type": "string", "title": "Name"},
                           "age": {"type": "integer", "minimum": 0},
                           "colour": {"type": "string", "enum": ["red", "green"]}},
            "required": ["name"],
        })
        return _text(json.dumps({"action": answer.action, "content": answer.content}))
    if name == "roots":
        listed = await ctx.session.list_roots()
        return _text(json.dumps([str(root.uri) for root in listed.roots]))
    if any(t.name == name for t in tools):
        return _text(f"{name} ran")
    raise ValueError(f"no tool {name}")


async def set_level(ctx, params):
    return types.EmptyResult()


async def main() -> None:
    server = Server("fake-stdio", version="1.2.3", instructions=os.environ.get("FAKE_INSTRUCTIONS") or None,
                    on_list_tools=list_tools, on_call_tool=call_tool, on_list_prompts=list_prompts,
                    on_get_prompt=get_prompt, on_set_logging_level=set_level)
    options = server.create_initialization_options(NotificationOptions(tools_changed=True, prompts_changed=True))
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    anyio.run(main)
