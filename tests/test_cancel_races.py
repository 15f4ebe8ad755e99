"""Ctrl+C is never lost: not during a long MCP call, not in the very moment an answer arrives.

Through the real `zeph ask` with the wire-level fake model and a small stdio MCP server that writes down
what reached it (`tests/fakes/mcp_slow_stdio.py`). The moment is hit exactly, not by chance: a
`sitecustomize` on the subprocess's PYTHONPATH makes the process send itself SIGINT the instant a named
SDK call returns its answer (the SDK's code runs unchanged; only the signal's timing is arranged). On
Python 3.11 `asyncio.wait_for` returned that answer and dropped the cancellation: the turn went on and
zeph exited 0 after the tool ran to its end.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.chat_wire import chat_requests, queue_call, queue_reply
from tests.cli_helpers import EMPTY_PROJECT, ZEPH
from tests.test_tui_app import SIZE, model, send, settle, workspace  # noqa: F401  (fixtures)
from tests.test_tui_app import open_app
from zeph_cli.waiting import within

SLOW_SERVER = Path(__file__).parent / "fakes" / "mcp_slow_stdio.py"

SIGINT_ON_RETURN = """
import importlib.machinery, os, signal, sys
MODULE, CLASS, METHOD = {module!r}, {cls!r}, {method!r}
class Loader:
    def __init__(self, loader):
        self.loader = loader
    def create_module(self, spec):
        return self.loader.create_module(spec)
    def exec_module(self, module):
        self.loader.exec_module(module)
        owner = getattr(module, CLASS)
        real = getattr(owner, METHOD)
        async def answered_then_interrupted(self, *args, **kwargs):
            answer = await real(self, *args, **kwargs)
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl+C the instant the answer is in
            return answer
        setattr(owner, METHOD, answered_then_interrupted)
class Finder:
    def find_spec(self, name, path=None, target=None):
        if name != MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        spec.loader = Loader(spec.loader)
        return spec
sys.meta_path.insert(0, Finder())
"""


def sigint_on_return(folder: Path, module: str, cls: str, method: str) -> dict[str, str]:
    """Environment entries for a zeph that sends itself SIGINT as `module.cls.method` returns."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(SIGINT_ON_RETURN.format(module=module, cls=cls, method=method))
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))}


def slow_server_config(tmp_path: Path, record: Path) -> dict[str, str]:
    path = tmp_path / "mcp.toml"
    path.write_text(f"""
[[mcp.servers]]
id = "slow"
command = "{sys.executable}"
args = ["{SLOW_SERVER}", "{record}"]
trusted = true
timeout = 300
""")
    return {"ZEPH_CONFIG": str(path)}


