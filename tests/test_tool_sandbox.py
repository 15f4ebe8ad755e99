"""The OS sandbox for real: commands through the real BashTool under real Landlock (and bubblewrap).

These tests run as root here; Landlock confines root too, which the canary tests show.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path

import pytest

from zeph_cli.agent import Agent, AgentWarning, ToolCallFinished
from zeph_cli.config import SandboxConfig, load_config
from zeph_cli.paths import database_path
from zeph_cli.providers import create_provider, resolve_settings
from zeph_cli.store import ConversationStore, open_database
from zeph_cli.tools.base import ToolContext
from zeph_cli.tools.confinement import Confinement
from zeph_cli.tools.failures import ToolFailure
from zeph_cli.tools.sandbox import Sandbox
from zeph_cli.tools.sandbox.bubblewrap import probe_bubblewrap
from zeph_cli.tools.sandbox.landlock_backend import probe_landlock
from zeph_cli.tools.shell import BashTool
from tests.agent_helpers import AGENTS, close_agents  # noqa: F401  (autouse fixture)
from tests.cli_helpers import err, out, run_zeph
from tests.fakes import openai_wire
from tests.tool_helpers import root as workspace  # noqa: F401  (fixture: an empty workspace)

LANDLOCK_PROBLEM = probe_landlock()
needs_landlock = pytest.mark.skipif(LANDLOCK_PROBLEM is not None, reason=f"Landlock: {LANDLOCK_PROBLEM}")
BWRAP_PATH, BWRAP_PROBLEM = probe_bubblewrap()
# Inside another sandbox (this suite run by zeph, say) the wall cannot be built: a new /proc cannot be mounted.
needs_wall = pytest.mark.skipif(BWRAP_PATH is None, reason=f"the bubblewrap wall: {BWRAP_PROBLEM}")


@pytest.fixture
def outside(tmp_path: Path):
    """A directory outside the workspace holding a canary file, outside /tmp too where it can be (commands
    have a private /tmp, which would hide it rather than refuse writing it; inside another sandbox,
    where /var/tmp is read-only and the wall cannot be built, tmp_path does)."""
    try:
        directory = Path(tempfile.mkdtemp(prefix="zeph-outside-", dir="/var/tmp"))
    except OSError:
        directory = tmp_path / "outside"
        directory.mkdir()
    (directory / "canary.txt").write_text("still here\n")
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def sandboxed(workspace: Path, backend: str = "auto", **settings) -> ToolContext:
    sandbox = Sandbox(SandboxConfig(**settings), [workspace], cwd=workspace, backend=backend)
    return ToolContext(Confinement(workspace), workspace, sandbox=sandbox)


async def bash(context: ToolContext, command: str):
    return await BashTool().run({"command": command}, context)


# ---- confinement ---------------------------------------------------------------------------------


@needs_landlock
@needs_wall
async def test_destructive_command_outside_the_workspace_leaves_the_canary_and_says_why(workspace, outside):
    context = sandboxed(workspace)
    result = await bash(context, f"rm -rf {outside}/*")
    assert (outside / "canary.txt").read_text() == "still here\n"
    assert result.is_error and result.exit_code == 1
    assert "Read-only file system" in result.content
    note = result.content.splitlines()[-1]
    assert note.startswith(f"[sandbox: writing {outside / 'canary.txt'} was refused")
    assert str(workspace) in note and "allow_write" in note and "allowed_paths" in note


@needs_landlock
async def test_landlock_confines_root_too(workspace, outside):
    context = sandboxed(workspace)
    result = await bash(context, f"id -u; echo overwritten > {outside}/canary.txt")
    inside = "65534" if os.geteuid() == 0 and BWRAP_PATH else str(os.geteuid())  # root is nobody inside the wall
    assert result.content.splitlines()[0] == inside
    assert (outside / "canary.txt").read_text() == "still here\n"
    assert result.is_error


@needs_landlock
@needs_wall
async def test_writes_in_the_workspace_and_the_private_temp_dir_work(workspace):
    context = sandboxed(workspace)
    result = await bash(
        context,
        'mkdir -p sub && echo hi > sub/a && mv sub/a b && cat b && t=$(mktemp) && echo x > "$t" && cat "$t" && echo "$TMPDIR"',
    )
    assert not result.is_error, result.content
    lines = result.content.splitlines()
    assert lines[:2] == ["hi", "x"]
    assert lines[2] == "/tmp"  # inside the wall, /tmp is the sandbox's own
    assert (workspace / "b").read_text() == "hi\n"


@needs_landlock
@needs_wall
async def test_the_temp_dir_is_private_not_all_of_tmp(workspace, tmp_path):
    (tmp_path / "host-file").write_text("on the host\n")
    context = sandboxed(workspace)
    result = await bash(context, f"touch {tmp_path}/shared-tmp-file; cat {tmp_path}/host-file")
    assert result.is_error and not (tmp_path / "shared-tmp-file").exists()
    assert "on the host" not in result.content
    assert "commands have a private /tmp" in result.content and "allow_read" in result.content
    kept = await bash(context, "echo kept > /tmp/note")  # /tmp lasts from one command to the next
    assert not kept.is_error
    again = await bash(context, "cat /tmp/note")
    assert again.content == "kept"
    shown = await bash(sandboxed(workspace, allow_read=(str(tmp_path / "host-file"),)), f"cat {tmp_path}/host-file")
    assert shown.content == "on the host"


@needs_landlock
async def test_allow_write_makes_an_outside_directory_writable(workspace, outside):
    context = sandboxed(workspace, allow_write=(str(outside),))
    result = await bash(context, f"echo new > {outside}/canary.txt && cat {outside}/canary.txt")
    assert not result.is_error and result.content == "new"


@needs_landlock
async def test_read_only_profile_refuses_workspace_writes_but_reads_and_temp_work(workspace):
    (workspace / "notes.txt").write_text("the answer is 42\n")
    context = sandboxed(workspace, profile="read-only")
    result = await bash(context, 'cat notes.txt && echo t > "$TMPDIR/t" && echo changed > notes.txt')
    assert (workspace / "notes.txt").read_text() == "the answer is 42\n"
    assert result.is_error and result.content.startswith("the answer is 42")
    assert f"[sandbox: writing {workspace / 'notes.txt'} was refused" in result.content
    assert "profile = \"workspace\"" in result.content  # how to allow it from read-only


@pytest.mark.parametrize("settings", [{"profile": "off"}, {"enabled": False}], ids=["profile-off", "disabled"])
async def test_off_runs_unconfined(workspace, outside, settings):
    context = sandboxed(workspace, **settings)
    result = await bash(context, f"rm -rf {outside}/* && echo gone")
    assert result.content == "gone" and not (outside / "canary.txt").exists()
    assert context.sandbox.state().line().startswith("sandbox: off (")


@needs_landlock
async def test_commands_get_the_default_sigpipe(workspace):
    result = await bash(sandboxed(workspace), "yes | head -2")
    assert result.content == "y\ny" and not result.is_error  # no "Broken pipe": Python's ignored SIGPIPE is not passed on


@needs_landlock
@needs_wall
async def test_device_nodes_and_signals_outside_get_a_note(workspace):
    made = await bash(sandboxed(workspace), "mknod disk b 7 0")
    assert made.is_error and "cannot make device nodes" in made.content.splitlines()[-1]
    killed = await bash(sandboxed(workspace), "kill -9 1")
    assert killed.is_error and "signal only the processes they started" in killed.content.splitlines()[-1]


@needs_landlock
async def test_a_command_still_fails_normally_without_a_sandbox_note(workspace):
    context = sandboxed(workspace)
    result = await bash(context, "ls does-not-exist")
    assert result.is_error and "[sandbox" not in result.content


@needs_landlock
async def test_a_workspace_landlock_py_cannot_replace_the_real_package(workspace, outside):
    (workspace / "landlock.py").write_text("raise SystemExit(0)\n")
    context = sandboxed(workspace)
    await bash(context, f"rm -rf {outside}/*")
    assert (outside / "canary.txt").exists()


# ---- network ---------------------------------------------------------------------------------------



@needs_landlock
@needs_wall
async def test_allow_network_false_cuts_even_loopback_to_the_host(workspace, outside):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    try:
        connect = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"
        open_result = await bash(sandboxed(workspace, allow_network=True), connect)
        closed = sandboxed(workspace)  # the default
        closed_result = await bash(closed, connect)
        write_result = await bash(closed, f"rm -rf {outside}/*")
    finally:
        listener.close()
    assert open_result.content == "connected"
    assert closed_result.is_error and "connected" not in closed_result.content
    assert "allow_network = true" in closed_result.content.splitlines()[-1]
    assert closed.sandbox.state().line().startswith("sandbox: bubblewrap+landlock (workspace, network blocked) · landlock ABI")
    assert write_result.is_error and (outside / "canary.txt").exists()  # Landlock still applies inside


# ---- no backend --------------------------------------------------------------------------------------


async def test_missing_backend_is_reported_and_commands_run_unconfined(workspace, outside):
    context = sandboxed(workspace, backend="none")
    result = await bash(context, f"rm -rf {outside}/* && echo ran")
    assert result.content == "ran" and not (outside / "canary.txt").exists()
    line = context.sandbox.state().line()
    assert line == "sandbox: unavailable — no sandbox backend was chosen; shell commands run unconfined"
    assert context.sandbox.take_notice() == line
    assert context.sandbox.take_notice() is None  # once


async def test_strict_refuses_commands_when_no_backend_works(workspace, outside):
    context = sandboxed(workspace, backend="none", strict=True)
    with pytest.raises(ToolFailure) as caught:
        await bash(context, f"rm -rf {outside}/*")
    assert (outside / "canary.txt").exists()
    assert str(caught.value).startswith("bash: refused — [tools.sandbox] strict = true")
    assert "no sandbox backend was chosen" in str(caught.value)
    assert context.sandbox.state().line().endswith("shell commands are refused (strict = true)")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux backend")
def test_landlock_probe_answers_and_is_cached():
    from zeph_cli.tools.sandbox import detect

    first = detect.filesystem_backend()
    assert first == detect.filesystem_backend()
    assert first == (("landlock", None) if LANDLOCK_PROBLEM is None else (None, LANDLOCK_PROBLEM))


# ---- through the agent and the CLI -------------------------------------------------------------------


def openai_env(fake_server) -> dict[str, str]:
    return {"ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": fake_server.url + "/v1",
            "ZEPH_LLM_MODEL": "gpt-4o", "ZEPH_LLM_MAX_RETRIES": "0"}


def tool_reply(command: str):
    arguments = json.dumps({"command": command})
    return openai_wire.stream_response(openai_wire.tool_call_chunks([("call_1", "bash", [arguments])]))


def text_reply(text: str):
    return openai_wire.stream_response(openai_wire.text_chunks([text]))


async def test_the_agent_warns_once_when_no_backend_works(fake_server, workspace):
    for _ in range(2):
        fake_server.queue(tool_reply("echo one"), tool_reply("echo two"), text_reply("done"))
    environ = openai_env(fake_server)
    config = load_config(env=environ).config
    agent = Agent(config=config, store=ConversationStore(open_database(database_path())),
                  provider=create_provider(resolve_settings(config, environ)), cwd=workspace,
                  approver=_approve_all)
    AGENTS.append(agent)
    agent.sandbox = Sandbox(config.tools.sandbox, agent.confinement.allowed, cwd=workspace, backend="none")
    conversation = agent.new_conversation("x")
    events = [e async for e in agent.run_turn(conversation, "go")]
    events += [e async for e in agent.run_turn(conversation, "again")]
    warnings = [e.text for e in events if isinstance(e, AgentWarning)]
    assert warnings == ["sandbox: unavailable — no sandbox backend was chosen; shell commands run unconfined"]
    assert [e.result.content for e in events if isinstance(e, ToolCallFinished)] == ["one", "two", "one", "two"]


async def _approve_all(request):
    from zeph_cli.tools.permissions import ApprovalDecision

    return ApprovalDecision("yes")


@needs_landlock
@needs_wall
def test_zeph_ask_cannot_delete_outside_and_zeph_context_shows_the_sandbox(fake_server, workspace, outside):
    # The blocklist refuses `rm -rf` outside the workspace; a script it cannot read is the sandbox's to stop.
    (workspace / "cleanup.sh").write_text(f"rm -rf {outside}/*\n")
    fake_server.queue(tool_reply("bash cleanup.sh"), text_reply("could not"))
    env = openai_env(fake_server)
    result = run_zeph("ask", "-y", "clean up", env=env, cwd=workspace)
    assert result.returncode == 0, err(result)
    assert (outside / "canary.txt").read_text() == "still here\n"
    sent = fake_server.requests_to("/v1/chat/completions")[1].json
    tool_result = [m["content"] for m in sent["messages"] if m["role"] == "tool"][0]
    assert "[sandbox: writing" in tool_result and "allow_write" in tool_result
    shown = out(run_zeph("context", env=env, cwd=workspace)).splitlines()
    line = next(x for x in shown if x.startswith("sandbox: "))
    # what ran, as the probe found it: the wall, then what the launcher applies (checked, not assumed)
    assert line.startswith("sandbox: bubblewrap+landlock (workspace, network blocked) · landlock ABI "), line
