"""A disk that fills up or turns read-only: one clear line naming the file and the cause, and nothing typed or
shown is lost — the prompt or the reply is kept in a file where one can be written, never an empty one.

The whole-command cases run the real `zeph` on a small tmpfs mounted for the test (root only; skipped with the
reason elsewhere); the messages and the rescue are also checked without one.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest

from tests.cli_helpers import ZEPH, err, out, run_zeph
from tests.fakes import openai_wire
from tests.fakes.server import RecordedRequest
from zeph_cli.frontends.prompt_keeper import rescue_text
from zeph_cli.store.turn_lock import TurnLock, lock_path
from zeph_cli.store.failures import (
    SQLITE_BUSY,
    SQLITE_CORRUPT,
    SQLITE_FULL,
    SQLITE_IOERR,
    SQLITE_READONLY,
    SQLITE_READONLY_DBMOVED,
    from_the_machine,
    write_failure,
)

DISK_KB = 16384  # room for what the chat app caches (the tokenizer's parsed form), then filled by the tests


class SmallDisk:
    """A tmpfs of `DISK_KB` mounted at `root`; `fill(free_kb)` leaves about that much room."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.filler = root / "filler"

    def fill(self, free_kb: int) -> None:
        self.filler.unlink(missing_ok=True)
        stat = os.statvfs(self.root)
        take = stat.f_bavail * stat.f_frsize - free_kb * 1024
        if take > 0:
            with open(self.filler, "wb") as handle:
                try:
                    handle.write(b"\0" * take)
                except OSError:  # the last page or so: full is full
                    pass

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    def remount(self, mode: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{mode}", str(self.root)], check=True, capture_output=True)


@pytest.fixture
def small_disk(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system for the test needs root")
    root = tmp_path / "small-disk"
    root.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_KB}k", "tmpfs", str(root)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield SmallDisk(root)
    finally:
        subprocess.run(["umount", "-l", str(root)], capture_output=True)


@pytest.fixture
def on_small_disk(small_disk, tmp_path, compatible, monkeypatch):
    """zeph's data on the small disk; the temporary dir (the last place a rescue tries) elsewhere."""
    import tempfile

    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**compatible, "ZEPH_HOME": str(small_disk.root / "zeph"), "TMPDIR": str(temp)}
    monkeypatch.setenv("ZEPH_HOME", env["ZEPH_HOME"])
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # this process's rescues too
    return env


def _echo(request: RecordedRequest):
    if request.path != "/v1/chat/completions":
        return None
    text = request.json["messages"][-1]["content"]
    return openai_wire.stream_response(openai_wire.text_chunks(["the answer to: ", str(text)[-60:]]))


def _kept_file(stderr: str, marker: str) -> Path:
    line = next(line for line in stderr.splitlines() if marker in line)
    return Path(line.rsplit(" ", 1)[1])


def _no_empty_files(*folders: Path) -> None:
    for folder in folders:
        for path in folder.rglob("*") if folder.exists() else ():
            if path.is_file() and "unsaved" in str(path.parent):
                assert path.stat().st_size > 0, path


