"""`zeph sessions import` through the real executable: JSON Lines and llm's logs.db (written by the real
`llm` against the fake OpenAI server), kept times and ids, idempotent re-imports, one-line errors, and
the imported messages indexed for recall."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import assert_one_line_error, db_rows, db_rows_safe, err, out, run_zeph
from tests.fakes import openai_wire


def _jsonl(path: Path, records: list[dict | str]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


HISTORY = [
    {"session": "trip", "role": "user", "content": "We booked the Lisbon flight TP1234 for the 14th of June.",
     "timestamp": "2023-05-08T13:56:00Z", "id": "t1", "title": "Lisbon trip"},
    {"session": "trip", "role": "assistant", "content": "Noted: TP1234 to Lisbon on June 14th.",
     "timestamp": "2023-05-08T15:57:30+02:00", "id": "t2"},
    {"session": 7, "role": "system", "content": "You are a terse assistant."},
    {"session": 7, "role": "human", "content": "My sister Maya is allergic to peanuts.", "timestamp": "2023-06-01"},
    {"session": "trip", "role": "user", "content": "The hotel is the Memmo Alfama, check-in after 3 pm.",
     "timestamp": 1683561600, "id": "t3"},
    {"session": 7, "role": "ai", "content": [{"type": "text", "text": "I will keep peanuts out of "},
                                            {"type": "text", "text": "any recipe for Maya."}]},
    {"session": 7, "role": "assistant", "content": "   "},
    {"session": 7, "role": "tool", "content": "{\"ok\": true}"},
]


def test_jsonl_import_keeps_sessions_roles_times_ids_and_indexes_them(tmp_path):
    source = _jsonl(tmp_path / "history.jsonl", HISTORY)
    result = run_zeph("sessions", "import", str(source))
    assert result.returncode == 0, err(result)
    text = out(result)
    assert f"imported 5 messages from {source} (2 new sessions)" in text
    assert "skipped: 1 system message, 1 empty message, 1 tool message" in text
    assert "indexed 5 messages" in text  # the same indexing as zeph memory reindex
    assert "\x1b" not in err(result)  # no progress bar on a pipe

    sessions = db_rows("select id, title, created_at, updated_at, provider, metadata from conversations order by id")
    assert [s["title"] for s in sessions] == ["Lisbon trip", "My sister Maya is allergic to peanuts."]
    assert [json.loads(s["metadata"])["imported"] for s in sessions] == [
        {"from": "jsonl", "session": "trip"}, {"from": "jsonl", "session": "7"}]
    # times in the store's format (UTC); a time without an offset is UTC, Unix seconds too
    trip = db_rows("select role, content, created_at, metadata from messages where conversation_id = ? order by position",
                   sessions[0]["id"])
    assert [(m["role"], m["created_at"]) for m in trip] == [
        ("user", "2023-05-08T13:56:00.000000+00:00"),
        ("assistant", "2023-05-08T13:57:30.000000+00:00"),
        ("user", "2023-05-08T16:00:00.000000+00:00"),
    ]
    assert [json.loads(m["metadata"])["external_id"] for m in trip] == ["t1", "t2", "t3"]
    assert (sessions[0]["created_at"], sessions[0]["updated_at"]) == (trip[0]["created_at"], trip[2]["created_at"])
    maya = db_rows("select role, content, created_at from messages where conversation_id = ? order by position",
                   sessions[1]["id"])
    # the reply without a time takes the time of the message before it; text parts are joined
    assert maya == [
        {"role": "user", "content": "My sister Maya is allergic to peanuts.", "created_at": "2023-06-01T00:00:00.000000+00:00"},
        {"role": "assistant", "content": "I will keep peanuts out of \nany recipe for Maya.",
         "created_at": "2023-06-01T00:00:00.000000+00:00"},
    ]
    vectors = db_rows("select count(*) as n from message_vectors")[0]["n"]
    assert vectors == 5
    # the transcript and full-text search see them like any session
    assert "Memmo Alfama" in out(run_zeph("sessions", "show", str(sessions[0]["id"])))
    assert out(run_zeph("sessions", "search", "peanuts")).startswith(f"{sessions[1]['id']}\t2023-06-01")
    # reindex has nothing left to do
    assert "indexed 0 messages" in out(run_zeph("memory", "reindex"))


def test_importing_again_stores_nothing_twice_and_continues_a_session(tmp_path):
    source = _jsonl(tmp_path / "history.jsonl", HISTORY)
    assert run_zeph("sessions", "import", str(source)).returncode == 0
    again = run_zeph("sessions", "import", str(source), "--json")
    assert again.returncode == 0, err(again)
    summary = json.loads(out(again))
    assert (summary["messages_added"], summary["messages_already_imported"], summary["sessions_new"]) == (0, 5, 0)
    assert db_rows("select count(*) as n from messages")[0]["n"] == 5
    # a longer export of the same sessions: only the new lines are stored, at the end of their session
    more = HISTORY + [
        {"session": "trip", "role": "assistant", "content": "Check-in after 3 pm at the Memmo Alfama.", "id": "t4",
         "timestamp": "2023-05-09T09:00:00Z"},
        {"session": 7, "role": "user", "content": "Also no shellfish for Maya, please."},
        {"session": "new", "role": "user", "content": "A third session."},
    ]
    grown = run_zeph("sessions", "import", str(_jsonl(tmp_path / "more.jsonl", more)), "--json")
    summary = json.loads(out(grown))
    assert (summary["messages_added"], summary["messages_already_imported"]) == (3, 5)
    assert (summary["sessions_new"], summary["sessions_continued"]) == (1, 2)
    assert [(s["key"], s["added"], s["new"]) for s in summary["sessions"]] == [("trip", 1, False), ("7", 1, False), ("new", 1, True)]
    trip = db_rows("select content from messages where conversation_id = 1 order by position")
    assert trip[-1]["content"] == "Check-in after 3 pm at the Memmo Alfama." and len(trip) == 4
    assert db_rows("select updated_at from conversations where id = 1")[0]["updated_at"] == "2023-05-09T09:00:00.000000+00:00"
    maya = db_rows("select content from messages where conversation_id = 2 order by position")
    assert [m["content"] for m in maya][-1] == "Also no shellfish for Maya, please." and len(maya) == 3
    # a dry run says what would come and stores nothing
    dry = run_zeph("sessions", "import", str(_jsonl(tmp_path / "dry.jsonl", more + [
        {"session": "trip", "role": "user", "content": "One more.", "id": "t5"}])), "--dry-run")
    assert dry.returncode == 0 and "would import 1 message" in out(dry)
    assert db_rows("select count(*) as n from messages")[0]["n"] == 8


def test_messages_without_ids_are_known_by_place_and_text(tmp_path):
    lines = [{"session": "s", "role": "user", "content": "hello"}, {"session": "s", "role": "assistant", "content": "hi"},
             {"session": "s", "role": "user", "content": "hello"}]
    source = _jsonl(tmp_path / "plain.jsonl", lines)
    first = json.loads(out(run_zeph("sessions", "import", str(source), "--json", "--no-index")))
    assert first["messages_added"] == 3 and "--no-index" in first["indexed"]
    assert db_rows("select count(*) as n from message_vectors")[0]["n"] == 0
    again = json.loads(out(run_zeph("sessions", "import", str(source), "--json")))
    assert (again["messages_added"], again["messages_already_imported"]) == (0, 3)
    assert db_rows("select count(*) as n from messages")[0]["n"] == 3


def test_standard_input_and_repeated_ids(tmp_path):
    lines = [{"session": "s", "role": "user", "content": "first", "id": "x"},
             {"session": "s", "role": "user", "content": "first again", "id": "x"}]
    result = run_zeph("sessions", "import", "-", input="".join(json.dumps(r) + "\n" for r in lines))
    assert result.returncode == 0, err(result)
    assert "imported 1 message from standard input" in out(result) and "1 repeated id" in out(result)


@pytest.mark.parametrize(("line", "needle"), [
    ("{not json", "line 2: not JSON"),
    ('["a list"]', "line 2: not a JSON object but a list"),
    ('{"role": "user", "content": "x"}', "line 2: no field 'session'"),
    ('{"session": "s", "role": "narrator", "content": "x"}', "line 2: field 'role': 'narrator' is not a role"),
    ('{"session": "s", "role": "user", "content": 5}', "line 2: field 'content' is a number"),
    ('{"session": "s", "role": "user", "content": "x", "timestamp": "8 May 2023"}',
     "line 2: field 'timestamp': '8 May 2023' is not an ISO 8601 time"),
    ('{"session": {"a": 1}, "role": "user", "content": "x"}', "line 2: field 'session' is an object"),
    ('{"session": "s", "role": "user", "content": "x", "id": [1]}', "line 2: field 'id' is a list"),
])
def test_a_bad_line_is_named_and_nothing_is_imported(tmp_path, line, needle):
    source = tmp_path / "bad.jsonl"
    source.write_text(json.dumps({"session": "s", "role": "user", "content": "ok"}) + "\n" + line + "\n", encoding="utf-8")
    result = run_zeph("sessions", "import", str(source))
    first = assert_one_line_error(result, 1, f"{source} {needle}")
    assert "nothing was imported" in first
    assert db_rows_safe("select id from conversations") == []


def test_skip_bad_imports_the_other_lines_and_names_the_bad_ones(tmp_path):
    source = tmp_path / "mixed.jsonl"
    source.write_bytes(b'{"session": "s", "role": "user", "content": "good one"}\n{broken\n'
                       b'\xff\xfe\n{"session": "s", "role": "assistant", "content": "good two"}\n')
    result = run_zeph("sessions", "import", str(source), "--skip-bad")
    assert result.returncode == 0, err(result)
    assert "imported 2 messages" in out(result) and "skipped: 2 bad lines" in out(result)
    warnings = err(result).splitlines()
    assert f"zeph: warning: {source} line 2: not JSON" in warnings[0]
    assert f"{source} line 3: not UTF-8 text" in warnings[1]


def test_unusable_sources_are_one_line_errors(tmp_path):
    assert_one_line_error(run_zeph("sessions", "import", str(tmp_path / "missing.jsonl")), 1, "cannot read", "missing.jsonl")
    assert_one_line_error(run_zeph("sessions", "import"), 2, "which file?")
    assert_one_line_error(run_zeph("sessions", "import", "x", "--from", "chatgpt"), 2, "--from 'chatgpt'")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    assert_one_line_error(run_zeph("sessions", "import", str(empty)), 1, "holds no messages")
    database = tmp_path / "logs.db"
    sqlite3.connect(database).execute("create table t (x)").connection.close()
    assert_one_line_error(run_zeph("sessions", "import", str(database)), 2, "is an SQLite database", "--from llm")
    assert_one_line_error(run_zeph("sessions", "import", "--from", "llm", str(database)), 1, "holds no llm logs")
    assert_one_line_error(run_zeph("sessions", "import", "--from", "llm", str(tmp_path / "nope.db")), 1,
                          "no llm log database at")


def test_an_interrupted_import_keeps_whole_sessions_and_resumes(tmp_path):
    """Each session is one transaction: a failure in the second leaves the first whole and none of the
    second; the same import then writes the rest."""
    from zeph_cli.store import ConversationStore, open_database
    from zeph_cli.store.imports import ImportedMessage, ImportedSession, write_session

    db = open_database(tmp_path / "zeph.db")
    sessions = [ImportedSession("jsonl", key, messages=[ImportedMessage("user", f"{key} {n}", position=n) for n in range(3)])
                for key in ("a", "b")]
    db.execute("create temp trigger stop before insert on messages when new.content = 'b 2' "
               "begin select raise(abort, 'the disk stopped'); end")
    write_session(db, sessions[0])
    with pytest.raises(sqlite3.DatabaseError):
        write_session(db, sessions[1])
    assert [r[0] for r in db.execute("select content from messages order by id")] == ["a 0", "a 1", "a 2"]
    assert db.execute("select count(*) from conversations").fetchone()[0] == 1
    db.execute("drop trigger stop")
    written = [write_session(db, s) for s in sessions]
    assert [(w.added, w.already, w.created) for w in written] == [(0, 3, False), (3, 0, True)]
    assert [len(ConversationStore(db).history(w.conversation_id)) for w in written] == [3, 3]


# ---- llm's logs.db ------------------------------------------------------------------------------

LLM = str(Path(sys.executable).parent / "llm")


def _llm(env: dict[str, str], *args: str) -> str:
    result = subprocess.run([LLM, *args], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _legacy_response(db: sqlite3.Connection, rid: str, conversation: str, name: str, prompt: str, response: str,
                     when: str, system: str | None = None) -> None:
    """A response as llm wrote it before its message store (Response.log_to_db of llm 0.27)."""
    db.execute("insert or ignore into conversations (id, name, model) values (?, ?, 'gpt-4o-mini')", [conversation, name])
    db.execute(
        "insert into responses (id, model, prompt, system, prompt_json, options_json, response, response_json, "
        "conversation_id, duration_ms, datetime_utc) values (?, 'gpt-4o-mini', ?, ?, '{}', '{}', ?, '{}', ?, 1500, ?)",
        [rid, prompt, system, response, conversation, when],
    )


@pytest.fixture
def llm_logs(fake_server, tmp_path):
    """A logs.db written by the real llm (its own migrations; the current message store) against the
    fake OpenAI server, plus a conversation logged by an older llm (legacy tables) that the real llm
    then continues."""
    if not Path(LLM).exists():
        pytest.skip("the llm command is not installed (pip install -e '.[test]')")
    env = {**os.environ, "LLM_USER_PATH": str(tmp_path / "llm"), "OPENAI_API_KEY": "sk-test",
           "OPENAI_BASE_URL": fake_server.url + "/v1"}
    for reply in ("Lisbon's airport code is LIS.", "Take the red metro line, about 20 minutes.",
                  "The legacy answer continues: tram 28.", "Ferries leave every hour."):
        fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks([reply])))
    _llm(env, "-m", "gpt-4o-mini", "-s", "You are a travel agent.", "What is the airport code for Lisbon?")
    _llm(env, "-c", "How do I get from the airport to the centre?")
    path = Path(_llm(env, "logs", "path").strip())
    with sqlite3.connect(path) as db:
        _legacy_response(db, "01h0000000000000000000legc", "01h00000000000000000000cnv", "Old trams",
                         "Which tram goes up to the castle?", "Tram 28 climbs to the castle.",
                         "2023-04-02T10:00:00.000000", system="Be brief.")
    _llm(env, "--cid", "01h00000000000000000000cnv", "And is it crowded?")
    notes = tmp_path / "notes.txt"
    notes.write_text("FERRY TIMETABLE: boats to Cacilhas every hour from Cais do Sodré.\n")
    _llm(env, "-m", "gpt-4o-mini", "-f", str(notes), "Summarize the notes")  # a fragment: stored once, referenced by the prompt
    return env, path


def test_llm_logs_import_every_conversation_once_in_order(llm_logs):
    env, path = llm_logs
    result = run_zeph("sessions", "import", "--from", "llm", str(path), "--json")
    assert result.returncode == 0, err(result)
    summary = json.loads(out(result))
    assert (summary["messages_added"], summary["sessions_new"]) == (10, 3)
    assert summary["skipped"] == {"system": 2}  # "You are a travel agent.", "Be brief."
    sessions = db_rows("select id, title, provider, model, metadata from conversations order by created_at")
    assert [(s["title"], s["provider"], s["model"]) for s in sessions][:2] == [
        ("Old trams", "llm", "gpt-4o-mini"), ("What is the airport code for Li…", "llm", "gpt-4o-mini")]  # llm's names
    old = db_rows("select role, content, created_at, metadata from messages where conversation_id = ? order by position",
                  sessions[0]["id"])
    assert [(m["role"], m["content"]) for m in old] == [
        ("user", "Which tram goes up to the castle?"), ("assistant", "Tram 28 climbs to the castle."),
        ("user", "And is it crowded?"), ("assistant", "The legacy answer continues: tram 28."),
    ]
    # llm's times are UTC; the reply's is its start plus its duration
    assert [m["created_at"] for m in old[:2]] == ["2023-04-02T10:00:00.000000+00:00", "2023-04-02T10:00:01.500000+00:00"]
    assert json.loads(old[0]["metadata"])["external_id"] == "01h0000000000000000000legc:prompt"
    new = db_rows("select role, content from messages where conversation_id = ? order by position", sessions[1]["id"])
    assert [(m["role"], m["content"]) for m in new] == [
        ("user", "What is the airport code for Lisbon?"), ("assistant", "Lisbon's airport code is LIS."),
        ("user", "How do I get from the airport to the centre?"),
        ("assistant", "Take the red metro line, about 20 minutes."),
    ]
    # what the user typed, without the fragment's content (as llm's own search leaves it out)
    notes = db_rows("select role, content from messages where conversation_id = ? order by position", sessions[2]["id"])
    assert [(m["role"], m["content"]) for m in notes] == [("user", "Summarize the notes"),
                                                          ("assistant", "Ferries leave every hour.")]
    assert db_rows("select count(*) as n from messages where content like '%TIMETABLE%'")[0]["n"] == 0
    assert db_rows("select count(*) as n from message_vectors")[0]["n"] == 10
    # nothing twice, and the database llm keeps is only read
    before = path.stat().st_mtime_ns
    again = json.loads(out(run_zeph("sessions", "import", "--from", "llm", str(path), "--json")))
    assert (again["messages_added"], again["messages_already_imported"]) == (0, 10)
    assert path.stat().st_mtime_ns == before
    # without a file, the one llm itself uses
    default = run_zeph("sessions", "import", "--from", "llm", "--dry-run", env={"LLM_USER_PATH": env["LLM_USER_PATH"]})
    assert default.returncode == 0 and f"would import 0 messages from {path}" in out(default)


# ---- encodings ----------------------------------------------------------------------------------

def test_a_utf8_byte_order_mark_is_not_part_of_the_line(tmp_path):
    """Windows tools start a UTF-8 file with a byte order mark; files concatenated with `cat` carry one
    at the start of each."""
    bom = b"\xef\xbb\xbf"
    first = json.dumps({"session": "s", "role": "user", "content": "Café Müller opens at 9.", "id": "a"}).encode()
    second = json.dumps({"session": "s", "role": "assistant", "content": "Noted.", "id": "b"}).encode()
    third = json.dumps({"session": "t", "role": "user", "content": "Another file.", "id": "c"}).encode()
    source = tmp_path / "excel.jsonl"
    source.write_bytes(bom + first + b"\r\n" + second + b"\r\n" + bom + third + b"\r\n")
    result = run_zeph("sessions", "import", str(source), "--no-index")
    assert result.returncode == 0, err(result)
    assert f"imported 3 messages from {source} (2 new sessions)" in out(result)
    rows = db_rows("select content, metadata from messages order by id")
    assert [r["content"] for r in rows] == ["Café Müller opens at 9.", "Noted.", "Another file."]
    assert [json.loads(r["metadata"])["external_id"] for r in rows] == ["a", "b", "c"]
    piped = run_zeph("sessions", "import", "-", "--no-index", input=bom + first + b"\n")
    assert piped.returncode == 0, err(piped)
    assert "already imported: 1 message (1 session)" in out(piped)


@pytest.mark.parametrize(("encoding", "named"), [
    ("utf-16", "UTF-16 text (it starts with a UTF-16 byte order mark)"),
    ("utf-16-le", "UTF-16LE text"),
    ("utf-16-be", "UTF-16BE text"),
    ("utf-32", "UTF-32 text"),
])
def test_a_file_in_another_encoding_is_one_error_even_skipping_bad_lines(tmp_path, encoding, named):
    source = tmp_path / "notepad.jsonl"
    lines = [{"session": "s", "role": "user", "content": "hello"}, {"session": "s", "role": "assistant", "content": "hi"}]
    source.write_bytes("".join(json.dumps(r) + "\n" for r in lines).encode(encoding))
    for flags in ((), ("--skip-bad",)):
        result = run_zeph("sessions", "import", str(source), *flags)
        assert_one_line_error(result, 1, f"{source} line 1: {named}", "not UTF-8", "nothing was imported", "iconv")
        assert len(err(result).splitlines()) == 1, err(result)
    assert db_rows_safe("select id from conversations") == []


def test_a_byte_that_is_not_utf8_names_its_line_and_column(tmp_path):
    source = tmp_path / "latin1.jsonl"
    good = json.dumps({"session": "s", "role": "user", "content": "fine"}).encode()
    source.write_bytes(good + b"\n" + good + b"\n" + '{"session": "s", "role": "user", "content": "café"}\n'.encode("latin-1"))
    first = assert_one_line_error(run_zeph("sessions", "import", str(source)), 1,
                                  f"{source} line 3: not UTF-8 text (byte 0xE9 at column 49)", "nothing was imported")
    assert "--skip-bad" in first
    assert db_rows_safe("select id from conversations") == []


# ---- imports running at once ----------------------------------------------------------------------

def _waiting_for_the_lock(process: subprocess.Popen, database: Path) -> bool:
    """Whether `process` has the database open and sleeps in SQLite's busy handler (its main thread in a
    nanosleep); where the kernel does not say, having the database open is taken as enough."""
    fds = Path(f"/proc/{process.pid}/fd")
    try:
        opened = any(os.readlink(fd) == str(database) for fd in fds.iterdir())
    except OSError:
        return False
    if not opened:
        return False
    try:
        wchan = Path(f"/proc/{process.pid}/wchan").read_text().strip()
    except OSError:
        return True
    return "sleep" in wchan or wchan in ("", "0")


def _imports_at_once(args: list[str], database: Path) -> list[dict]:
    """Two `zeph sessions import` processes started while this test holds the database's write lock, so
    both have started and wait for it, then run together once it is released; their JSON summaries."""
    from zeph_cli.store import open_database

    open_database(database).close()  # created and migrated, so the imports' first write is their own
    holder = sqlite3.connect(database, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    from tests.cli_helpers import ZEPH

    processes = [subprocess.Popen([ZEPH, *args, "--json"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE) for _ in range(2)]
    try:
        waiting: set[int] = set()
        while len(waiting) < 2:
            for n, process in enumerate(processes):
                assert process.poll() is None, process.communicate()[1].decode()
                if n not in waiting and _waiting_for_the_lock(process, database):
                    waiting.add(n)
            subprocess.run(["sleep", "0.05"])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    summaries = []
    for process in processes:
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr.decode()
        summaries.append(json.loads(stdout))
    return summaries


def _many_sessions(count: int = 12, size: int = 4) -> list[dict]:
    return [{"session": f"s{s}", "role": ("user", "assistant")[m % 2], "content": f"Session {s}, message {m}: port {s}{m}.",
             "id": f"s{s}-m{m}", "timestamp": f"2024-03-{s + 1:02d}T10:{m:02d}:00Z"}
            for s in range(count) for m in range(size)]


def _each_session_once(source: str, sessions: int, messages: int, summaries: list[dict]) -> None:
    keys = [json.loads(r["metadata"])["imported"]["session"] for r in db_rows(
        "select metadata from conversations where json_extract(metadata, '$.imported.from') = ?", source)]
    assert len(keys) == len(set(keys)) == sessions
    rows = db_rows("select conversation_id, json_extract(metadata, '$.external_id') as eid from messages")
    assert len(rows) == len({r["eid"] for r in rows}) == messages
    # each session and message was written by one import and found written by the other
    assert sum(s["messages_added"] for s in summaries) == messages
    assert sum(s["messages_already_imported"] for s in summaries) == messages
    assert sum(s["sessions_new"] for s in summaries) == sessions
    assert sum(s["sessions_already_imported"] for s in summaries) == sessions
    for summary in summaries:
        assert summary["sessions_new"] + summary["sessions_already_imported"] == sessions


def test_two_imports_of_one_file_at_once_store_each_session_once(tmp_path):
    records = _many_sessions()
    source = _jsonl(tmp_path / "history.jsonl", records)
    database = Path(os.environ["ZEPH_HOME"]) / "zeph.db"
    database.parent.mkdir(parents=True, exist_ok=True)
    summaries = _imports_at_once(["sessions", "import", str(source)], database)
    _each_session_once("jsonl", 12, len(records), summaries)
    assert db_rows("select count(*) as n from message_vectors")[0]["n"] == len(records)  # indexed once each
    again = run_zeph("sessions", "import", str(source))
    assert f"already imported: {len(records)} messages (12 sessions), not stored again" in out(again)


def test_two_llm_imports_at_once_store_each_conversation_once(tmp_path):
    pytest.importorskip("llm")
    import sqlite_utils
    from llm.migrations import migrate

    logs = tmp_path / "logs.db"
    llm_db = sqlite_utils.Database(logs)
    migrate(llm_db)
    llm_db.close()
    with sqlite3.connect(logs) as db:
        for c in range(8):
            for r in range(3):
                _legacy_response(db, f"01h{c:02d}{r:02d}", f"cnv{c}", f"Conversation {c}", f"Question {r} of {c}?",
                                 f"Answer {r} of {c}.", f"2023-04-{c + 1:02d}T10:0{r}:00.000000")
    database = Path(os.environ["ZEPH_HOME"]) / "zeph.db"
    database.parent.mkdir(parents=True, exist_ok=True)
    summaries = _imports_at_once(["sessions", "import", "--from", "llm", str(logs), "--no-index"], database)
    _each_session_once("llm", 8, 48, summaries)


def test_sessions_imported_twice_before_the_unique_key_keep_their_messages(tmp_path):
    """A database where two imports at once stored a session twice (before the unique key): the later
    copy keeps its messages and loses the key, and the next import continues the first."""
    from zeph_cli.store import open_database
    from zeph_cli.messages import Message
    from zeph_cli.store.conversations import message_record
    from zeph_cli.store.imports import ImportedMessage, ImportedSession, write_session
    from zeph_cli.store.migrations import migrate
    from zeph_cli.store.sqlite import Database

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    db = Database(conn)
    migrate(db, upto="m013_discarded_generated_text")
    marked = json.dumps({"imported": {"from": "jsonl", "session": "trip"}})
    for _ in range(2):
        conversation = db.insert("conversations", {"title": "Lisbon", "created_at": "2024-01-01", "updated_at": "2024-01-01",
                                                   "provider": "jsonl", "model": "", "cwd": "", "metadata": marked})
        db.insert("messages", message_record(conversation, Message.text("user", "TP1234"), metadata={"external_id": "t1"},
                                             stamp="2024-01-01T00:00:00.000000+00:00"))
    conn.close()
    db = open_database(path)
    rows = db.execute("select id, metadata from conversations order by id").fetchall()
    assert [json.loads(m) for _, m in rows] == [{"imported": {"from": "jsonl", "session": "trip"}},
                                                {"imported_again": {"from": "jsonl", "session": "trip"}}]
    assert db.execute("select count(*) from messages").fetchone()[0] == 2
    written = write_session(db, ImportedSession("jsonl", "trip", messages=[
        ImportedMessage("user", "TP1234", external_id="t1"), ImportedMessage("assistant", "Noted.", external_id="t2")]))
    assert (written.conversation_id, written.added, written.already, written.created) == (rows[0][0], 1, 1, False)
    with pytest.raises(sqlite3.IntegrityError):
        db.insert("conversations", {"title": "x", "created_at": "", "updated_at": "", "provider": "", "model": "",
                                    "cwd": "", "metadata": marked})
