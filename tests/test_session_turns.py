"""Turns on one session from several zeph processes at once: one at a time, each answering its own prompt."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.cli_helpers import ZEPH, db_rows, err, out, run_zeph
from tests.fakes import openai_wire
from tests.fakes.server import RecordedRequest
from zeph_cli.store.turn_lock import TurnLock, lock_path


def _last_user_text(request: RecordedRequest) -> str:
    messages = (request.json or {}).get("messages") or []
    users = [m for m in messages if m.get("role") == "user"]
    content = users[-1]["content"] if users else ""
    if isinstance(content, list):
        content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content.strip().splitlines()[-1] if content.strip() else ""


def _echo(request: RecordedRequest, pause: float = 0.0):
    """A reply naming the request's latest user message, after `pause` seconds of streaming."""
    if request.path != "/v1/chat/completions":
        return None
    events = openai_wire.text_chunks(["answer to ", _last_user_text(request)])
    return openai_wire.stream_response(events, chunk_delay=pause / len(events))


def _start(*args: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([ZEPH, *args], env={**os.environ, **env}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for(condition, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.02)


def _stderr_lines(proc: subprocess.Popen, into: list[str]) -> threading.Thread:
    def read() -> None:
        for line in proc.stderr:
            into.append(line.decode())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def _session_pairs(session: int) -> list[tuple[str, str]]:
    rows = db_rows("select role, content from messages where conversation_id = ? order by position, id", session)
    return [(row["role"], row["content"]) for row in rows]


# ---- many processes, many rounds ---------------------------------------------------------------


def test_concurrent_asks_on_one_session_each_answer_their_own_prompt(fake_server, compatible):
    """Five `zeph ask --session 1` at once, four rounds (one with -c): every process prints the answer to its
    own prompt, every request ends with its own prompt after a complete history, and the stored session
    alternates prompt and answer."""
    fake_server.respond_with(lambda request: _echo(request, pause=0.3))
    assert run_zeph("ask", "seed", env=compatible).returncode == 0
    processes, rounds = 5, 4
    for round_ in range(rounds):
        continuing = ["-c"] if round_ == rounds - 1 else ["--session", "1"]
        procs = {f"R{round_}P{i}": _start("ask", *continuing, f"question R{round_}P{i}", env=compatible)
                 for i in range(processes)}
        for mark, proc in procs.items():
            stdout, stderr = proc.communicate(timeout=120)
            assert proc.returncode == 0, stderr.decode()
            assert stdout.decode().strip() == f"answer to question {mark}", (mark, stdout, stderr)
            assert b"Traceback" not in stderr
    pairs = _session_pairs(1)
    assert len(pairs) == 2 * (1 + processes * rounds)
    for (role, text), (reply_role, reply) in zip(pairs[::2], pairs[1::2]):
        assert (role, reply_role) == ("user", "assistant")
        assert reply == f"answer to {text}"
    chat = [r for r in fake_server.requests if r.path == "/v1/chat/completions"]
    for request in chat:  # each request: the whole session so far, its own prompt last
        roles = [m["role"] for m in request.json["messages"] if m["role"] in ("user", "assistant")]
        assert roles == ["user", "assistant"] * (len(roles) // 2) + ["user"], roles


# ---- one waits for the other ---------------------------------------------------------------------


class HeldReply:
    """Once armed, the next request's reply is held back until `release`; others are answered at once."""

    def __init__(self) -> None:
        self.armed, self.first_seen, self.release = threading.Event(), threading.Event(), threading.Event()

    def respond(self, request: RecordedRequest):
        if request.path != "/v1/chat/completions":
            return None
        if self.armed.is_set() and not self.first_seen.is_set():
            self.first_seen.set()
            self.release.wait(60)
        return _echo(request)


@pytest.fixture
def held(fake_server):
    holder = HeldReply()
    holder.armed.set()
    fake_server.respond_with(holder.respond)
    yield holder
    holder.release.set()


def test_a_second_ask_waits_visibly_and_answers_after_the_first(fake_server, compatible, held):
    first_seen, release = held.first_seen, held.release
    first = _start("ask", "first question", env=compatible)
    _wait_for(first_seen.is_set, "the first ask's request")
    second = _start("ask", "-c", "second question", env=compatible)
    lines: list[str] = []
    reader = _stderr_lines(second, lines)
    _wait_for(lambda: any("waiting for another zeph's turn on session 1" in line for line in lines), "the waiting line")
    waiting = next(line for line in lines if "waiting for" in line)
    assert f"to end (pid {first.pid}, zeph ask, since " in waiting  # who holds it, to find it if it hangs
    assert not any(m["content"] == "second question" for m in db_rows("select content from messages"))
    release.set()
    stdout, stderr = first.communicate(timeout=60)
    assert first.returncode == 0 and stdout.decode().strip() == "answer to first question", stderr.decode()
    second_out = second.stdout.read()
    assert second.wait(timeout=60) == 0, "".join(lines)
    reader.join(timeout=10)
    assert second_out.decode().strip() == "answer to second question"
    assert [text for _, text in _session_pairs(1)][-4:] == [
        "first question", "answer to first question", "second question", "answer to second question"]


def test_ctrl_c_while_waiting_keeps_the_prompt_in_a_file_and_leaves_the_session_alone(
    fake_server, compatible, held
):
    first_seen, release = held.first_seen, held.release
    first = _start("ask", "the running question", env=compatible)
    _wait_for(first_seen.is_set, "the first ask's request")
    second = _start("ask", "--session", "1", "a prompt typed with care", env=compatible)
    lines: list[str] = []
    reader = _stderr_lines(second, lines)
    _wait_for(lambda: any("waiting for another zeph" in line for line in lines), "the waiting line")
    second.send_signal(signal.SIGINT)
    assert second.wait(timeout=30) == 130
    reader.join(timeout=10)
    text = "".join(lines)
    assert "Traceback" not in text
    kept = text.split("it is kept in ", 1)[1].split()[0]
    assert Path(kept).read_text() == "a prompt typed with care\n"
    release.set()
    stdout, _ = first.communicate(timeout=60)
    assert stdout.decode().strip() == "answer to the running question"
    assert _session_pairs(1) == [("user", "the running question"), ("assistant", "answer to the running question")]


def test_a_killed_holder_does_not_keep_the_session_locked(fake_server, compatible, held):
    """kill -9 of the process running a turn: the next ask on the session goes ahead at once."""
    first_seen, release = held.first_seen, held.release
    first = _start("ask", "the question of a process that dies", env=compatible)
    _wait_for(first_seen.is_set, "the first ask's request")
    first.kill()
    first.wait(timeout=30)
    release.set()
    result = run_zeph("ask", "--session", "1", "and after it", env=compatible, timeout=60)
    assert result.returncode == 0, err(result)
    assert "waiting" not in err(result)
    assert out(result).strip() == "answer to and after it"


def test_zeph_compact_waits_for_a_running_turn(fake_server, compatible, held):
    held.armed.clear()
    for i in range(4):
        assert run_zeph("ask", *(["-c"] if i else []), f"earlier question {i}", env=compatible).returncode == 0
    held.armed.set()
    first = _start("ask", "-c", "a long turn", env=compatible)
    _wait_for(held.first_seen.is_set, "the turn's request")
    chat = lambda: [r for r in fake_server.requests if r.path == "/v1/chat/completions"]  # noqa: E731
    before = len(chat())
    compact = _start("compact", "--session", "1", env=compatible)
    lines: list[str] = []
    reader = _stderr_lines(compact, lines)
    _wait_for(lambda: any("waiting for another zeph's turn on session 1" in line for line in lines), "the waiting line")
    assert len(chat()) == before  # no summary is asked for while the turn runs
    held.release.set()
    assert first.wait(timeout=60) == 0
    compact.wait(timeout=60)
    reader.join(timeout=10)
    assert compact.returncode == 0, "".join(lines)
    assert len(chat()) > before  # then the compaction ran, on the finished turn
    hidden = db_rows("select count(*) as n from messages where conversation_id = 1 and agent_visible = 0")[0]["n"]
    assert hidden > 0


# ---- the lock itself -----------------------------------------------------------------------------


def test_two_locks_on_one_session_exclude_each_other_in_one_process(tmp_path):
    database = tmp_path / "zeph.db"
    first, second, other = (TurnLock(lock_path(database, 1)), TurnLock(lock_path(database, 1)),
                            TurnLock(lock_path(database, 2)))
    assert first.try_acquire()
    assert not second.try_acquire() and not second.held
    assert other.try_acquire()  # another session is not held up
    first.release()
    assert second.try_acquire()
    second.release()
    other.release()


async def test_a_cancelled_wait_holds_nothing(tmp_path):
    database = tmp_path / "zeph.db"
    holder, waiter = TurnLock(lock_path(database, 7)), TurnLock(lock_path(database, 7))
    assert holder.try_acquire()
    task = asyncio.create_task(waiter.acquire())
    await asyncio.sleep(0.2)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not waiter.held
    holder.release()
    assert TurnLock(lock_path(database, 7)).try_acquire()


async def test_a_wait_ends_when_the_holder_releases(tmp_path):
    database = tmp_path / "zeph.db"
    holder, waiter = TurnLock(lock_path(database, 3)), TurnLock(lock_path(database, 3))
    assert holder.try_acquire()
    task = asyncio.create_task(waiter.acquire())
    await asyncio.sleep(0.1)
    holder.release()
    await asyncio.wait_for(task, timeout=10)
    assert waiter.held
    waiter.release()


def test_no_lock_file_possible_means_no_wait(tmp_path):
    """A data dir that cannot hold the lock folder: turns go ahead, and the writes say why they fail."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    lock = TurnLock(lock_path(blocker / "zeph.db", 1))
    assert lock.try_acquire() and lock.held
    lock.release()
    assert TurnLock(None).try_acquire()


def test_deleting_a_session_removes_its_lock_file(fake_server, compatible):
    fake_server.respond_with(_echo)
    assert run_zeph("ask", "hello", env=compatible).returncode == 0
    lock = lock_path(Path(os.environ["ZEPH_HOME"]) / "zeph.db", 1)
    assert lock.exists()
    assert run_zeph("sessions", "rm", "1", env=compatible).returncode == 0
    assert not lock.exists()


# ---- a turn that gets no reply, a session deleted under a turn ---------------------------------------


def test_ctrl_c_before_any_reply_leaves_no_session_and_keeps_the_prompt(fake_server, compatible, held):
    proc = _start("ask", "a question interrupted before its answer", env=compatible)
    _wait_for(held.first_seen.is_set, "the request")
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr.decode()
    line = stderr.decode().strip().splitlines()[-1]
    assert line.startswith("zeph: interrupted before any reply; your prompt is not in the database; it is kept in ")
    assert Path(line.rsplit(" ", 1)[1]).read_text() == "a question interrupted before its answer\n"
    assert db_rows("select id from conversations") == []  # nothing for -c to continue


def test_ctrl_c_before_any_reply_in_a_continued_session_is_not_sent_again(fake_server, compatible, held):
    held.armed.clear()
    assert run_zeph("ask", "first", env=compatible).returncode == 0
    held.armed.set()
    proc = _start("ask", "-c", "second, interrupted", env=compatible)
    _wait_for(held.first_seen.is_set, "the request")
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "interrupted before any reply; your prompt is in session 1's scroll-back, marked unanswered" in stderr.decode()
    held.release.set()
    assert run_zeph("ask", "-c", "second, once more", env=compatible).returncode == 0
    last = [r for r in fake_server.requests if r.path == "/v1/chat/completions"][-1].json["messages"]
    assert [m["content"] for m in last if m["role"] == "user"] == ["first", "second, once more"]


def test_a_session_cannot_be_deleted_under_a_running_turn(fake_server, compatible, held):
    first = _start("ask", "a turn in progress", env=compatible)
    _wait_for(held.first_seen.is_set, "the request")
    refused = run_zeph("sessions", "rm", "1")
    assert refused.returncode == 1 and err(refused).startswith("zeph: error: another zeph is running a turn on session 1")
    held.release.set()
    stdout, stderr = first.communicate(timeout=60)
    assert first.returncode == 0 and stdout.decode().strip() == "answer to a turn in progress", stderr.decode()
    assert run_zeph("sessions", "rm", "1").returncode == 0
    assert not lock_path(Path(os.environ["ZEPH_HOME"]) / "zeph.db", 1).exists()


def test_a_session_deleted_while_a_turn_waited_for_it_keeps_the_prompt(fake_server, compatible):
    """The session goes while a turn waits for it (deleted under its lock): the waiting turn says so in one line
    and keeps the prompt in a file."""
    import sqlite3

    fake_server.respond_with(_echo)
    assert run_zeph("ask", "hello", env=compatible).returncode == 0
    database = Path(os.environ["ZEPH_HOME"]) / "zeph.db"
    holder = TurnLock(lock_path(database, 1))
    assert holder.try_acquire()
    waiting = _start("ask", "--session", "1", "typed for a session about to go", env=compatible)
    lines: list[str] = []
    reader = _stderr_lines(waiting, lines)
    _wait_for(lambda: any("waiting for another zeph" in line for line in lines), "the waiting line")
    with sqlite3.connect(database) as conn:  # as `zeph sessions rm 1` does, holding the lock
        conn.execute("pragma foreign_keys = on")
        conn.execute("delete from messages where conversation_id = 1")
        conn.execute("delete from conversations where id = 1")
    holder.remove()
    assert waiting.wait(timeout=60) == 1
    reader.join(timeout=10)
    text = "".join(lines)
    assert "Traceback" not in text and "internal error" not in text
    assert "zeph: error: no session with id 1" in text
    kept = text.split("it is kept in ", 1)[1].split()[0]
    assert Path(kept).read_text() == "typed for a session about to go\n"


def test_a_lock_taken_on_a_removed_file_does_not_count(tmp_path):
    """A waiter that opened the lock file before the holder removed it must not hold it afterwards."""
    database = tmp_path / "zeph.db"
    holder, stale = TurnLock(lock_path(database, 4)), TurnLock(lock_path(database, 4))
    assert holder.try_acquire()
    import fcntl

    fd = os.open(lock_path(database, 4), os.O_RDWR)  # a waiter's open file, from before the removal
    holder.remove()
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # it gets the old file's lock ...
    assert not stale._still_named(fd)  # ... which no longer names the lock
    os.close(fd)
    assert stale.try_acquire()  # a fresh file at the path
    stale.release()
