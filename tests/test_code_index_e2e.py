"""The code index end to end through the real `zeph`, in a real git project: `zeph index` (the build's
summary, updates that read only what changed, what is left out and why), `status`, `search`, `map`,
`clear` and their failures; and what a `zeph ask` in the project sends the model (`<code_context>`,
`<repo_map>`, the search_code tool and its results) and `zeph context` reports, and does not send
elsewhere.

Functions are looked for by what they do, in words their names do not use."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.chat_wire import chat_requests, queue_call, queue_reply, tool_names, tool_results
from tests.cli_helpers import assert_one_line_error, err, out, run_zeph
from tests.conftest import isolate

pytestmark = pytest.mark.xdist_group("code_index_e2e")  # one worker runs the module (--dist loadgroup): the project is indexed once

CHECKOUT = Path(__file__).resolve().parents[1]
SAMPLES = CHECKOUT / "tests" / "data" / "code_samples"
MAX_FILE_BYTES = 20_000
# The embedded wordllama embedder: vectors in a fraction of a second (retrieval is hybrid, as by default).
ENV = {"ZEPH_MEMORY_EMBEDDER": "wordllama", "ZEPH_INDEX_MAX_FILE_BYTES": str(MAX_FILE_BYTES)}
SUMMARY_KEYS = {"root", "files", "chunks", "parsed", "unchanged", "removed", "skipped", "embedded", "seconds"}
HIT_KEYS = {"path", "start_line", "end_line", "symbol", "score"}

RETRYING = '''"""Helpers for talking to flaky services."""

import random
import time


def call_with_retries(operation, attempts=5, base_delay=0.1):
    """Run operation; when it fails, wait longer each time (exponential backoff with jitter), then give up."""
    for attempt in range(attempts):
        try:
            return operation()
        except ConnectionError:
            if attempt == attempts - 1:
                raise
            time.sleep(base_delay * (2 ** attempt) + random.random() * base_delay)
'''

TABLES = '''"""Tabular text files."""

import csv


def read_rows(path, delimiter=","):
    """Parse a comma-separated values file into dictionaries keyed by the header line."""
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle, delimiter=delimiter))


def column_totals(rows, column):
    """Add up one numeric column over all records."""
    return sum(float(row[column]) for row in rows)
'''

UNITS = '''"""Numbers for people."""


def human_size(count):
    """Format a byte count as kilobytes, megabytes or gigabytes with one decimal."""
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1024:
            return f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} TB"
'''

MAIN = '''from app.retrying import call_with_retries
from app.tables import column_totals, read_rows
from app.units import human_size


def report(path):
    rows = call_with_retries(lambda: read_rows(path))
    return human_size(column_totals(rows, "amount"))
'''

# (what it does, in other words than its name's; the path; the symbol; a line of its code)
DESCRIBED = [
    ("wait longer between attempts when an operation keeps failing", "app/retrying.py", "call_with_retries",
     "time.sleep(base_delay * (2 ** attempt) + random.random() * base_delay)"),
    ("parse comma separated values into dictionaries keyed by the header", "app/tables.py", "read_rows",
     "return list(csv.DictReader(handle, delimiter=delimiter))"),
    ("format a byte count as kilobytes or megabytes", "app/units.py", "human_size", 'return f"{count:.1f} {unit}"'),
]
LEFT_OUT = {"vendored": 1, "binary": 1, "too large": 1}  # node_modules/…, a NUL byte, over MAX_FILE_BYTES


def make_project(root: Path) -> Path:
    """A git work tree (nothing committed: git lists untracked files too) with the code samples of every
    parsed language, four Python modules, and files the index leaves out."""
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for sample in SAMPLES.iterdir():
        shutil.copy(sample, root / sample.name)
    app = root / "app"
    app.mkdir()
    for name, text in (("retrying", RETRYING), ("tables", TABLES), ("units", UNITS), ("main", MAIN)):
        (app / f"{name}.py").write_text(text)
    (app / "__init__.py").write_text("")
    (root / "README.md").write_text("# Reports\n\nReads a CSV export and prints its total amount.\n")
    (root / ".gitignore").write_text("local_settings.py\n")
    (root / "local_settings.py").write_text("def very_private_helper():\n    return 'ignored by git'\n")
    (root / "node_modules" / "left-pad").mkdir(parents=True)
    (root / "node_modules" / "left-pad" / "index.js").write_text("function leftPadVendored(s) { return s; }\n")
    (root / "packed.py").write_bytes(b"def packed_blob():\n    return 1\n\x00\x01\x02")
    (root / "fixture_rows.py").write_text("".join(f"ROW_{n} = {n}\n" for n in range(MAX_FILE_BYTES // 10)))
    return root


@pytest.fixture(autouse=True)
def this_checkouts_zeph(monkeypatch):
    """The `zeph` subprocesses run this checkout's code, whichever checkout the installed package points at."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(CHECKOUT), os.environ.get("PYTHONPATH")])))


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> SimpleNamespace:
    """The project, indexed once (with vectors) by the real `zeph index --json`, under a test's isolation."""
    root = tmp_path_factory.mktemp("indexed")
    project = make_project(root / "project")
    with pytest.MonkeyPatch.context() as patch:
        isolate(patch, root)
        patch.setenv("PYTHONPATH", str(CHECKOUT))
        built = run_zeph("index", "--json", env=ENV, cwd=project)
    assert built.returncode == 0, err(built)
    summary = json.loads(out(built))
    return SimpleNamespace(root=project, home=root / "zeph-home", summary=summary,
                           env={**ENV, "ZEPH_HOME": str(root / "zeph-home")})


