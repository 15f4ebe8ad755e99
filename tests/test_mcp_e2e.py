"""MCP end to end through the real `zeph` and the wire-level fake model: what reaches the
model (the skills layer, MCP tool schemas, tool results) and what the user is told."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import err, out, run_zeph
from tests.fakes import openai_wire

DEPLOY = """---
name: deploy
description: Ship the API service to staging, then production, with the release checklist.
triggers: [deploy, release, ship]
---
# Deploying
1. Run `make check` and make sure it is green.
2. Run `./scripts/deploy.sh staging` and watch the health endpoint for five minutes.
3. Only then run `./scripts/deploy.sh production`.
"""

MIGRATIONS = """---
name: sql-migrations
description: Write and apply SQL schema migrations safely with alembic.
triggers: [migration, alembic, schema change]
---
Always write a downgrade. Run `alembic upgrade head --sql` first and read the SQL.
"""


def _skill(root: Path, name: str, text: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(text)
    return folder


def _user_skills() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "zeph" / "skills"


def _reply(server, text: str = "Done.") -> None:
    server.queue(openai_wire.stream_response(openai_wire.text_chunks([text])))


def _call(server, name: str, arguments: dict) -> None:
    server.queue(openai_wire.stream_response(openai_wire.tool_call_chunks([("call_1", name, json.dumps(arguments))])))


def _requests(server):
    return server.requests_to("/v1/chat/completions")


def _system_text(request) -> str:
    return "\n".join(m["content"] for m in request.json["messages"] if m["role"] == "system")


def _tool_names(request) -> list[str]:
    return [t["function"]["name"] for t in request.json.get("tools") or []]


def _tool_results(request) -> list[str]:
    return [m["content"] for m in request.json["messages"] if m["role"] == "tool"]


# ---- MCP over stdio ----------------------------------------------------------------------------

TIME_SERVER = shutil.which("mcp-server-time") or str(Path(sys.executable).parent / "mcp-server-time")


def _mcp_config(tmp_path: Path, servers: str) -> dict[str, str]:
    path = tmp_path / "mcp.toml"
    path.write_text(servers)
    return {"ZEPH_CONFIG": str(path)}


TRUSTED_TIME = f"""
[[mcp.servers]]
id = "time"
command = "{TIME_SERVER}"
args = ["--local-timezone", "UTC"]
trusted = true
tool_allowlist = ["get_current_time"]
"""


@pytest.mark.skipif(not Path(TIME_SERVER).exists(), reason="mcp-server-time is a test dependency")
def test_an_mcp_tool_over_stdio_is_offered_called_and_its_result_reaches_the_model(fake_server, compatible, tmp_path):
    broken = '\n[[mcp.servers]]\nid = "broken"\ncommand = "/nonexistent/mcp-server"\n'
    env = {**compatible, **_mcp_config(tmp_path, TRUSTED_TIME + broken)}
    _call(fake_server, "time__get_current_time", {"timezone": "Europe/Paris"})
    _reply(fake_server, "It is evening in Paris.")
    result = run_zeph("ask", "What time is it in Paris?", env=env)
    assert result.returncode == 0, err(result)
    first, second = _requests(fake_server)[-2:]
    names = _tool_names(first)
    assert "time__get_current_time" in names
    assert "time__convert_time" not in names  # not on the allowlist
    schema = next(t for t in first.json["tools"] if t["function"]["name"] == "time__get_current_time")
    assert "timezone" in schema["function"]["parameters"]["properties"]
    results = _tool_results(second)
    assert len(results) == 1 and "Europe/Paris" in results[0] and "untrusted" in results[0]
    # the broken server is named once, and did not stop the turn
    assert err(result).count("broken") == 1, err(result)
    assert "It is evening in Paris." in out(result)


@pytest.mark.skipif(not Path(TIME_SERVER).exists(), reason="mcp-server-time is a test dependency")
def test_an_untrusted_server_s_tool_is_asked_about_and_refused_with_no_one_to_ask(fake_server, compatible, tmp_path):
    env = {**compatible, **_mcp_config(tmp_path, TRUSTED_TIME.replace("trusted = true", "trusted = false"))}
    _call(fake_server, "time__get_current_time", {"timezone": "UTC"})
    _reply(fake_server, "I could not check the time.")
    result = run_zeph("ask", "What time is it?", env=env)
    assert result.returncode == 0, err(result)
    results = _tool_results(_requests(fake_server)[-1])
    assert len(results) == 1 and "did not approve" in results[0] and "no one could approve it" in results[0]
