"""McpManager against real servers: mcp-server-time and mcp-server-git over stdio, and the fake
MCPServer over streamable HTTP (tools, nested schemas, a raising tool, a prompt, header expansion)."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zeph_cli.config.mcp import McpServerEntry
from zeph_cli.features.mcp.manager import McpManager, PromptError
from zeph_cli.agent.tool_calls import CallChecks, ToolCallRunner
from zeph_cli.tools.base import ToolContext, ToolSet
from zeph_cli.tools.confinement import Confinement
from zeph_cli.tools.failures import ToolFailure
from zeph_cli.tools.permissions import PermissionPolicy, approve_all
from tests.fakes import mcp_http

BIN = Path(sys.executable).parent
TIME_SERVER = shutil.which("mcp-server-time") or str(BIN / "mcp-server-time")
GIT_SERVER = shutil.which("mcp-server-git") or str(BIN / "mcp-server-git")
TOKEN_ENV = {"FAKE_TOKEN": "s3cret-token"}


@pytest.fixture(scope="module")
def http_server():
    server = mcp_http.start()
    yield server
    server.stop()


def _http(server, **kw) -> McpServerEntry:
    return McpServerEntry(id=kw.pop("id", "fake"), url=server.url, headers={"X-Fake-Token": "${FAKE_TOKEN}"}, **kw)


def _manager(tmp_path: Path, *entries: McpServerEntry, env=TOKEN_ENV, **kw) -> McpManager:
    return McpManager(entries, env=env, cwd=tmp_path, log_dir=tmp_path / "mcp", **kw)


async def test_stdio_time_server_tools_and_a_call(tmp_path):
    manager = _manager(tmp_path, McpServerEntry(id="time", command=TIME_SERVER, args=("--local-timezone", "UTC")))
    try:
        assert await manager.start() == []
        tools = {t.name: t for t in manager.tools()}
        assert set(tools) == {"time__get_current_time", "time__convert_time"}
        tool = tools["time__get_current_time"]
        assert tool.server_id == "time" and tool.kind == "exec"
        assert "timezone" in tool.parameters["properties"]
        result = await tool.run({"timezone": "Asia/Tokyo"}, None)  # type: ignore[arg-type]
        assert not result.is_error and "Asia/Tokyo" in json.loads(result.content)["timezone"]
        [status] = manager.status()
        assert (status.state, status.transport) == ("running", "stdio")
        assert status.log_path == tmp_path / "mcp" / "time.log" and status.log_path.exists()
    finally:
        await manager.aclose()
    await manager.aclose()  # idempotent
    assert manager.tools() == []


async def test_stdio_git_server_runs_in_the_workspace(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.txt").write_text("hello\n")
    manager = _manager(tmp_path, McpServerEntry(id="git", command=GIT_SERVER, trusted=True, timeout=20))
    try:
        assert await manager.start() == []
        tools = {t.name: t for t in manager.tools()}
        assert "git__git_status" in tools and tools["git__git_status"].kind == "read"
        result = await tools["git__git_status"].run({"repo_path": str(tmp_path)}, None)  # type: ignore[arg-type]
        assert "a.txt" in result.content
    finally:
        await manager.aclose()


async def test_a_server_that_exits_at_start_is_reported_with_the_last_line_of_its_log(tmp_path):
    not_a_repo = tmp_path / "plain"
    not_a_repo.mkdir()
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "git.log").write_text("an older run's last words\n")  # the log is appended to
    (tmp_path / "mcp" / "git.log.1").write_text("x")
    entry = McpServerEntry(id="git", command=GIT_SERVER, args=("--repository", str(not_a_repo)), timeout=20)
    manager = _manager(tmp_path, entry)
    try:
        [note] = await manager.start()
        assert note.startswith("MCP server git did not start: ") and "\n" not in note
        assert f"its log ends: 'ERROR:mcp_server_git.server:{not_a_repo} is not a valid Git repository'" in note
        assert "older run" not in note
        assert "older run" in (tmp_path / "mcp" / "git.log").read_text()  # small logs are kept
        # a log past 1 MiB is moved aside when the server starts again
        (tmp_path / "mcp" / "git.log").write_text("y" * (1 << 20) + "\nbig\n")
        again = _manager(tmp_path, entry)
        await again.start()
        await again.aclose()
        assert (tmp_path / "mcp" / "git.log.1").read_text().endswith("\nbig\n")
        assert (tmp_path / "mcp" / "git.log").stat().st_size < 10_000
    finally:
        await manager.aclose()


async def test_a_missing_command_and_an_unset_variable_fail_with_one_line_each(tmp_path, http_server):
    manager = _manager(
        tmp_path,
        McpServerEntry(id="broken", command="/nonexistent/server"),
        McpServerEntry(id="nokey", url=http_server.url, headers={"X-Fake-Token": "${NOT_SET_ANYWHERE}"}),
        env={},
    )
    try:
        notes = await manager.start()
        assert len(notes) == 2
        assert "broken" in notes[0] and "/nonexistent/server" in notes[0]
        assert notes[1] == "MCP server nokey did not start: headers.X-Fake-Token refers to ${NOT_SET_ANYWHERE}, which is not set"
        assert [s.state for s in manager.status()] == ["failed", "failed"]
        assert manager.tools() == [] and manager.take_warnings() == []
    finally:
        await manager.aclose()


async def test_a_url_may_name_a_variable_and_messages_never_show_its_value(tmp_path, http_server):
    down = McpServerEntry(id="down", url="http://127.0.0.1:9/mcp?key=${API_KEY}", timeout=5)
    unset = McpServerEntry(id="unset", url="http://127.0.0.1:9/mcp?key=${NOT_SET_ANYWHERE}")
    works = McpServerEntry(id="fake", url=http_server.url.replace("/mcp", "/${MCP_PATH}"),
                           headers={"X-Fake-Token": "${FAKE_TOKEN}"})
    manager = _manager(tmp_path, down, unset, works, env={**TOKEN_ENV, "API_KEY": "k3y-value", "MCP_PATH": "mcp"})
    try:
        notes = await manager.start()
        assert notes[0].startswith("MCP server down did not start: could not connect to http://127.0.0.1:9/mcp?key=${API_KEY}")
        assert notes[1] == "MCP server unset did not start: url refers to ${NOT_SET_ANYWHERE}, which is not set"
        assert len(notes) == 2 and "k3y-value" not in " ".join(notes)
        assert [s.state for s in manager.status()] == ["failed", "failed", "running"]
    finally:
        await manager.aclose()


async def test_a_tool_whose_description_looks_like_an_injection_is_named_once_and_withheld(tmp_path, http_server):
    manager = _manager(tmp_path, _http(http_server))
    try:
        assert await manager.start() == []
        sly = next(t for t in manager.tools() if t.name == "fake__sly")
        assert "Ignore all previous" not in sly.spec().description
        [warning] = manager.take_warnings()
        assert warning.startswith("MCP server fake: the description of sly matched a prompt-injection pattern")
        manager.tools()
        assert manager.take_warnings() == []
    finally:
        await manager.aclose()


async def test_a_wrong_header_is_refused_by_the_server(tmp_path, http_server):
    manager = _manager(tmp_path, _http(http_server), env={"FAKE_TOKEN": "wrong"})
    try:
        [note] = await manager.start()
        assert note == f"MCP server fake did not start: {http_server.url} answered HTTP 401 Unauthorized"
    finally:
        await manager.aclose()


async def test_http_tools_allowlist_prompts_and_errors(tmp_path, http_server):
    manager = _manager(tmp_path, _http(http_server, tool_allowlist=("echo", "plan_trip", "explode", "nosuch")))
    try:
        assert await manager.start() == []
        tools = {t.name: t for t in manager.tools()}
        assert set(tools) == {"fake__echo", "fake__plan_trip", "fake__explode"}
        [warning] = manager.take_warnings()
        assert "nosuch" in warning and manager.take_warnings() == []
        assert tools["fake__echo"].read_only and not tools["fake__plan_trip"].read_only
        schema = tools["fake__plan_trip"].parameters
        assert "$defs" in json.dumps(schema)  # passed through as the server wrote it
        trip = {"trip": {"traveller": {"name": "Ada"}, "stops": [{"city": "Lyon", "nights": 2}]}}
        result = await tools["fake__plan_trip"].run(trip, None)  # type: ignore[arg-type]
        assert result.content == "Ada visits Lyon (2 nights)"
        failed = await tools["fake__explode"].run({"reason": "on purpose"}, None)  # type: ignore[arg-type]
        assert failed.is_error and "explode" in failed.content  # the server's own error text
        [(server, prompt)] = await manager.list_prompts()
        assert (server, prompt.name) == ("fake", "review")
        assert [(a[0], a[1]) for a in prompt.arguments] == [("path", True), ("focus", False)]
        text = await manager.get_prompt("fake", "review", {"path": "app.py"})
        assert text == [("user", "Review app.py with a focus on bugs.")]
        with pytest.raises(PromptError, match="needs the argument"):
            await manager.get_prompt("fake", "review", {})
        with pytest.raises(PromptError, match="no prompt 'nope'"):
            await manager.get_prompt("fake", "nope", {})
    finally:
        await manager.aclose()


async def test_results_go_through_redaction_and_the_runner(tmp_path, http_server):
    manager = _manager(tmp_path, _http(http_server, trusted=True))
    try:
        await manager.start()
        tools = {t.name: t for t in manager.tools()}
        context = ToolContext(confinement=Confinement(tmp_path), cwd=tmp_path)
        runner = _runner(tools, context)
        secret = "sk-ant-api03-" + "x" * 80
        from zeph_cli.messages import ToolCallPart

        outcome = await runner.run(ToolCallPart("c1", "fake__echo", {"text": f"key {secret}"}))
        assert outcome.decision == "auto" and not outcome.result.is_error
        assert outcome.result.content.startswith("echo: key") and secret not in outcome.result.content
        # a long result is cut to the limit and kept whole for read_overflow
        runner.output_limit = lambda text: 2_000
        outcome = await runner.run(ToolCallPart("c3", "fake__echo", {"text": "word " * 5_000}))
        assert outcome.kept_output_id and len(outcome.result.content) < 3_000
        assert outcome.kept_output_id in outcome.result.content
        # arguments of any shape reach the server (the nested object is not rejected as a non-string)
        trip = {"trip": {"traveller": {"name": "Bo", "age": 3}, "stops": []}}
        outcome = await runner.run(ToolCallPart("c2", "fake__plan_trip", trip))
        assert outcome.result.content == "Bo visits "
    finally:
        await manager.aclose()


def _runner(tools, context, policy=None):
    from zeph_cli.store import ConversationStore, ToolLog
    from zeph_cli.store.database import open_database

    db = open_database(context.cwd / "t.db")
    conversation = ConversationStore(db).create_conversation(provider="p", model="m", cwd=str(context.cwd))
    return ToolCallRunner(tools=ToolSet(dict(tools)), context=context,
                          checks=CallChecks(policy or PermissionPolicy(), approve_all), log=ToolLog(db),
                          conversation_id=conversation.id)


async def test_a_server_that_dies_is_reported_once_and_its_tools_withdrawn(tmp_path):
    server = mcp_http.start()
    manager = _manager(tmp_path, _http(server))
    try:
        await manager.start()
        tools = {t.name: t for t in manager.tools()}
        assert [w for w in manager.take_warnings() if "fake__sly" not in w and "of sly" not in w] == []
        started = time.monotonic()
        with pytest.raises(ToolFailure, match="MCP server fake"):
            await tools["fake__crash"].run({}, None)  # type: ignore[arg-type]
        assert time.monotonic() - started < 20
        with pytest.raises(ToolFailure, match="MCP server fake is not running"):
            await tools["fake__echo"].run({"text": "hi"}, None)  # type: ignore[arg-type]
        [warning] = manager.take_warnings()
        assert warning.startswith("MCP server fake stopped")
        assert manager.take_warnings() == [] and manager.tools() == []
        assert manager.status()[0].state == "failed"
    finally:
        await manager.aclose()
        server.stop()


def _silent_server(marker: str) -> McpServerEntry:
    """A process that never speaks MCP: it neither answers nor exits (the marker finds it in `ps`)."""
    return McpServerEntry(id="silent", command=sys.executable,
                          args=("-c", "import time; time.sleep(300)", marker), timeout=30)


def _running(marker: str) -> bool:
    return subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0


async def test_closing_while_a_server_is_still_starting_stops_it_at_once(tmp_path):
    """Ctrl-C or quitting during the first turn: the start is abandoned, the process stopped, nothing hangs."""
    marker = f"zeph-silent-{time.monotonic_ns()}"
    manager = _manager(tmp_path, _silent_server(marker))
    starting = asyncio.ensure_future(manager.start())
    await asyncio.sleep(1.0)
    assert _running(marker) and not starting.done()
    begun = time.monotonic()
    await asyncio.wait_for(manager.aclose(), 25)  # a guard against a hang, not a speed check
    assert await asyncio.wait_for(starting, 25) == []  # closed on purpose: not a failure to report
    assert time.monotonic() - begun < 12  # well inside the 30 s start timeout: close did not wait for it
    for _ in range(300):  # 30 s at most: a bound on a hang
        if not _running(marker):
            break
        await asyncio.sleep(0.1)
    assert not _running(marker)


async def test_a_server_that_does_not_answer_is_named_at_its_timeout_stdio_and_http(tmp_path):
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)  # accepts connections, never answers
    port = listener.getsockname()[1]
    marker = f"zeph-silent-{time.monotonic_ns()}"
    silent = McpServerEntry(id="silent", command=sys.executable, args=("-c", "import time; time.sleep(300)", marker),
                            timeout=2)
    mute = McpServerEntry(id="mute", url=f"http://127.0.0.1:{port}/mcp", timeout=2)
    manager = _manager(tmp_path, silent, mute)
    try:
        notes = await manager.start()
        assert notes == ["MCP server silent did not start: did not answer within 2 s",
                         "MCP server mute did not start: did not answer within 2 s"]
    finally:
        await manager.aclose()
        listener.close()
    for _ in range(300):  # 30 s at most: a bound on a hang
        if not _running(marker):
            break
        await asyncio.sleep(0.1)
    assert not _running(marker)
