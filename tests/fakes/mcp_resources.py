"""A small MCP server over stdio (the SDK's low-level server) for what the reference servers do not do with
resources: `python tests/fakes/mcp_resources.py`.

Resources, listed three to a page (so every page must be read): `fake://note/1` … `fake://note/5` (text),
`fake://big` (text of BIG_CHARS characters, past what one read keeps), `fake://dot.png` (a 1×1 PNG as a
blob), `fake://data.bin` (a non-image blob); one template `fake://note/{n}`. Tool `embed_image` returns
the PNG as an embedded resource. No tools list paging, prompts or logging.
"""

from __future__ import annotations

import base64

BIG_CHARS = 450_000
PAGE = 3
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c63f8cfc0f01f00050001ff89993d1d0000000049454e44ae426082")).decode()
BIN = base64.b64encode(bytes(range(256)) * 4).decode()


def _resources():
    from mcp import types

    notes = [types.Resource(uri=f"fake://note/{n}", name=f"note {n}", mime_type="text/plain") for n in range(1, 6)]
    return [*notes,
            types.Resource(uri="fake://big", name="big", mime_type="text/plain", size=BIG_CHARS),
            types.Resource(uri="fake://dot.png", name="dot", mime_type="image/png"),
            types.Resource(uri="fake://data.bin", name="data", mime_type="application/octet-stream")]


def build():
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    async def list_resources(ctx, params):
        start = int(params.cursor) if params is not None and params.cursor else 0
        every = _resources()
        more = start + PAGE < len(every)
        return types.ListResourcesResult(resources=every[start:start + PAGE],
                                         next_cursor=str(start + PAGE) if more else None)

    async def list_templates(ctx, params):
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template="fake://note/{n}", name="a note", mime_type="text/plain")])

    async def read_resource(ctx, params):
        uri = str(params.uri)
        if uri.startswith("fake://note/"):
            contents = [types.TextResourceContents(uri=uri, mime_type="text/plain", text=f"note {uri.rsplit('/', 1)[1]}")]
        elif uri == "fake://big":
            contents = [types.TextResourceContents(uri=uri, mime_type="text/plain", text="x" * BIG_CHARS)]
        elif uri == "fake://dot.png":
            contents = [types.BlobResourceContents(uri=uri, mime_type="image/png", blob=PNG)]
        elif uri == "fake://data.bin":
            contents = [types.BlobResourceContents(uri=uri, mime_type="application/octet-stream", blob=BIN)]
        else:
            raise MCPError(code=-32002, message=f"no resource {uri}")
        return types.ReadResourceResult(contents=contents)

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=[types.Tool(name="embed_image", description="A PNG, embedded.",
                                                       input_schema={"type": "object", "properties": {}})])

    async def call_tool(ctx, params):
        blob = types.BlobResourceContents(uri="fake://dot.png", mime_type="image/png", blob=PNG)
        return types.CallToolResult(content=[types.EmbeddedResource(type="resource", resource=blob)])

    return Server("fake-resources", on_list_resources=list_resources, on_list_resource_templates=list_templates,
                  on_read_resource=read_resource, on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    from mcp.server.stdio import stdio_server

    server = build()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    import anyio

    anyio.run(main)
