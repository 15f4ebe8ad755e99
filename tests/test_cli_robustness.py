"""`zeph ask` when its surroundings fail: the working directory, the config, the database.

Each case runs the real executable on real SQLite files: one `zeph: error:` line,
a non-zero exit, never a traceback, and the typed prompt kept where the user is told.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import time
from pathlib import Path

from tests.cli_helpers import ZEPH, assert_one_line_error, db_rows, db_rows_safe, err, out, run_zeph
from tests.fakes import openai_wire


def _kept_in_a_file(result, text: str) -> Path:
    """The prompt of a command that failed before any reply is in a file it names; no session was left."""
    line = next(line for line in err(result).splitlines() if "your prompt is not in the database; it is kept in" in line)
    kept = Path(line.rsplit(" ", 1)[1])
    assert kept.read_text() == text + "\n"
    assert db_rows_safe("select id from conversations") == []
    return kept


def _unanswered_in_session(result, session: int) -> None:
    assert (f"zeph: your prompt is in session {session}'s scroll-back, marked unanswered; later turns will not "
            f"send it (zeph sessions show {session})") in err(result)


def test_a_deleted_working_directory_is_one_line_and_the_prompt_is_kept(tmp_path, compatible):
    gone = tmp_path / "gone"
    gone.mkdir()
    result = subprocess.run(
        ["sh", "-c", f'cd "{gone}" && rmdir "{gone}" && exec "{ZEPH}" ask "a prompt typed in a lost directory"'],
        capture_output=True, env={**os.environ, **compatible}, stdin=subprocess.DEVNULL, timeout=60,
    )
    first = assert_one_line_error(result, 1, "working directory", str(gone), "cd to an existing directory")
    assert "internal error" not in first
    _kept_in_a_file(result, "a prompt typed in a lost directory")


def test_a_missing_api_key_keeps_the_prompt_and_leaves_no_session_for_c_to_continue(fake_server, compatible):
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["An earlier answer."])))
    assert run_zeph("ask", "an earlier question", env=compatible).returncode == 0
    result = run_zeph("ask", "-p", "anthropic", "-s", "be brief", "what I typed before the key was set")
    assert_one_line_error(result, 1, "ANTHROPIC_API_KEY")
    line = next(line for line in err(result).splitlines() if "it is kept in" in line)
    assert Path(line.rsplit(" ", 1)[1]).read_text() == "what I typed before the key was set\n"
    assert [r["title"] for r in db_rows("select title from conversations")] == ["an earlier question"]
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Continued."])))
    again = run_zeph("ask", "-c", "so -c goes on with the earlier session", env=compatible)
    assert again.returncode == 0, err(again)
    sent = fake_server.requests_to("/v1/chat/completions")[-1].json["messages"]
    assert [m["content"] for m in sent if m["role"] in ("user", "assistant")][-3:] == [
        "an earlier question", "An earlier answer.", "so -c goes on with the earlier session"]


def test_a_missing_local_model_file_in_a_continued_session_is_kept_unanswered_and_never_sent(
    tmp_path, fake_server, compatible
):
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["First answer."])))
    assert run_zeph("ask", "first words", env=compatible).returncode == 0
    missing = tmp_path / "nowhere.gguf"
    again = run_zeph("ask", "-p", "local", "-m", str(missing), "-c", "second words")
    assert_one_line_error(again, 2, str(missing))
    _unanswered_in_session(again, 1)
    rows = db_rows("select content, agent_visible, user_visible from messages order by id")
    assert [(r["content"], r["agent_visible"], r["user_visible"]) for r in rows] == [
        ("first words", 1, 1), ("First answer.", 1, 1), ("second words", 0, 1)]
    assert "second words" in out(run_zeph("sessions", "show", "1"))  # the user still sees it
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Third answer."])))
    assert run_zeph("ask", "-c", "second words, once more", env=compatible).returncode == 0
    sent = fake_server.requests_to("/v1/chat/completions")[-1].json["messages"]
    assert "second words" not in [m["content"] for m in sent]  # sent once, as typed again


def test_an_unknown_session_is_still_only_a_usage_mistake():
    assert_one_line_error(run_zeph("ask", "--session", "7", "hello"), 1, "7")
    assert not (Path(os.environ["ZEPH_HOME"]) / "zeph.db").exists() or db_rows("select id from messages") == []


def test_a_database_locked_past_the_busy_timeout_keeps_the_prompt_in_a_file(fake_server, compatible):
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["never sent"])))
    assert run_zeph("sessions", "list").returncode == 0  # creates and migrates the database
    database = Path(os.environ["ZEPH_HOME"]) / "zeph.db"
    holder = sqlite3.connect(database, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock for the whole run
        result = run_zeph("ask", "a prompt the locked database cannot take", env=compatible)
    finally:
        holder.close()
    first = assert_one_line_error(result, 1, str(database), "stayed locked for 5 s", "busy timeout")
    assert "zeph process" not in first  # who holds the lock is not guessed
    kept = err(result).splitlines()[1]
    assert kept.startswith("zeph: your prompt is not in the database; it is kept in ")
    rescue = Path(kept.rsplit(" ", 1)[1])
    assert rescue.parent == database.parent / "unsaved-prompts"
    assert rescue.read_text() == "a prompt the locked database cannot take\n"
    assert fake_server.requests_to("/v1/chat/completions") == []


def _unreadable(path: Path) -> None:
    """A project file reading fails on: mode 000, or (root reads any mode) a link to /proc/self/mem (EIO)."""
    if os.geteuid() == 0:
        path.symlink_to("/proc/self/mem")
    else:
        path.write_text("secret")
        path.chmod(0)


def test_project_files_too_big_binary_or_unreadable_are_warnings_in_ask(fake_server, compatible, tmp_path):
    project = tmp_path / "proj"
    (project / "sub" / ".zeph").mkdir(parents=True)
    (project / "ZEPH.md").write_bytes(b"huge " * 200_001)
    (project / "sub" / "ZEPH.md").write_text("Answer in haiku.")
    (project / "sub" / "ZEPH.local.md").write_bytes(b"\x7fELF\x00\x01binary")
    _unreadable(project / "sub" / ".zeph" / "config.md")
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Fine."])))
    result = run_zeph("ask", "hello", env=compatible, cwd=project / "sub")
    assert result.returncode == 0, err(result)
    warnings = [line for line in err(result).splitlines() if line.startswith("zeph: warning: ")]
    assert any(f"{project / 'ZEPH.md'}: larger than 1,000,000 bytes" in w for w in warnings), warnings
    assert any(f"{project / 'sub' / 'ZEPH.local.md'}: binary" in w for w in warnings), warnings
    assert any(f"{project / 'sub' / '.zeph' / 'config.md'}: cannot be read" in w for w in warnings), warnings
    system = "\n".join(m["content"] for m in fake_server.requests_to("/v1/chat/completions")[0].json["messages"]
                       if m["role"] == "system")
    assert "Answer in haiku." in system and "huge" not in system and "ELF" not in system


def test_ask_on_a_database_from_a_newer_zeph_refuses_in_one_line(fake_server, compatible):
    assert run_zeph("sessions", "list").returncode == 0
    database = Path(os.environ["ZEPH_HOME"]) / "zeph.db"
    with sqlite3.connect(database) as conn:
        conn.execute("insert into _zeph_migrations values ('m042_newer', '2030-01-01')")
    result = run_zeph("ask", "hello", env=compatible)
    assert_one_line_error(result, 1, str(database), "newer zeph", "m042_newer")
    assert db_rows("select id from messages") == [] and fake_server.requests_to("/v1/chat/completions") == []
    kept = err(result).splitlines()[1]  # the prompt is kept in a file, since the database takes nothing
    assert Path(kept.rsplit(" ", 1)[1]).read_text() == "hello\n"


def _outcome(request, tries: int = 1200) -> str:
    """How the fake server's reply to `request` ended, once it has (it learns of a hang-up on its next write)."""
    for _ in range(tries):
        if request.outcome:
            return request.outcome
        time.sleep(0.025)
    return request.outcome


