"""The `bash` tool: one shell command in the workspace, output captured.

Invariant: every call runs in its own process group with empty stdin, inside
the context's sandbox when it has one (which may refuse it outright); on
timeout or cancellation the whole group is killed, and after a normal exit no
process of it is left holding the output. At most `HEAD_BYTES + TAIL_BYTES`
of output are held in memory. Whether a command may run is decided before
`run`, not here.
"""

from __future__ import annotations

import asyncio
import codecs
import dataclasses
import os
import shutil
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base import Tool, ToolContext, ToolResult
from .command_env import command_environment, withheld_note
from .failures import ToolFailure

if TYPE_CHECKING:
    from .sandbox.sandbox import Launch

__all__ = ["BashTool", "CappedOutput"]

HEAD_BYTES = 2 * 1024 * 1024
TAIL_BYTES = 2 * 1024 * 1024
READ_CHUNK_BYTES = 64 * 1024
# After SIGTERM, how long the group may take to exit before SIGKILL.
KILL_GRACE_SECS = 2.0
# After the shell exits, how long processes it left behind may keep its output open.
BACKGROUND_GRACE_SECS = 1.0
# The shell's exit is polled, from every 5 ms up to every EXIT_POLL_SECS.
EXIT_POLL_SECS = 0.1


class CappedOutput:
    """Bytes read from a process: the first and last bytes kept, the middle counted."""

    def __init__(self, head_limit: int = HEAD_BYTES, tail_limit: int = TAIL_BYTES) -> None:
        self.head_limit = head_limit
        self.tail_limit = tail_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail += chunk
        excess = len(self.tail) - self.tail_limit
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    def text(self) -> str:
        """The output as text: UTF-8 with invalid bytes and NULs shown as U+FFFD."""
        if not self.dropped:
            return _decode(bytes(self.head + self.tail))
        # Neither side of the gap may show half a character.
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        head = decoder.decode(bytes(self.head), final=False).replace("\x00", "\ufffd")
        head_rest = len(decoder.getstate()[0])
        skip = 0
        while skip < min(3, len(self.tail)) and self.tail[skip] & 0xC0 == 0x80:
            skip += 1
        marker = (
            f"[… {self.dropped + head_rest + skip:,} bytes of output dropped here; only the first "
            f"{self.head_limit:,} and the last {self.tail_limit:,} bytes are kept …]"
        )
        return f"{head}\n{marker}\n{_decode(bytes(self.tail[skip:]))}"


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace").replace("\x00", "\ufffd")


class BashTool(Tool, declared="bash"):
    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        command: str = arguments["command"]
        requested = arguments.get("timeout_secs") or context.default_timeout_secs
        timeout = min(requested, context.max_timeout_secs)
        # A cancellation while the subprocess is still being set up would leave its children running
        # (asyncio then kills the shell alone): the spawn finishes, shielded, and the group is stopped.
        env, withheld = command_environment(os.environ if context.env is None else context.env,
                                            pass_env=context.pass_env, secret_names=context.secret_env)
        spawning = asyncio.ensure_future(_spawn(command, context, env))
        output = CappedOutput()
        try:
            process, launch = await asyncio.shield(spawning)
        except asyncio.CancelledError:
            process, launch = await spawning
            await _stop_group(process, asyncio.create_task(_read_into(process.stdout, output)))
            _finish(context, launch)
            raise
        reader = asyncio.create_task(_read_into(process.stdout, output))
        try:
            ending = await _wait_for_shell(process, reader, timeout)
        except BaseException:  # cancelled: the group must not outlive the call
            await _stop_group(process, reader)
            _finish(context, launch)
            raise
        if ending != "exited":
            await _stop_group(process, reader)
        text = output.text()
        result = _result(text, process.returncode, ending, timeout, requested, context.max_timeout_secs)
        notes = _finish(context, launch, text, command, failed=result.is_error,
                        exit_code=result.exit_code if ending == "exited" else None)
        if notes:
            result = dataclasses.replace(result, content="\n".join([result.content, *notes]))
        note = withheld_note(command, withheld)
        if note:
            result = dataclasses.replace(result, content="\n".join([result.content, note]))
        return result


def _finish(
    context: ToolContext, launch: Launch | None, output: str = "", command: str = "", *,
    failed: bool = False, exit_code: int | None = None,
) -> list[str]:
    """The sandbox's tidying after a command, and its notes (why it refused something, hosts its proxy refused)."""
    if context.sandbox is None or launch is None:
        return []
    return context.sandbox.finish(launch, output, command, failed=failed, exit_code=exit_code)


