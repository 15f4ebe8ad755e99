"""The bash tool against real subprocesses: output, exit codes, timeouts, cancellation, limits."""

from __future__ import annotations

import asyncio
import time
import os
from pathlib import Path

import pytest

from zeph_cli.tools.base import ToolContext, ToolFailure, validate_arguments
from zeph_cli.tools.confinement import Confinement
from zeph_cli.tools.shell import HEAD_BYTES, TAIL_BYTES, BashTool, CappedOutput


def context_in(tmp_path: Path, **overrides) -> ToolContext:
    return ToolContext(Confinement(tmp_path), cwd=overrides.pop("cwd", tmp_path), **overrides)


async def bash(tmp_path: Path, command: str, **overrides):
    timeout_secs = overrides.pop("timeout_secs", None)
    arguments = {"command": command} if timeout_secs is None else {"command": command, "timeout_secs": timeout_secs}
    return await BashTool().run(arguments, context_in(tmp_path, **overrides))


def is_gone(pid: int) -> bool:
    """No such process, or only its zombie (an orphan waiting for init to reap it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def eventually_gone(pid: int, within: float = 15.0) -> bool:
    """SIGKILL is delivered when the process is next scheduled: on a loaded machine
    that can take a moment after the sender returns."""
    deadline = time.monotonic() + within
    while not is_gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


async def wait_for_file(path: Path, task: asyncio.Task) -> str:
    """The content of a file the command writes, once written (or "" if the command ended first)."""
    while not task.done() and (not path.exists() or not path.read_text().strip()):
        await asyncio.sleep(0.01)
    return path.read_text().strip() if path.exists() else ""


def test_the_schema_and_description_tell_the_model_how_it_behaves():
    tool = BashTool()
    assert (tool.name, tool.kind) == ("bash", "exec")
    assert tool.parameters["required"] == ["command"]
    assert tool.parameters["properties"]["timeout_secs"] == {**tool.parameters["properties"]["timeout_secs"], "type": "integer", "minimum": 1}
    for phrase in ("fresh shell", "`cd`", "Stdin is empty", "timeout_secs", "stdout and stderr"):
        assert phrase in tool.description
    assert validate_arguments("bash", tool.parameters, {"command": "ls", "timeout_secs": "5"}) == {"command": "ls", "timeout_secs": 5}


async def test_echo_output_and_a_clean_exit(tmp_path):
    result = await bash(tmp_path, "echo hello; echo world")
    assert result.content == "hello\nworld"
    assert (result.exit_code, result.is_error) == (0, False)
    assert result.summary == "exit 0 · 2 lines"


async def test_stderr_is_merged_in_order(tmp_path):
    result = await bash(tmp_path, "echo out1; echo err1 >&2; echo out2")
    assert result.content == "out1\nerr1\nout2"


async def test_a_non_zero_exit_is_an_error_with_the_code_appended(tmp_path):
    result = await bash(tmp_path, "echo failing; exit 3")
    assert result.content == "failing\n[exit code 3]"
    assert (result.exit_code, result.is_error) == (3, True)
    assert result.summary == "exit 3 · 1 line"


async def test_no_output_is_said_plainly(tmp_path):
    result = await bash(tmp_path, "true")
    assert result.content == "(no output)"
    assert result.summary == "exit 0 · 0 lines"


async def test_stdin_is_empty_so_reading_it_ends_at_once(tmp_path):
    result = await bash(tmp_path, "cat; read -r line || echo 'no input'")
    assert result.content == "no input"


async def test_the_command_runs_in_the_context_cwd(tmp_path):
    sub = tmp_path / "sub dir"
    sub.mkdir()
    (sub / "marker.txt").write_text("here")
    result = await bash(tmp_path, "pwd; cat marker.txt", cwd=sub)
    assert result.content == f"{os.path.realpath(sub)}\nhere"


async def test_the_context_env_replaces_the_process_environment(tmp_path):
    env = {"PATH": os.environ["PATH"], "ZEPH_TEST_VALUE": "from-context"}
    result = await bash(tmp_path, 'echo "$ZEPH_TEST_VALUE|${HOME-unset}"', env=env)
    assert result.content == "from-context|unset"


async def test_without_bash_on_path_it_falls_back_to_bin_sh(tmp_path):
    result = await bash(tmp_path, "echo via sh", env={"PATH": str(tmp_path)})
    assert result.content == "via sh"


async def test_each_call_is_a_fresh_shell(tmp_path):
    (tmp_path / "inner").mkdir()
    await bash(tmp_path, "cd inner; export CARRIED=yes")
    result = await bash(tmp_path, 'basename "$PWD"; echo "carried=${CARRIED-no}"')
    assert result.content == f"{tmp_path.name}\ncarried=no"


async def test_a_missing_working_directory_is_a_tool_failure(tmp_path):
    with pytest.raises(ToolFailure, match="working directory .*missing.* does not exist"):
        await bash(tmp_path, "echo hi", cwd=tmp_path / "missing")


async def test_a_nul_byte_in_the_command_is_a_tool_failure(tmp_path):
    with pytest.raises(ToolFailure, match="bash: the command cannot be run"):
        await bash(tmp_path, "echo a\x00b")


async def test_a_timeout_kills_the_whole_process_group(tmp_path):
    pid_file = tmp_path / "child.pid"
    result = await bash(tmp_path, f"echo started; sleep 30 & echo $! > '{pid_file}'; sleep 30", timeout_secs=1)
    assert result.is_error and result.exit_code is None
    assert result.content == (
        "started\n[timed out after 1 s and was stopped; a larger timeout_secs (at most 600 s) allows more time]"
    )
    assert result.summary == "timed out after 1 s · 1 line"
    assert eventually_gone(int(pid_file.read_text()))


async def test_a_requested_timeout_is_capped_at_the_maximum(tmp_path):
    result = await bash(tmp_path, "sleep 30", timeout_secs=50, max_timeout_secs=1)
    assert result.content == "(no output)\n[timed out after 1 s and was stopped; timeout_secs 50 was capped at the maximum of 1 s]"


async def test_the_default_timeout_applies_when_none_is_asked(tmp_path):
    result = await bash(tmp_path, "sleep 30", default_timeout_secs=0.5)
    assert result.content.endswith("[timed out after 0.5 s and was stopped; a larger timeout_secs (at most 600 s) allows more time]")


async def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path):
    pid_file = tmp_path / "stubborn.pid"
    command = f"bash -c 'trap \"\" TERM; echo $$ > \"{pid_file}\"; while true; do sleep 0.1; done' & wait"
    result = await bash(tmp_path, command, timeout_secs=1)
    assert result.is_error
    assert eventually_gone(int(pid_file.read_text()))


async def test_cancellation_kills_the_process_group_and_propagates(tmp_path):
    pid_file = tmp_path / "child.pid"
    task = asyncio.create_task(bash(tmp_path, f"sleep 100 & echo $! > '{pid_file}'; wait"))
    child = int(await wait_for_file(pid_file, task))
    assert not is_gone(child)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()
    assert eventually_gone(child)


async def test_background_processes_holding_the_output_are_stopped_when_the_shell_exits(tmp_path):
    pid_file = tmp_path / "child.pid"
    result = await bash(tmp_path, f"sleep 100 & echo $! > '{pid_file}'; echo done")
    assert result.content == "done\n[processes left running in the background were stopped]"
    assert (result.exit_code, result.is_error) == (0, False)
    assert eventually_gone(int(pid_file.read_text()))


async def test_a_background_process_with_its_output_redirected_keeps_running(tmp_path):
    pid_file = tmp_path / "server.pid"
    result = await bash(tmp_path, f"sleep 100 > /dev/null 2>&1 & echo $! > '{pid_file}'; echo started")
    server = int(pid_file.read_text())
    try:
        assert result.content == "started"
        assert not is_gone(server)
    finally:
        os.kill(server, 9)


async def test_huge_output_is_memory_capped_and_the_drop_is_reported(tmp_path):
    result = await bash(tmp_path, "yes | head -c 50000000")
    dropped = 50_000_000 - HEAD_BYTES - TAIL_BYTES
    assert f"[… {dropped:,} bytes of output dropped here; only the first" in result.content
    assert len(result.content) < HEAD_BYTES + TAIL_BYTES + 500
    assert result.content.startswith("y\ny\n") and result.content.endswith("y\ny")
    assert result.exit_code == 0


async def test_binary_output_is_decoded_with_replacement_characters(tmp_path):
    (tmp_path / "blob").write_bytes(bytes(range(256)) * 4)
    result = await bash(tmp_path, "head -c 1000 /dev/urandom; cat blob")
    assert isinstance(result.content, str) and "\x00" not in result.content
    assert "\ufffd" in result.content and "0123456789" in result.content
    assert result.exit_code == 0


async def test_a_signal_death_is_reported_by_name(tmp_path):
    result = await bash(tmp_path, "echo before; kill -KILL $$")
    assert result.content == "before\n[killed by signal 9 (SIGKILL)]"
    assert result.is_error and result.exit_code == -9


def test_capped_output_keeps_head_and_tail_without_splitting_characters():
    output = CappedOutput(head_limit=4, tail_limit=3)
    output.add("ab€cd".encode())  # '€' is three bytes; the head limit falls inside it
    output.add(b"-middle-")
    output.add("xy€z".encode())  # the tail limit falls inside this '€'
    assert bytes(output.head) == b"ab\xe2\x82" and bytes(output.tail) == b"\x82\xacz"
    assert output.text() == "ab\n[… 18 bytes of output dropped here; only the first 4 and the last 3 bytes are kept …]\nz"


def test_capped_output_under_the_limits_is_kept_whole():
    output = CappedOutput(head_limit=4, tail_limit=5)
    for piece in (b"abc", "d€".encode(), b"\x00\xff"):
        output.add(piece)
    assert output.dropped == 0
    assert output.text() == "abcd€\ufffd\ufffd"
