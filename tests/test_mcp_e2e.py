"""MCP end to end through the real `zeph` and the wire-level fake model: what reaches the
model (MCP tool schemas, tool results) and what the user is told."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import err, out, run_zeph
from tests.chat_wire import chat_requests, queue_call, queue_reply, tool_names, tool_results


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
    queue_call(fake_server, "time__get_current_time", {"timezone": "Europe/Paris"})
    queue_reply(fake_server, "It is evening in Paris.")
    result = run_zeph("ask", "What time is it in Paris?", env=env)
    assert result.returncode == 0, err(result)
    first, second = chat_requests(fake_server)[-2:]
    names = tool_names(first)
    assert "time__get_current_time" in names
    assert "time__convert_time" not in names  # not on the allowlist
    schema = next(t for t in first.json["tools"] if t["function"]["name"] == "time__get_current_time")
    assert "timezone" in schema["function"]["parameters"]["properties"]
    results = tool_results(second)
    assert len(results) == 1 and "Europe/Paris" in results[0] and "untrusted" in results[0]
    # the broken server is named once, and did not stop the turn
    assert err(result).count("broken") == 1, err(result)
    assert "It is evening in Paris." in out(result)


@pytest.mark.skipif(not Path(TIME_SERVER).exists(), reason="mcp-server-time is a test dependency")
def test_an_untrusted_server_s_tool_is_asked_about_and_refused_with_no_one_to_ask(fake_server, compatible, tmp_path):
    env = {**compatible, **_mcp_config(tmp_path, TRUSTED_TIME.replace("trusted = true", "trusted = false"))}
    queue_call(fake_server, "time__get_current_time", {"timezone": "UTC"})
    queue_reply(fake_server, "I could not check the time.")
    result = run_zeph("ask", "What time is it?", env=env)
    assert result.returncode == 0, err(result)
    results = tool_results(chat_requests(fake_server)[-1])
    assert len(results) == 1 and "did not approve" in results[0] and "no one could approve it" in results[0]


# ---- MCP over streamable HTTP ------------------------------------------------------------------

from tests.fakes import mcp_http  # noqa: E402


@pytest.fixture(scope="module")
def http_server():
    server = mcp_http.start()
    yield server
    server.stop()


def _http_config(tmp_path: Path, url: str, *, trusted: bool = True) -> dict[str, str]:
    servers = f"""
