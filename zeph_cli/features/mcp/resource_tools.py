"""`mcp_list_resources` and `mcp_read_resource`: the model's way to the MCP servers' resources.

Invariant: read-only (kind "read", offered in every mode while a running server declares resources);
they reach the servers through the tool context's `mcp_resources` (the manager) and end every refusal —
no servers, an unknown server or URI, a server without resources, a failed read — as one `ToolFailure`
line naming the culprit. What a server gives is tool output like any other (framed untrusted and cut to
the output budget by the tool runner); a read is also cut at `MAX_RESOURCE_CHARS` here, saying so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...tools.base import Tool, ToolContext, ToolResult
from ...tools.failures import ToolFailure
from ...messages import ImagePart
from .resources import ResourceError, cut, read_call
from .tool_specs import MCP_LIST_RESOURCES, MCP_READ_RESOURCE

if TYPE_CHECKING:
    from ...tools.resource_access import ResourceAccess
    from .resources import ResourceListing


def _access(name: str, context: ToolContext) -> ResourceAccess:
    access = context.mcp_resources
    if access is None:
        raise ToolFailure(f"{name}: no MCP servers are configured in this session")
    return access


def _text_argument(name: str, arguments: Mapping[str, Any], key: str) -> str:
    value = arguments.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ToolFailure(f"{name}: argument {key!r} is empty; mcp_list_resources shows the servers and URIs")
    return value.strip()


class ListResourcesTool(Tool, declared=MCP_LIST_RESOURCES):
    def subject(self, arguments: Mapping[str, Any]) -> str:
        return str(arguments.get("server") or "")

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        access = _access(self.name, context)
        server = arguments.get("server")
        server = server.strip() if isinstance(server, str) and server.strip() else None
        try:
            listings = await access.list_resources(server)
        except ResourceError as exc:
            raise ToolFailure(f"{self.name}: {exc}") from None
        if not listings:
            raise ToolFailure(f"{self.name}: no running MCP server offers resources")
        text = listing_text(listings)
        count = sum(len(listing.resources) for listing in listings)
        return ToolResult(text, summary=f"{count} resource{'' if count == 1 else 's'}")


class ReadResourceTool(Tool, declared=MCP_READ_RESOURCE):
    def kind_of_call(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        """A read from an untrusted server is asked about, as its tools are: the URI (a template filled in by
        the model) is sent to that server."""
        access = context.mcp_resources
        server = arguments.get("server")
        return "read" if access is not None and isinstance(server, str) and access.trusts(server) else "exec"

    def subject(self, arguments: Mapping[str, Any]) -> str:
        return f"{arguments.get('server', '')}:{arguments.get('uri', '')}"

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        access = _access(self.name, context)
        server = _text_argument(self.name, arguments, "server")
        uri = _text_argument(self.name, arguments, "uri")
        try:
            text, images = await access.read_resource(server, uri)
        except ResourceError as exc:
            raise ToolFailure(f"{self.name}: {exc}") from None
        text = cut(text) or "(the resource is empty)"
        lines = len(text.splitlines()) or 1
        summary = f"{server} · {lines} line{'' if lines == 1 else 's'}" + (f" · {len(images)} image" if images else "")
        return with_images(ToolResult(text, summary=summary), images)


def with_images(result: ToolResult, images: Sequence[ImagePart]) -> ToolResult:
    """`result` with the resource's images attached (a model that reads text only gets their placeholders,
    and the `[image: URI, MIME, N bytes]` line in the text says which is which)."""
    if not images:
        return result
    return dataclasses.replace(result, images=tuple(images))


def listing_text(listings: Sequence[ResourceListing]) -> str:
    """The servers' resources, one per line (`URI  NAME (MIME, SIZE) — DESCRIPTION`), then their templates."""
    out: list[str] = []
    for listing in listings:
        if listing.error:
            out.append(f"{listing.server}: {listing.error}")
            continue
        out.append(f"{listing.server}: {_count(len(listing.resources), 'resource')}, "
                   f"{_count(len(listing.templates), 'template')}")
        for resource in listing.resources:
            about = ", ".join(x for x in (resource.mime_type, f"{resource.size:,} bytes" if resource.size is not None else "") if x)
            line = f"  {resource.uri}  {resource.name}" + (f" ({about})" if about else "")
            out.append(line + (f" — {resource.description}" if resource.description else ""))
        if listing.templates:
            out.append("  templates (fill in the {…} parts, then read the URI):")
        for template in listing.templates:
            line = f"    {template.uri_template}  {template.name}" + (f" ({template.mime_type})" if template.mime_type else "")
            out.append(line + (f" — {template.description}" if template.description else ""))
    first = next((listing for listing in listings if listing.resources), None)
    if first is not None:
        out.append(f"Read one with {read_call(first.server, first.resources[0].uri)}.")
    return "\n".join(out)


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
