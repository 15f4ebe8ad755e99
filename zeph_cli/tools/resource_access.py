"""What mcp_list_resources and mcp_read_resource need of the MCP servers, as a protocol.

Invariant: imports nothing from the feature, so the tool context can name the servers' manager without
importing it (tools/ never imports features/ at run time).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class ResourceAccess(Protocol):
    def resource_servers(self) -> list[str]: ...

    def trusts(self, server_id: str) -> bool: ...

    async def list_resources(self, server_id: str | None = None) -> Sequence[Any]: ...

    async def read_resource(self, server_id: str, uri: str) -> tuple[str, Sequence[Any]]: ...