def test_a_reader_that_closes_the_pipe_stops_the_turn_quietly_and_keeps_what_came(fake_server, compatible):
    """`zeph ask … | head -c 6`: no error, exit 0, the turn stops at once, and the text received so far
    is stored (marked partial) for the next `-c` turn."""
    pieces = [f"word{i} " for i in range(40)]
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(pieces), chunk_delay=0.05))
    read, write = os.pipe()
    process = subprocess.Popen(
        [ZEPH, "ask", "tell me a long story"], stdout=write, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        env={**os.environ, **compatible},
    )
    os.close(write)
    with os.fdopen(read, "rb") as reader:
        head = reader.read(6)  # `head -c 6`, then the reader goes
    _, stderr = process.communicate(timeout=60)
    assert head == b"word0 "
    assert (process.returncode, stderr.decode()) == (0, "")
    assert _outcome(fake_server.requests[-1]) == "client-closed"  # the turn stopped: the reply was not read to its end
    replies = db_rows("select content, metadata from messages where role = 'assistant'")
    assert len(replies) == 1 and replies[0]["content"].startswith("word0 ")
    assert len(replies[0]["content"]) < len("".join(pieces))
    assert '"partial": true' in replies[0]["metadata"]

    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["go on"])))
    result = run_zeph("ask", "-c", "go on", env=compatible)
    assert result.returncode == 0, err(result)
    sent = fake_server.requests[-1].body.decode()
    assert replies[0]["content"].strip() in sent  # the next turn sees what the first one received
