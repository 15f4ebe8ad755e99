"""The reference MCP servers from the npm registry (server-everything, -filesystem, -memory), installed by
`npm ci --prefix tests/mcp_servers` (`.ci/run` does it): their commands, and the skip that says why when
node or the install is missing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

BIN = Path(__file__).parent / "mcp_servers" / "node_modules" / ".bin"
EVERYTHING = BIN / "mcp-server-everything"
FILESYSTEM = BIN / "mcp-server-filesystem"
MEMORY = BIN / "mcp-server-memory"


def _why_missing() -> str:
    if shutil.which("node") is None:
        return "the reference MCP servers need node (not on this machine)"
    if not EVERYTHING.exists():
        return "the reference MCP servers are not installed: run `npm ci --prefix tests/mcp_servers`"
    return ""


WHY_MISSING = _why_missing()
needs_node_servers = pytest.mark.skipif(bool(WHY_MISSING), reason=WHY_MISSING or "installed")