def _json_lines(result) -> list[dict]:
    assert result.returncode == 0, err(result)
    return [json.loads(line) for line in out(result).splitlines()]


def _build(cwd: Path, *args: str, env: dict[str, str] | None = None) -> dict:
    result = run_zeph("index", "--json", "--no-embed", *args, env={**ENV, **(env or {})}, cwd=cwd)
    assert result.returncode == 0, err(result)
    [line] = out(result).splitlines()
    return json.loads(line)


def _lines_of(root: Path, hit: dict) -> str:
    return "\n".join((root / hit["path"]).read_text().splitlines()[hit["start_line"] - 1: hit["end_line"]])


# ---- zeph index: the build ---------------------------------------------------------------------


def test_the_first_build_stores_every_file_with_vectors_and_counts_what_it_left_out_by_reason(indexed):
    summary = indexed.summary
    assert SUMMARY_KEYS <= set(summary), summary
    assert summary["root"] == str(indexed.root.resolve())
    # 10 samples, 5 modules of app/ (one empty), README.md
    assert summary["files"] == 16 and summary["parsed"] == 16, summary
    assert summary["unchanged"] == 0 and summary["removed"] == 0
    assert {why: summary["skipped"].get(why) for why in LEFT_OUT} == LEFT_OUT, summary["skipped"]
    assert summary["chunks"] > summary["files"]
    assert summary["embedded"] == summary["chunks"] and summary["vectors"] == summary["chunks"]
    assert summary["embedding_model"].startswith("wordllama/")
    assert isinstance(summary["seconds"], float) and summary["seconds"] >= 0
    # what git ignores is not even seen; the left-out files' definitions are nowhere in the index
    names = ["very_private_helper", "leftPadVendored", "packed_blob", "ROW_1999"]
    answers = _json_lines(run_zeph("index", "search", "--json", input="\n".join(names), env=indexed.env, cwd=indexed.root))
    assert [a["query"] for a in answers] == names
    for answer in answers:
        assert not any(answer["query"] in _lines_of(indexed.root, hit) for hit in answer["hits"]), answer