async def _spawn(
    command: str, context: ToolContext, env: dict[str, str]
) -> tuple[asyncio.subprocess.Process, Launch | None]:
    cwd = context.cwd
    if not cwd.is_dir():
        raise ToolFailure(f"bash: the working directory {cwd} does not exist or is not a directory")
    shell = shutil.which("bash", path=env.get("PATH", os.defpath)) or "/bin/sh"
    argv = [shell, "-c", command]
    launch = None
    if context.sandbox is not None:
        await asyncio.to_thread(context.sandbox.state)  # the first call probes the backends in a child
        launch = context.sandbox.prepare(argv)
        argv = launch.argv
        env = context.sandbox.environment(env)
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd, env=env, start_new_session=True,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )
    except ValueError as exc:  # NUL byte in the command or the environment
        _finish(context, launch)
        raise ToolFailure(f"bash: the command cannot be run ({exc})") from None
    except OSError as exc:
        _finish(context, launch)
        raise ToolFailure(f"bash: {shell} could not be started in {cwd} ({exc.strerror or exc})") from None
    return process, launch


async def _read_into(stream: asyncio.StreamReader | None, output: CappedOutput) -> None:
    if stream is None:
        return
    while chunk := await stream.read(READ_CHUNK_BYTES):
        output.add(chunk)


async def _wait_for_shell(process: asyncio.subprocess.Process, reader: asyncio.Task[None], timeout: float) -> str:
    """How the shell ended: "exited", "timed_out", or "left_running" (it exited, but
    processes it started still hold its output open)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    # `Process.wait()` also waits for the output pipe to close, so the shell's own
    # exit is read from `returncode`.
    poll = 0.005
    while process.returncode is None:
        remaining = deadline - loop.time()
        if remaining <= 0:
            return "timed_out"
        if reader.done():
            await asyncio.sleep(min(poll, remaining))
        else:
            await asyncio.wait({reader}, timeout=min(poll, remaining))
        poll = min(poll * 2, EXIT_POLL_SECS)
    grace = min(BACKGROUND_GRACE_SECS, max(deadline - loop.time(), 0))
    await asyncio.wait({reader}, timeout=grace)
    if reader.done():
        return "exited"
    return "timed_out" if loop.time() >= deadline else "left_running"


async def _stop_group(process: asyncio.subprocess.Process, reader: asyncio.Task[None]) -> None:
    """SIGTERM the process group, SIGKILL it after `KILL_GRACE_SECS`; then stop reading."""
    loop = asyncio.get_running_loop()
    _signal_group(process.pid, signal.SIGTERM)
    try:
        deadline = loop.time() + KILL_GRACE_SECS
        while (process.returncode is None or not reader.done()) and loop.time() < deadline:  # noqa: ASYNC110 — two conditions, one deadline
            await asyncio.sleep(0.01)
    finally:
        _signal_group(process.pid, signal.SIGKILL)
    # SIGKILL lands when each process is next scheduled; give the group a moment to go
    # (bounded: unreaped zombies keep a group "alive" on systems whose init does not reap).
    deadline = loop.time() + KILL_GRACE_SECS
    while _group_exists(process.pid) and loop.time() < deadline:  # noqa: ASYNC110 — /proc has nothing to await
        await asyncio.sleep(0.01)
    # A process that left the group (`setsid`) may still hold the output open.
    await asyncio.wait({reader}, timeout=BACKGROUND_GRACE_SECS)
    if not reader.done():
        reader.cancel()
    await process.wait()  # SIGKILL has been sent; the exit is imminent


def _group_exists(pgid: int) -> bool:
    """Whether a live (not zombie) process is left in the group."""
    proc = Path("/proc")
    if not proc.is_dir():  # no procfs: ask the kernel (zombies count as alive)
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def _signal_group(pgid: int, signum: signal.Signals) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _result(
    text: str, returncode: int | None, ending: str, timeout: float, requested: float, max_timeout: float
) -> ToolResult:
    lines = _count_lines(text)
    body = text if text.strip() else "(no output)"
    if not body.endswith("\n"):
        body += "\n"
    if ending == "timed_out":
        note = f"timed out after {_secs(timeout)} s and was stopped; " + _timeout_advice(requested, max_timeout)
        return ToolResult(body + f"[{note}]", is_error=True, exit_code=None, summary=f"timed out after {_secs(timeout)} s · {lines}")
    if ending == "left_running":
        body += "[processes left running in the background were stopped]\n"
    code = returncode if returncode is not None else -1
    if code < 0:
        body += f"[killed by signal {-code} ({_signal_name(-code)})]\n"
    elif code != 0:
        body += f"[exit code {code}]\n"
    return ToolResult(body.rstrip("\n"), is_error=code != 0, exit_code=code, summary=f"exit {code} · {lines}")


def _timeout_advice(requested: float, max_timeout: float) -> str:
    if requested > max_timeout:
        return f"timeout_secs {_secs(requested)} was capped at the maximum of {_secs(max_timeout)} s"
    if requested < max_timeout:
        return f"a larger timeout_secs (at most {_secs(max_timeout)} s) allows more time"
    return f"{_secs(max_timeout)} s is the maximum timeout_secs"


def _count_lines(text: str) -> str:
    count = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    return f"{count:,} line" if count == 1 else f"{count:,} lines"


def _secs(value: float) -> str:
    return f"{value:g}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown signal"
