"""`zeph` with no command: the chat app on a terminal, help (or one clear line) without one."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from pathlib import Path

from tests.cli_helpers import ZEPH, db_rows, err, out, run_zeph
from tests.fakes import openai_wire


def test_without_a_terminal_zeph_prints_help():
    result = run_zeph()
    assert result.returncode == 0
    assert "ask" in out(result) and "--continue" in out(result)


def test_chat_options_without_a_terminal_say_so_in_one_line(compatible):
    result = run_zeph("-c", env=compatible)
    assert result.returncode == 2
    assert err(result).strip() == 'zeph: error: the chat needs a terminal; for one question use: zeph ask "..."'


def read_until(master: int, wanted: bytes, deadline: float) -> bytes:
    seen = b""
    while time.time() < deadline and wanted not in seen:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            seen += data
    return seen


def test_on_a_terminal_the_chat_opens_sends_and_quits(fake_server, compatible, tmp_path: Path):
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["pong from the model"])))
    master, slave = pty.openpty()
    os.set_blocking(master, True)
    proc = subprocess.Popen(
        [ZEPH], stdin=slave, stdout=slave, stderr=slave, cwd=tmp_path,
        env={**os.environ, **compatible, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"},
        start_new_session=True,
    )
    os.close(slave)
    deadline = time.time() + 60
    try:
        screen = read_until(master, b"new session", deadline)
        assert b"new session" in screen, screen[-2000:]
        os.write(master, b"ping\r")
        screen = read_until(master, b"pong", deadline)
        assert b"pong" in screen
        os.write(master, b"\x11")  # ctrl+q
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert code == 0
    rows = db_rows("select role, content from messages order by id")
    assert [(r["role"], r["content"]) for r in rows] == [("user", "ping"), ("assistant", "pong from the model")]


def test_on_a_terminal_a_start_up_failure_is_shown_in_the_app_then_left_as_one_line(compatible, tmp_path: Path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the data directory should be\n")
    master, slave = pty.openpty()
    os.set_blocking(master, True)
    proc = subprocess.Popen(
        [ZEPH], stdin=slave, stdout=slave, stderr=slave, cwd=tmp_path,
        env={**os.environ, **compatible, "ZEPH_HOME": str(blocker / "zeph"),
             "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"},
        start_new_session=True,
    )
    os.close(slave)
    deadline = time.time() + 60
    try:
        screen = read_until(master, b"could not start", deadline)
        assert b"could not start" in screen, screen[-2000:]
        os.write(master, b"\x11")  # ctrl+q
        after = read_until(master, b"zeph: error: ", deadline)
        after += read_until(master, b"\n", deadline)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert code != 0
    assert b"Traceback" not in screen + after
    line = after[after.index(b"zeph: error: "):].split(b"\r\n")[0].decode()
    assert line.startswith("zeph: error: cannot create the data directory")