def test_an_update_reads_only_what_changed_and_the_summary_is_one_line(tmp_path):
    project = make_project(tmp_path / "project")
    first = run_zeph("index", "--no-embed", env=ENV, cwd=project)
    assert first.returncode == 0, err(first)
    [line] = out(first).splitlines()
    match = re.fullmatch(r"indexed (\S+): (\d+) files, (\d+) chunks; (\d+) parsed, 0 unchanged, 0 removed, "
                         r"(\d+) skipped \((.+)\); (\d+\.\d) s", line)
    assert match, line
    assert match[1] == str(project.resolve()) and match[2] == match[4] == "16"
    assert all(f"{n} {why}" in match[6] for why, n in LEFT_OUT.items()), line
    chunks = int(match[3])

    again = _build(project)
    assert (again["parsed"], again["unchanged"], again["removed"]) == (0, 16, 0), again
    assert again["chunks"] == chunks and again["embedded"] == 0

    tables = project / "app" / "tables.py"
    tables.write_text(TABLES + '\n\ndef column_mean(rows, column):\n    """The average of one column."""\n'
                      '    return column_totals(rows, column) / len(rows)\n')
    edited = _build(project)
    assert (edited["parsed"], edited["unchanged"], edited["removed"]) == (1, 15, 0), edited
    assert edited["chunks"] == chunks + 1

    os.utime(project / "app" / "units.py", ns=(1, 1))  # a new stat, the same content: read, not parsed
    touched = _build(project)
    assert (touched["parsed"], touched["removed"], touched["chunks"]) == (0, 0, chunks + 1), touched

    (project / "app" / "main.py").unlink()
    removed = _build(project)
    assert (removed["parsed"], removed["removed"], removed["files"]) == (0, 1, 15), removed
    hits = _json_lines(run_zeph("index", "search", "report", "--json", env=ENV, cwd=project))
    assert all(hit["path"] != "app/main.py" for hit in hits)

    cleared = run_zeph("index", "clear", env=ENV, cwd=project)
    assert cleared.returncode == 0 and out(cleared).strip() == f"{project.resolve()}: index cleared", out(cleared)
    rebuilt = _build(project)  # everything is read again: the clear forgot every file
    assert (rebuilt["parsed"], rebuilt["unchanged"], rebuilt["files"]) == (15, 0, 15), rebuilt
    assert rebuilt["chunks"] == chunks  # main.py's chunk went with the file, column_mean's came


def test_after_clear_the_project_is_not_indexed(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "units.py").write_text(UNITS)
    assert _build(project)["chunks"] == 1
    assert run_zeph("index", "clear", env=ENV, cwd=project).returncode == 0
    status = run_zeph("index", "status", "--json", env=ENV, cwd=project)
    assert json.loads(out(status)) == {"root": str(project.resolve()), "indexed": False}
    assert "not indexed yet" in out(run_zeph("index", "status", env=ENV, cwd=project))
    assert_one_line_error(run_zeph("index", "search", "byte count", env=ENV, cwd=project), 1, "not indexed yet")


# ---- status, search, map ------------------------------------------------------------------------


def test_status_says_what_the_build_stored(indexed):
    data = json.loads(out(run_zeph("index", "status", "--json", env=indexed.env, cwd=indexed.root)))
    summary = indexed.summary
    assert data["root"] == summary["root"] and data["indexed"] is True
    assert (data["files"], data["chunks"]) == (summary["files"], summary["chunks"])
    assert data["embedded"] == {summary["embedding_model"]: summary["chunks"]}
    assert data["languages"]["python"] == 6 and {"go", "rust", "java", "typescript", "bash"} <= set(data["languages"])
    assert data["tags"] > 0 and data["indexed_at"]
    text = run_zeph("index", "status", env=indexed.env, cwd=indexed.root)
    first = out(text).splitlines()[0]
    assert first.startswith(f"{summary['root']}: {summary['files']} files, {summary['chunks']} chunks, {data['tags']} tags"), first


@pytest.mark.parametrize("described, path, symbol, code", DESCRIBED, ids=[d[2] for d in DESCRIBED])
def test_search_finds_a_function_by_what_it_does(indexed, described, path, symbol, code):
    hits = _json_lines(run_zeph("index", "search", described, "--json", "-k", "5", env=indexed.env, cwd=indexed.root))
    assert 0 < len(hits) <= 5
    assert all(set(hit) == HIT_KEYS for hit in hits), hits
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    top = [(h["path"], h["symbol"]) for h in hits[:3]]
    assert (path, symbol) in top, top
    hit = next(h for h in hits if h["symbol"] == symbol)
    assert code in _lines_of(indexed.root, hit) and f"def {symbol}(" in _lines_of(indexed.root, hit)


def test_search_reads_one_query_per_line_and_answers_one_json_line_each(indexed):
    queries = [described for described, *_ in DESCRIBED]
    stdin = queries[0] + "\n\n" + "\n".join(queries[1:]) + "\n"  # a blank line is no query
    answers = _json_lines(run_zeph("index", "search", "--json", "-k", "3", input=stdin, env=indexed.env, cwd=indexed.root))
    assert [a["query"] for a in answers] == queries
    for answer, (_, path, symbol, _) in zip(answers, DESCRIBED):
        assert set(answer) == {"query", "hits"} and 0 < len(answer["hits"]) <= 3
        assert all(set(hit) == HIT_KEYS for hit in answer["hits"])
        assert (path, symbol) in [(h["path"], h["symbol"]) for h in answer["hits"]], answer
    one = _json_lines(run_zeph("index", "search", queries[1], "--json", "-k", "3", env=indexed.env, cwd=indexed.root))
    assert one == answers[1]["hits"]  # the same search either way