def _messages(database: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(database) as conn:
        return list(conn.execute("select role, content from messages order by id"))


# ---- through the real zeph ------------------------------------------------------------------------------


def test_a_full_disk_keeps_the_prompt_in_a_file_that_holds_all_of_it(fake_server, on_small_disk, small_disk, tmp_path):
    fake_server.respond_with(_echo)
    assert run_zeph("ask", "a first question", env=on_small_disk).returncode == 0
    small_disk.fill(0)
    result = run_zeph("ask", "-c", "a prompt typed while the disk is full", env=on_small_disk)
    stderr = err(result)
    assert result.returncode == 1 and "Traceback" not in stderr and "internal error" not in stderr
    first = stderr.splitlines()[0]
    assert first.startswith("zeph: error: ") and str(small_disk.root / "zeph" / "zeph.db") in first
    assert "is full" in first and "free some space" in first
    kept = _kept_file(stderr, "your prompt is not in the database; it is kept in")
    assert kept.read_text() == "a prompt typed while the disk is full\n"
    assert kept.is_relative_to(tmp_path / "tmp")  # the data dir and its cache dir had no room
    _no_empty_files(small_disk.root)
    assert len([r for r in fake_server.requests if r.path == "/v1/chat/completions"]) == 1  # nothing sent
    small_disk.free()
    assert ("user", "a prompt typed while the disk is full") not in _messages(small_disk.root / "zeph" / "zeph.db")


def test_a_disk_that_fills_before_the_prompt_is_written_keeps_it_in_a_file(fake_server, on_small_disk, small_disk):
    """The database opens, then the disk fills before the prompt's write (here: while zeph waits for another
    turn on the session): the write fails at its statement or COMMIT, and the prompt goes to a file."""
    fake_server.respond_with(_echo)
    assert run_zeph("ask", "a first question", env=on_small_disk).returncode == 0
    other_turn = TurnLock(lock_path(small_disk.root / "zeph" / "zeph.db", 1))
    assert other_turn.try_acquire()
    proc = subprocess.Popen([ZEPH, "ask", "-c", "typed as the disk fills"], env={**os.environ, **on_small_disk},
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first_line = proc.stderr.readline().decode()
    assert "waiting for another zeph's turn on session 1" in first_line
    small_disk.fill(0)
    other_turn.release()
    stdout, rest = proc.communicate(timeout=60)
    stderr = first_line + rest.decode()
    assert proc.returncode == 1 and "Traceback" not in stderr and "internal error" not in stderr, stderr
    error = next(line for line in stderr.splitlines() if line.startswith("zeph: error: "))
    assert error.startswith(f"zeph: error: the disk holding {small_disk.root / 'zeph' / 'zeph.db'} is full (")
    kept = _kept_file(stderr, "your prompt is not in the database; it is kept in")
    assert kept.read_text() == "typed as the disk fills\n"
    _no_empty_files(small_disk.root)
    small_disk.free()
    assert ("user", "typed as the disk fills") not in _messages(small_disk.root / "zeph" / "zeph.db")


def test_a_reply_the_full_disk_cannot_take_is_shown_said_and_kept(fake_server, on_small_disk, small_disk):
    """The prompt is stored, then the disk fills while the model answers: the reply is printed, a line says it
    is not stored and where its text is."""
    armed = threading.Event()
    reply = "a long reply " * 400

    def respond(request: RecordedRequest):
        if request.path != "/v1/chat/completions":
            return None
        if armed.is_set():
            small_disk.fill(0)
        return openai_wire.stream_response(openai_wire.text_chunks([reply]))

    fake_server.respond_with(respond)
    assert run_zeph("ask", "a first question", env=on_small_disk).returncode == 0
    armed.set()
    result = run_zeph("ask", "-c", "the question whose answer will not fit", env=on_small_disk)
    stderr = err(result)
    assert result.returncode == 1 and "Traceback" not in stderr, stderr
    assert out(result).strip() == reply.strip()
    error = next(line for line in stderr.splitlines() if line.startswith("zeph: error: "))
    assert error.startswith("zeph: error: the reply could not be stored: the disk holding ") and "is full" in error
    kept = _kept_file(stderr, "the reply is not in the database; its text is kept in")
    assert kept.read_text() == reply + "\n"  # all of it, as it arrived
    small_disk.free()
    stored = _messages(small_disk.root / "zeph" / "zeph.db")
    assert stored[-1] == ("user", "the question whose answer will not fit")  # the prompt was stored before


def test_a_read_only_file_system_keeps_the_prompt_elsewhere(fake_server, on_small_disk, small_disk, tmp_path):
    fake_server.respond_with(_echo)
    assert run_zeph("ask", "a first question", env=on_small_disk).returncode == 0
    small_disk.remount("ro")
    try:
        result = run_zeph("ask", "-c", "typed on a read-only disk", env=on_small_disk)
    finally:
        small_disk.remount("rw")
    stderr = err(result)
    assert result.returncode == 1 and "Traceback" not in stderr
    assert stderr.splitlines()[0] == (
        f"zeph: error: cannot open the database {small_disk.root / 'zeph' / 'zeph.db'}: "
        "its file system is mounted read-only")
    kept = _kept_file(stderr, "it is kept in")
    assert kept.read_text() == "typed on a read-only disk\n" and kept.is_relative_to(tmp_path / "tmp")


# ---- the rescue itself -------------------------------------------------------------------------------


def test_a_rescue_goes_to_the_next_place_when_one_cannot_be_written(tmp_path):
    blocked = tmp_path / "a-file-not-a-folder"
    blocked.write_text("")
    path, problems = rescue_text("keep me", [blocked / "unsaved-prompts", tmp_path / "second"])
    assert path is not None and path.parent == tmp_path / "second" and path.read_text() == "keep me\n"
    assert problems and str(blocked / "unsaved-prompts") in problems[0]


def test_a_rescue_on_a_full_disk_leaves_no_empty_file(small_disk, tmp_path):
    small_disk.fill(0)
    text = "a prompt of some length " * 2000
    path, problems = rescue_text(text, [small_disk.root / "unsaved", tmp_path / "elsewhere"])
    assert path is not None and path.parent == tmp_path / "elsewhere" and path.read_text() == text + "\n"
    assert list((small_disk.root / "unsaved").iterdir()) == []  # the cut file is gone
    assert "No space left on device" in problems[0]


def test_a_rescue_nowhere_says_why_for_each_place(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")
    path, problems = rescue_text("lost", [blocked / "a", blocked / "b"])
    assert path is None and len(problems) == 2


# ---- the sentences ----------------------------------------------------------------------------------------


def _failure(message: str, code: int) -> sqlite3.OperationalError:
    exc = sqlite3.OperationalError(message)
    exc.sqlite_errorcode = code
    return exc


def test_each_cause_gets_its_own_sentence_naming_the_file(tmp_path):
    database = str(tmp_path / "zeph.db")
    full = write_failure(database, _failure("database or disk is full", SQLITE_FULL))
    assert full.startswith(f"the disk holding {database} is full (") and "free some space" in full
    locked = write_failure(database, _failure("database is locked", SQLITE_BUSY), 5000)
    assert locked == (f"the database {database} stayed locked for 5 s (the busy timeout), so nothing could be "
                      "written (database is locked); try again")
    io_error = write_failure(database, _failure("disk I/O error", SQLITE_IOERR | (3 << 8)))
    assert io_error == f"the database {database} could not be written (disk I/O error)"  # plenty of room here
    read_only = write_failure(database, _failure("attempt to write a readonly database", SQLITE_READONLY))
    assert read_only == (f"the database {database} is read-only (the file or its folder cannot be written by "
                         "this user), so nothing could be written to it")
    moved = write_failure(database, _failure("attempt to write a readonly database", SQLITE_READONLY_DBMOVED))
    assert "was moved or deleted while zeph was using it" in moved
    damaged = write_failure(database, _failure("database disk image is malformed", SQLITE_CORRUPT))
    assert damaged.startswith(f"the database {database} is damaged")


def test_an_io_error_on_a_nearly_full_disk_is_said_to_be_a_full_disk(small_disk):
    small_disk.fill(16)
    database = str(small_disk.root / "zeph.db")
    message = write_failure(database, _failure("disk I/O error", SQLITE_IOERR))
    assert message.startswith(f"the disk holding {database} is full (") and "KB free)" in message


def test_zephs_own_mistakes_are_not_blamed_on_the_disk():
    with sqlite3.connect(":memory:") as conn:
        conn.execute("create table t (id integer primary key)")
        conn.execute("insert into t values (1)")
        with pytest.raises(sqlite3.IntegrityError) as caught:
            conn.execute("insert into t values (1)")
    assert not from_the_machine(caught.value)
    assert from_the_machine(_failure("database or disk is full", SQLITE_FULL))


async def test_the_chat_app_keeps_a_reply_the_full_disk_cannot_take(fake_server, on_small_disk, small_disk, tmp_path):
    from tests.test_tui_app import SIZE, entries, open_app, send
    from zeph_cli.frontends.tui.transcript import AssistantEntry, Notice

    workspace = tmp_path / "ws"
    workspace.mkdir()
    armed = threading.Event()

    def respond(request: RecordedRequest):
        if request.path != "/v1/chat/completions" or not request.json.get("stream"):
            return None
        if armed.is_set():
            small_disk.fill(0)
        return openai_wire.stream_response(openai_wire.text_chunks(["an answer the disk cannot take " * 200]))

    fake_server.respond_with(respond)
    app, session = await open_app(fake_server, workspace, env=on_small_disk)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "a first message")
            armed.set()
            await send(pilot, app, "a second message")
            reply = entries(app, AssistantEntry)[-1]
            assert reply.text.startswith("an answer the disk cannot take")
            errors = [n.text for n in entries(app, Notice) if n.kind == "error"]
            assert len(errors) == 1 and errors[-1].startswith("the reply could not be stored: the disk holding "), errors
            kept = Path(errors[-1].rsplit(" ", 1)[1])
            assert kept.is_relative_to(tmp_path / "tmp")
            assert kept.read_text() == "an answer the disk cannot take " * 200 + "\n"
            assert not app.busy
    finally:
        await session.aclose()
        small_disk.free()