def start_zeph(env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen([ZEPH, "ask", *args], env={**os.environ, **env}, cwd=str(EMPTY_PROJECT),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def record_lines(record: Path) -> list[str]:
    return record.read_text().splitlines() if record.exists() else []


# ---- through the real zeph ask -----------------------------------------------------------------------


def test_ctrl_c_during_a_long_mcp_call_sends_the_server_a_cancel_and_exits_130(fake_server, compatible, tmp_path):
    record = tmp_path / "record"
    queue_call(fake_server, "slow__wait", {"seconds": 600})
    queue_reply(fake_server, "Waited.")
    proc = start_zeph({**compatible, **slow_server_config(tmp_path, record)}, "wait for it")
    try:
        deadline = time.monotonic() + 120
        while not any(line.startswith("started") for line in record_lines(record)) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()[1].decode()
            time.sleep(0.02)
        [started] = record_lines(record)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)  # would-be hang: the tool waits 600 s
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    call = started.split()[1]
    assert proc.returncode == 130, stderr.decode()
    assert b"interrupted" in stderr and b"Traceback" not in stderr
    lines = record_lines(record)
    assert f"cancel {call}" in lines, lines  # notifications/cancelled reached the server, for this call
    assert f"finished {call}" not in lines
    assert len(chat_requests(fake_server)) == 1  # the turn stopped: the model was not asked again


def test_ctrl_c_in_the_moment_an_mcp_tool_answers_stops_the_turn(fake_server, compatible, tmp_path):
    record = tmp_path / "record"
    queue_call(fake_server, "slow__wait", {"seconds": 0})
    queue_reply(fake_server, "Waited.")
    hook = sigint_on_return(tmp_path / "hook", "mcp.client.session", "ClientSession", "call_tool")
    proc = start_zeph({**compatible, **slow_server_config(tmp_path, record), **hook}, "wait for it")
    try:
        stdout, stderr = proc.communicate(timeout=120)  # would-be hang only
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert [line.split()[0] for line in record_lines(record)] == ["started", "finished"]  # it answered
    assert proc.returncode == 130, stderr.decode()
    assert b"interrupted" in stderr and b"Traceback" not in stderr
    assert b"Waited." not in stdout
    assert len(chat_requests(fake_server)) == 1  # the turn did not go on with the answer


def test_ctrl_c_in_the_moment_the_model_s_reply_opens_stops_the_turn(fake_server, compatible, tmp_path):
    queue_reply(fake_server, "A reply that should not be shown.")
    hook = sigint_on_return(tmp_path / "hook", "openai.resources.chat.completions.completions",
                            "AsyncCompletions", "create")
    proc = start_zeph({**compatible, **hook}, "hello")
    try:
        stdout, stderr = proc.communicate(timeout=120)  # would-be hang only
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert len(chat_requests(fake_server)) == 1  # the request was answered
    assert proc.returncode == 130, stderr.decode()
    assert b"interrupted" in stderr and b"Traceback" not in stderr
    assert b"should not be shown" not in stdout


# ---- the chat app: Esc cancels the turn's task, through the same code ------------------------------------


async def wait_for_record(record: Path, pilot, prefix: str) -> list[str]:
    for _ in range(2400):  # would-be hang bound: 120 s
        lines = record_lines(record)
        if any(line.startswith(prefix) for line in lines):
            return lines
        await pilot.pause(0.05)
    return record_lines(record)


async def test_escape_during_a_long_mcp_call_in_the_chat_app_sends_the_server_a_cancel(fake_server, model, workspace,
                                                                                       tmp_path):
    record = tmp_path / "record"
    model.call(("call_1", "slow__wait", {"seconds": 600}))
    model.say("Waited.")
    app, session = await open_app(fake_server, workspace, env=slow_server_config(tmp_path, record))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "wait for it", wait=False)
            [started] = await wait_for_record(record, pilot, "started")
            call = started.split()[1]
            await pilot.press("escape")
            await settle(pilot, app)
            lines = await wait_for_record(record, pilot, "cancel")
            assert f"cancel {call}" in lines, lines
            assert f"finished {call}" not in lines
            assert model.count("chat") == 1  # the turn stopped: the model was not asked again
            assert not app.busy
    finally:
        await session.aclose()


async def test_a_cancel_in_the_moment_an_mcp_tool_answers_stops_the_chat_app_s_turn(fake_server, model, workspace,
                                                                                    tmp_path, monkeypatch):
    from mcp.client.session import ClientSession

    record = tmp_path / "record"
    model.call(("call_1", "slow__wait", {"seconds": 0}))
    model.say("Waited.")
    app, session = await open_app(fake_server, workspace, env=slow_server_config(tmp_path, record))
    real = ClientSession.call_tool

    async def answered_then_cancelled(self, *args, **kwargs):
        answer = await real(self, *args, **kwargs)
        assert app.worker is not None
        app.worker.cancel()  # what Esc does, the instant the answer is in
        return answer

    monkeypatch.setattr(ClientSession, "call_tool", answered_then_cancelled)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "wait for it")
            assert [line.split()[0] for line in record_lines(record)] == ["started", "finished"]  # it answered
            assert model.count("chat") == 1  # the turn did not go on with the answer
            assert not app.busy
    finally:
        await session.aclose()


# ---- within() -------------------------------------------------------------------------------------------


async def test_a_cancellation_that_comes_as_the_work_finishes_is_not_lost():
    async def work() -> str:
        caller.cancel()  # as Ctrl+C does, in the very step the answer is ready
        return "answer"

    caller = asyncio.ensure_future(within(work(), 10))
    with pytest.raises(asyncio.CancelledError):
        await caller


async def test_a_cancelled_caller_waits_for_the_work_to_stop_first():
    steps: list[str] = []
    started = asyncio.Event()

    async def work() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.sleep(0)  # its clean-up (an MCP cancel being written) takes a step or more
            steps.append("work stopped")
            raise

    async def caller() -> None:
        try:
            await within(work(), 10)
        except asyncio.CancelledError:
            steps.append("caller cancelled")
            raise

    task = asyncio.ensure_future(caller())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert steps == ["work stopped", "caller cancelled"]


async def test_work_past_its_time_is_stopped_and_the_caller_gets_timeout_error():
    stopped = asyncio.Event()

    async def work() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()

    with pytest.raises(TimeoutError):
        await within(work(), 0.01)
    assert stopped.is_set()
    assert await within(asyncio.sleep(0, "done"), None) == "done"