def _map(indexed, tokens: int, query: str) -> tuple[str, list[str]]:
    result = run_zeph("index", "map", "--tokens", str(tokens), "--query", query, env=indexed.env, cwd=indexed.root)
    assert result.returncode == 0, err(result)
    text = out(result).rstrip("\n")
    files = [line[:-1] for line in text.splitlines()[2:-1] if not line[0].isspace()]
    return text, files


def test_the_map_fits_its_tokens_and_ranks_the_file_the_message_names(indexed):
    from zeph_cli.tokens import default_counter

    count = default_counter().count
    text, files = _map(indexed, 200, "what does app/units.py do?")
    assert text.startswith("<repo_map>\n") and text.endswith("\n</repo_map>")
    assert count(text) <= 200, count(text)
    assert "app/units.py" in files[:3], files  # beside the files of the chunks retrieved for the message
    assert "app/units.py:\n  def human_size(count):" in text
    _, named = _map(indexed, 200, "explain sample.go")
    assert named[0] == "sample.go", named
    assert "sample.go" not in files[:1]
    bigger, more = _map(indexed, 2000, "what does app/units.py do?")
    assert count(bigger) <= 2000 and len(more) > len(files) and more[:len(files)] == files


# ---- failures -----------------------------------------------------------------------------------


def test_each_bad_option_is_one_error_line_with_exit_2(indexed):
    here = {"env": indexed.env, "cwd": indexed.root}
    zero = run_zeph("index", "search", "retry", "-k", "0", **here)
    assert zero.returncode == 2 and "Traceback" not in err(zero), err(zero)
    [error] = [line for line in err(zero).splitlines() if line.startswith("Error:")]  # click's usage error
    assert error.startswith("Error: Invalid value for '-k': 0 is not in the range"), err(zero)
    assert_one_line_error(run_zeph("index", "search", "--json", input="", **here), 2, "give a QUERY")
    assert_one_line_error(run_zeph("index", "search", input="\n  \n", **here), 2, "give a QUERY")
    cobol = run_zeph("index", env={**indexed.env, "ZEPH_INDEX_LANGUAGES": "cobol"}, cwd=indexed.root)
    assert_one_line_error(cobol, 2, "ZEPH_INDEX_LANGUAGES", "'cobol'")


def test_an_index_turned_off_or_not_built_is_one_error_line_with_exit_1(indexed, tmp_path):
    off = run_zeph("index", "status", env={**indexed.env, "ZEPH_INDEX_ENABLED": "false"}, cwd=indexed.root)
    assert_one_line_error(off, 1, "the code index is off", "ZEPH_INDEX_ENABLED")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    subprocess.run(["git", "init", "-q", str(fresh)], check=True)
    (fresh / "tool.py").write_text("def tool():\n    return 1\n")
    for args in (("search", "tool"), ("map",)):
        assert_one_line_error(run_zeph("index", *args, env=ENV, cwd=fresh), 1, f"{fresh.resolve()} is not indexed yet")


def test_outside_a_git_work_tree_the_index_is_off_until_enabled_explicitly(tmp_path, fake_server, compatible):
    folder = tmp_path / "scratch"
    folder.mkdir()
    (folder / "scratch.py").write_text(UNITS)
    refused = run_zeph("index", "--no-embed", env=ENV, cwd=folder)
    assert_one_line_error(refused, 1, "not inside a git work tree", "ZEPH_INDEX_ENABLED=true")
    assert not out(refused)
    enabled = {**ENV, "ZEPH_INDEX_ENABLED": "true"}  # the advice, followed
    built = _build(folder, env=enabled)
    assert (built["root"], built["files"], built["parsed"]) == (str(folder.resolve()), 1, 1), built
    hits = _json_lines(run_zeph("index", "search", DESCRIBED[2][0], "--json", env=enabled, cwd=folder))
    assert hits[0]["path"] == "scratch.py" and hits[0]["symbol"] == "human_size"

    # a turn here, the index left at its default: off, though this folder was indexed
    queue_reply(fake_server)
    asked = run_zeph("ask", "How do we format a byte count as megabytes?", env={**compatible, **ENV}, cwd=folder)
    assert asked.returncode == 0, err(asked)
    _assert_no_code_index(chat_requests(fake_server)[-1])


