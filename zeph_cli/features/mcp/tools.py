"""An MCP server's tool as a zeph tool: namespaced, its schema passed through, run through the manager.

Invariant: an untrusted server's tools are "exec" (asked about unless a
`tools.allow` rule covers them), a trusted server's are "read" (run without
asking); `tools.deny` rules apply to both. A call ends as a `ToolResult` or a
`ToolFailure` naming the server — nothing the SDK or the transport raises gets
past `run()`. Every call asks the server for progress; each update reaches the
front ends as a `ToolCallProgress` of the call, through `context.progress`; the
servers' warnings that arrived by the end of the call go the same way, as
`AgentWarning`s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ...tools.reports import AgentWarning, ToolCallProgress
from ...context.injection_scan import scan
from ...images import received_image
from ...messages import ImagePart, base64_size
from ...tools.base import Tool, ToolContext, ToolResult, without_descriptions
from ...tools.failures import ToolFailure
from .connection import ServerError
from .resources import contents_parts, link_line

if TYPE_CHECKING:
    from ...config.modes import Mode
    from .connection import ListedTool, ProgressReport

MAX_DESCRIPTION = 1024
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


class ToolCaller(Protocol):
    async def call_tool(self, server_id: str, tool: str, arguments: dict[str, Any], timeout: float,
                        progress: ProgressReport | None = None) -> Any: ...


class McpTool(Tool):
    def __init__(self, caller: ToolCaller, server_id: str, name: str, listed: ListedTool, *,
                 trusted: bool, timeout: float) -> None:
        self.caller = caller
        self.server_id = server_id
        self.tool = listed.name  # the server's own name
        self.name = name
        self.description = _bounded(listed.description or f"{listed.name} (MCP server {server_id})")
        self.parameters = listed.input_schema or EMPTY_SCHEMA
        # A server's words reach the model as tool schemas, outside any untrusted framing: scanned, and
        # withheld when they look like an injection (the tool stays usable by its name and parameters).
        self.flags = scan(listed.description + "\n" + json.dumps(self.parameters))
        if self.flags:
            self.description = f"{listed.name} (MCP server {server_id}; its description was withheld)"
            self.parameters = without_descriptions(self.parameters)
        self.kind = "read" if trusted else "exec"
        self.read_only = listed.read_only
        self.timeout = timeout

    group = "MCP tools"

    def offered_in(self, mode: Mode) -> bool:
        """A read-only mode offers the tools the server marks read-only (whatever their trust)."""
        return not mode.read_only or self.read_only

    def subject(self, arguments: Mapping[str, Any]) -> str:
        return json.dumps(arguments, separators=(",", ":"), ensure_ascii=False, sort_keys=True)

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        def report(message: str, progress: float | None, total: float | None) -> None:
            if context is not None and context.progress is not None:
                context.progress(ToolCallProgress(context.call_id, message, progress, total))

        try:
            result = await self.caller.call_tool(self.server_id, self.tool, arguments, self.timeout, report)
        except ServerError as exc:
            raise ToolFailure(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - nothing from a server escapes
            raise ToolFailure(f"MCP server {self.server_id}: {self.tool} failed: {exc}"[:400]) from None
        finally:
            self._say_server_warnings(context)
        text = result_text(getattr(result, "content", None) or [], self.server_id)
        is_error = bool(getattr(result, "is_error", False))
        if not text:
            structured = getattr(result, "structured_content", None)
            text = json.dumps(structured, ensure_ascii=False) if structured is not None else "(no output)"
        lines = len(text.splitlines()) or 1
        summary = f"{self.server_id} · " + ("error" if is_error else f"{lines} line{'s' if lines != 1 else ''}")
        return ToolResult(text, is_error=is_error, summary=summary, images=result_images(getattr(result, "content", None) or []))


    def _say_server_warnings(self, context: ToolContext | None) -> None:
        """The servers' warnings that came during the call, as warnings of the turn (not only the next one's)."""
        notices = getattr(self.caller, "log_notices", None)
        if notices is None or context is None or context.progress is None:
            return
        for line in notices.take(new_turn=False):
            context.progress(AgentWarning(line))


def result_text(blocks: list[Any], server: str = "") -> str:
    """The text blocks joined; images and audio described in one line each; an embedded resource's text under
    a line naming it (a blob in one line); a resource link with its name, description and MIME type, and —
    given the `server` it came from — the mcp_read_resource call that reads it."""
    lines: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", "")
        if kind == "text":
            lines.append(block.text)
        elif kind in ("image", "audio"):
            lines.append(f"[{kind}: {getattr(block, 'mime_type', '?')}, {base64_size(getattr(block, 'data', '') or ''):,} bytes]")
        elif kind == "resource":
            resource = block.resource
            text, _ = contents_parts([resource])
            if isinstance(getattr(resource, "text", None), str):
                mime = getattr(resource, "mime_type", None)
                text = f"[resource: {resource.uri}{f' ({mime})' if mime else ''}]\n{text}"
            lines.append(text)
        elif kind == "resource_link":
            lines.append(link_line(server, block))
        else:
            lines.append(f"[{kind or 'unknown'} content]")
    return "\n".join(lines)


def result_images(blocks: list[Any]) -> tuple[ImagePart, ...]:
    """The images of a tool result, as the model gets them (`received_image`): its image blocks, and the
    images of its embedded resources; a block without data is left out (its line in `result_text` names it)."""
    images: list[ImagePart] = []
    for block in blocks:
        kind = getattr(block, "type", "")
        if kind == "image" and isinstance(data := getattr(block, "data", None), str) and data:
            images.append(received_image(str(getattr(block, "mime_type", "") or ""), data))
        elif kind == "resource":
            images += contents_parts([block.resource])[1]
    return tuple(images)


def _bounded(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1] + "…"
