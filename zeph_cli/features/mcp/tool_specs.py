"""What the model is told about mcp_list_resources and mcp_read_resource: name, kind, description and
argument schema.

Invariant: data only (the registry offers tools from declarations; the implementations in
`resource_tools.py` are imported when a tool is first used).
"""

from __future__ import annotations

from ...tools.specs import ToolDeclaration

GROUP = "MCP tools"  # the tool group: denied with the servers' own tools (worldbook isolation, a policy)

MCP_LIST_RESOURCES = ToolDeclaration(
    "mcp_list_resources",
    "read",
    "List the resources (documents, files, records) the connected MCP servers offer, and their resource "
    "templates (URI patterns to fill in). Each line gives the server, the URI, the name, the MIME type and "
    "the size when known. Read one with mcp_read_resource.",
    {
        "type": "object",
        "properties": {
            "server": {"type": "string", "description": "Only this server's resources (default: every server's)."},
        },
        "required": [],
    },
    ("zeph_cli.features.mcp.resource_tools", "ListResourcesTool"),
    GROUP,
)

MCP_READ_RESOURCE = ToolDeclaration(
    "mcp_read_resource",
    "read",
    "Read one resource of an MCP server by its URI (from mcp_list_resources, a resource link in a tool "
    "result, or a resource template filled in). Text comes back as text; images as images where the model "
    "takes them; other binary contents are described in one line.",
    {
        "type": "object",
        "properties": {
            "server": {"type": "string", "description": "The server's id, as mcp_list_resources shows it."},
            "uri": {"type": "string", "description": "The resource's URI, exactly as listed."},
        },
        "required": ["server", "uri"],
    },
    ("zeph_cli.features.mcp.resource_tools", "ReadResourceTool"),
    GROUP,
)