def _assert_no_code_index(request) -> None:
    sent = "\n".join(str(m.get("content") or "") for m in request.json["messages"])
    assert "<code_context>" not in sent and "<repo_map>" not in sent
    assert "search_code" not in tool_names(request) and "read_file" in tool_names(request)


def test_a_git_project_never_indexed_gets_neither_block_nor_search_code(tmp_path, fake_server, compatible):
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "units.py").write_text(UNITS)
    queue_reply(fake_server)
    asked = run_zeph("ask", "How do we format a byte count as megabytes?", env={**compatible, **ENV}, cwd=project)
    assert asked.returncode == 0, err(asked)
    _assert_no_code_index(chat_requests(fake_server)[-1])
    shown = json.loads(out(run_zeph("context", "--json", env={**compatible, **ENV}, cwd=project)))
    assert not {"repo map", "code context"} & {b["name"] for b in shown["context"]["blocks"]}
    assert any("zeph index" in line for line in shown["extras"]), shown["extras"]  # says how to build it


# ---- a turn in the indexed project ---------------------------------------------------------------


def _block(request, tag: str) -> tuple[int, str]:
    found = [(n, m["content"]) for n, m in enumerate(request.json["messages"]) if str(m.get("content") or "").startswith(f"<{tag}>")]
    assert len(found) == 1, [str(m.get("content"))[:40] for m in request.json["messages"]]
    return found[0]


def test_a_turn_gets_the_described_code_the_map_and_search_code(indexed, fake_server, compatible):
    shutil.copytree(indexed.home, os.environ["ZEPH_HOME"])  # this test's sessions are its own
    env = {**compatible, **ENV}
    retry, csv_parser = DESCRIBED[0], DESCRIBED[1]
    [best] = _json_lines(run_zeph("index", "search", csv_parser[0], "--json", "-k", "1", env=env, cwd=indexed.root))

    queue_call(fake_server, "search_code", {"query": csv_parser[0]})
    queue_reply(fake_server, "It backs off in call_with_retries.")
    message = f"Where do we {retry[0]}?"
    asked = run_zeph("ask", message, env=env, cwd=indexed.root)
    assert asked.returncode == 0, err(asked)
    first, second = chat_requests(fake_server)[-2:]

    at_code, code = _block(first, "code_context")
    at_map, repo_map = _block(first, "repo_map")
    assert code.endswith("</code_context>")
    function = (indexed.root / retry[1]).read_text().split("\n\n\n")[1].strip()  # the whole function, as in the file
    assert function in code and "app/retrying.py:7-15" in code, code
    assert "app/retrying.py:\n  def call_with_retries(operation, attempts=5, base_delay=0.1):" in repo_map
    messages = first.json["messages"]
    assert messages[-1] == {"role": "user", "content": message}
    assert len(messages) - 3 <= min(at_code, at_map) and max(at_code, at_map) == len(messages) - 2  # just before it
    assert "search_code" in tool_names(first)

    [result] = tool_results(second)
    header = f"{best['path']}:{best['start_line']}-{best['end_line']}"
    assert best["symbol"] == "read_rows" and header in result, result
    assert _lines_of(indexed.root, best) in result  # the chunk's code, as stored

    # the next turn asks for that code: it is in the conversation already, so <code_context> leaves it out
    queue_reply(fake_server, "read_rows parses it.")
    again = run_zeph("ask", "--continue", f"Where do we {csv_parser[0]}?", env=env, cwd=indexed.root)
    assert again.returncode == 0, err(again)
    third = chat_requests(fake_server)[-1]
    assert any(header in r for r in tool_results(third))  # still in the history sent
    _, code = _block(third, "code_context")
    assert header not in code and "def read_rows(" not in code, code

    shown = run_zeph("context", "--json", env=env, cwd=indexed.root)
    assert shown.returncode == 0, err(shown)
    report = json.loads(out(shown))["context"]
    blocks = {b["name"]: b for b in report["blocks"]}
    assert blocks["repo map"]["tokens"] > 0 and re.fullmatch(r"\d+ files", blocks["repo map"]["detail"]), blocks["repo map"]
    assert blocks["code context"]["tokens"] > 0, blocks["code context"]
    assert re.fullmatch(r"\d+ of \d+ chunks", blocks["code context"]["detail"]), blocks["code context"]
    assert 0 < blocks["code context"]["tokens"] <= report["allocation"]["code_context"]