[[mcp.servers]]
id = "fake"
url = "{url}"
headers = {{ X-Fake-Token = "${{FAKE_TOKEN}}" }}
trusted = {str(trusted).lower()}
tool_allowlist = ["echo", "plan_trip", "explode", "crash"]
"""
    return {**_mcp_config(tmp_path, servers), "FAKE_TOKEN": "s3cret-token"}


def test_an_mcp_tool_over_http_gets_nested_arguments_and_its_result_reaches_the_model(fake_server, compatible, tmp_path, http_server):
    env = {**compatible, **_http_config(tmp_path, http_server.url)}
    trip = {"trip": {"traveller": {"name": "Ada", "age": 36}, "stops": [{"city": "Lyon", "nights": 2}, {"city": "Nice", "nights": 1}]}}
    queue_call(fake_server, "fake__plan_trip", trip)
    queue_reply(fake_server, "Ada's trip is planned.")
    result = run_zeph("ask", "Plan Ada's trip", env=env)
    assert result.returncode == 0, err(result)
    first, second = chat_requests(fake_server)[-2:]
    names = tool_names(first)
    assert {"fake__echo", "fake__plan_trip", "fake__explode", "fake__crash"} <= set(names)
    assert "fake__hidden" not in names
    schema = next(t for t in first.json["tools"] if t["function"]["name"] == "fake__plan_trip")["function"]["parameters"]
    assert "$defs" in schema and "traveller" in json.dumps(schema)
    [text] = tool_results(second)
    assert "Ada visits Lyon (2 nights), Nice (1 nights)" in text and "untrusted" in text
    assert "Ada's trip is planned." in out(result)
    assert "warning" not in err(result), err(result)


def test_a_raising_mcp_tool_gives_an_error_result_and_the_turn_goes_on(fake_server, compatible, tmp_path, http_server):
    env = {**compatible, **_http_config(tmp_path, http_server.url)}
    queue_call(fake_server, "fake__explode", {"reason": "test"})
    queue_call(fake_server, "fake__echo", {"text": "still here"})
    queue_reply(fake_server, "Recovered.")
    result = run_zeph("ask", "Try the tools", env=env)
    assert result.returncode == 0, err(result)
    requests = chat_requests(fake_server)
    [failed] = tool_results(requests[-2])
    assert 'status="error"' in failed and "explode" in failed
    assert "echo: still here" in tool_results(requests[-1])[-1]
    assert "Recovered." in out(result)


def test_an_untrusted_http_server_s_tool_runs_when_a_rule_allows_it(fake_server, compatible, tmp_path, http_server):
    env = {**compatible, **_http_config(tmp_path, http_server.url, trusted=False)}
    config = Path(env["ZEPH_CONFIG"])
    config.write_text('[tools]\nallow = ["fake__echo"]\ndeny = ["fake__ex*"]\n' + config.read_text())
    queue_call(fake_server, "fake__echo", {"text": "allowed"})
    queue_call(fake_server, "fake__explode", {"reason": "denied"})
    queue_reply(fake_server, "Done.")
    result = run_zeph("ask", "Use the tools", env=env)
    assert result.returncode == 0, err(result)
    requests = chat_requests(fake_server)
    assert "echo: allowed" in tool_results(requests[-2])[-1]
    assert "tools.deny rule 'fake__ex*'" in tool_results(requests[-1])[-1]


def test_a_server_that_dies_mid_session_is_named_and_the_turn_goes_on(fake_server, compatible, tmp_path):
    server = mcp_http.start()
    try:
        env = {**compatible, **_http_config(tmp_path, server.url)}
        queue_call(fake_server, "fake__crash", {})
        queue_call(fake_server, "fake__echo", {"text": "anyone?"})
        queue_reply(fake_server, "The server is gone.")
        result = run_zeph("ask", "Crash it", env=env, timeout=60)
    finally:
        server.stop()
    assert result.returncode == 0, err(result)
    requests = chat_requests(fake_server)
    crashed = tool_results(requests[-2])[-1]
    assert 'status="error"' in crashed and "MCP server fake" in crashed
    after = tool_results(requests[-1])[-1]
    assert "MCP server fake is not running" in after
    assert "The server is gone." in out(result)


def test_zeph_mcp_list_prompts_and_prompt(tmp_path, http_server, fake_server, compatible):
    broken = '\n[[mcp.servers]]\nid = "broken"\ncommand = "/nonexistent/mcp-server"\n'
    broken += '\n[[mcp.servers]]\nid = "down"\nurl = "http://127.0.0.1:9/mcp"\ntimeout = 5\n'  # nothing listens
    broken += TRUSTED_TIME.replace('["get_current_time"]', '["get_current_time", "get_time"]')  # a typo
    env = _http_config(tmp_path, http_server.url)
    Path(env["ZEPH_CONFIG"]).write_text(Path(env["ZEPH_CONFIG"]).read_text() + broken)
    listed = run_zeph("mcp", "list", env=env)
    assert listed.returncode == 0, err(listed)
    assert "fake\thttp\trunning" in out(listed) and "echo, plan_trip, explode, crash" in out(listed)
    assert "broken\tstdio\tfailed (command not found: /nonexistent/mcp-server)" in out(listed)
    assert "down\thttp\tfailed (could not connect to http://127.0.0.1:9/mcp" in out(listed)
    assert "time\tstdio\trunning\n  tools: get_current_time\n" in out(listed)
    assert "MCP server time: tool_allowlist names 'get_time', which the server does not offer" in err(listed)
    rows = json.loads(out(run_zeph("mcp", "list", "--json", env=env)))
    assert [(r["id"], r["state"]) for r in rows] == [
        ("fake", "running"), ("broken", "failed"), ("down", "failed"), ("time", "running")]

    prompts = run_zeph("mcp", "prompts", env=env)
    assert "fake\treview\tpath* focus" in out(prompts) and err(prompts).count("broken") == 1
    assert err(prompts).count("could not connect to http://127.0.0.1:9/mcp") == 1

    rendered = run_zeph("mcp", "prompt", "fake", "review", "path=app.py", "focus=speed", env=env)
    assert rendered.returncode == 0, err(rendered)
    assert out(rendered) == "Review app.py with a focus on speed.\n"
    missing = run_zeph("mcp", "prompt", "fake", "review", env=env)
    assert missing.returncode == 1 and err(missing).strip().count("\n") == 0 and "path" in err(missing)
    unknown = run_zeph("mcp", "prompt", "fake", "nope", env=env)
    assert unknown.returncode == 1 and "no prompt 'nope'" in err(unknown)

    # piped into zeph ask, the prompt is the user's message
    queue_reply(fake_server, "Reviewed.")
    asked = run_zeph("ask", input=out(rendered), env={**compatible, **env})
    assert asked.returncode == 0, err(asked)
    user = [m["content"] for m in chat_requests(fake_server)[-1].json["messages"] if m["role"] == "user"]
    assert "Review app.py with a focus on speed." in str(user[-1])


GIT_SERVER = shutil.which("mcp-server-git") or str(Path(sys.executable).parent / "mcp-server-git")


def test_in_a_small_budget_the_least_relevant_mcp_tools_are_left_out_not_every_tool(fake_server, compatible, tmp_path):
    """12 git tools do not fit a quarter of a 5,500-token budget beside the built-in tools: the git tools
    least relevant to the message go, the built-in ones and the relevant ones stay; said once."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    servers = f'[[mcp.servers]]\nid = "git"\ncommand = "{GIT_SERVER}"\nargs = ["--repository", "{repo}"]\n'
    env = {**compatible, **_mcp_config(tmp_path, servers), "ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": "5500"}
    queue_reply(fake_server, "Here is the log.")
    result = run_zeph("ask", "Show me the git log of the recent commits", env=env, cwd=repo)
    assert result.returncode == 0, err(result)
    names = tool_names(chat_requests(fake_server)[-1])
    git = [n for n in names if n.startswith("git__")]
    assert "read_file" in names and "bash" in names  # the built-in tools stay
    assert 0 < len(git) < 12 and "git__git_log" in git, (names, err(result))
    warnings = [line for line in err(result).splitlines() if "MCP tools left out" in line]
    assert len(warnings) == 1 and f"{12 - len(git)} of 12 MCP tools left out" in warnings[0], err(result)

    # a budget too small for the built-in tools alone: no tools, and the figure given is theirs
    queue_reply(fake_server, "No tools here.")
    tiny = run_zeph("ask", "Show me the git log", env={**env, "ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": "2000"}, cwd=repo)
    assert tiny.returncode == 0, err(tiny)
    assert tool_names(chat_requests(fake_server)[-1]) == []
    [dropped] = [line for line in err(tiny).splitlines() if "running without tools" in line]
    queue_reply(fake_server, "Still none.")
    without_mcp = run_zeph("ask", "Show me the git log", env={**compatible, "ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": "2000"},
                           cwd=repo)
    assert without_mcp.returncode == 0 and dropped in err(without_mcp)  # the same figure as with no MCP server
