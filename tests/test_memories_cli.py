"""`zeph memory` end to end through the real `zeph` executable, on a temporary data directory."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cli_helpers import assert_one_line_error, db_rows, err, out, run_zeph


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    (root / ".git").mkdir(parents=True)
    return root


def memories(*args: str, cwd: Path | None = None) -> list[dict]:
    result = run_zeph("memory", "list", "--json", *args, cwd=cwd)
    assert result.returncode == 0, err(result)
    return json.loads(out(result))


def add(text: str, *args: str, cwd: Path | None = None) -> int:
    result = run_zeph("memory", "add", *args, text, cwd=cwd)
    assert result.returncode == 0, err(result)
    return int(out(result))


def test_add_list_and_search_with_scopes(project, tmp_path):
    other = tmp_path / "lib"
    (other / ".git").mkdir(parents=True)
    in_app = add("The app deploys with fly", cwd=project)  # inside a git work tree: project scope
    everywhere = add("I prefer short answers", "--scope", "user", "--confidence", "0.7", cwd=project)
    listed = memories()
    assert [(m["id"], m["scope"], m["project_root"], m["confidence"], m["source"]) for m in listed] == [
        (in_app, "project", os.path.realpath(project), 1.0, "cli"),
        (everywhere, "user", None, 0.7, "cli"),
    ]
    assert [m["id"] for m in memories("--scope", "user")] == [everywhere]

    found = run_zeph("memory", "search", "how does it deploy", "--json", cwd=project)
    assert [m["id"] for m in json.loads(out(found))] == [in_app]
    elsewhere = run_zeph("memory", "search", "how does it deploy", cwd=other)  # project scope stays home
    assert elsewhere.returncode == 1 and "no memories match" in err(elsewhere)
    plain = run_zeph("memory", "search", "short answers", cwd=other)
    assert out(plain).startswith(f"#{everywhere}\tuser\teverywhere\t0.7\tI prefer short answers")


def test_add_reads_standard_input_and_session_scope_needs_a_session(tmp_path):
    result = run_zeph("memory", "add", "-", input="Use British spelling\n", cwd=tmp_path)
    assert result.returncode == 0 and memories()[0]["content"] == "Use British spelling"
    assert memories()[0]["scope"] == "user"  # not inside a git work tree
    assert_one_line_error(run_zeph("memory", "add", "--scope", "session", "x", cwd=tmp_path), 2, "needs a session")
    assert_one_line_error(run_zeph("memory", "add", "--session", "4", "x", cwd=tmp_path), 2, "--scope session")


def test_edit_in_the_editor_and_with_text(tmp_path):
    memory_id = add("Tests run with make test", cwd=tmp_path)
    editor = "sed -i s/make/just/"  # run as git runs it: through the shell, the file appended
    result = run_zeph("memory", "edit", str(memory_id), env={"EDITOR": editor, "VISUAL": ""}, cwd=tmp_path)
    assert result.returncode == 0, err(result)
    assert memories()[0]["content"] == "Tests run with just test"
    run_zeph("memory", "edit", str(memory_id), "--text", "Tests run with tox", "--confidence", "0.4")
    assert (memories()[0]["content"], memories()[0]["confidence"]) == ("Tests run with tox", 0.4)
    failing = run_zeph("memory", "edit", str(memory_id), env={"EDITOR": "false", "VISUAL": ""})
    assert_one_line_error(failing, 1, "the editor exited with status 1; the memory is unchanged")
    emptied = run_zeph("memory", "edit", str(memory_id), "--text", "  ")
    assert_one_line_error(emptied, 2, "is empty; it is unchanged")
    assert memories()[0]["content"] == "Tests run with tox"


def test_archive_hides_a_memory_and_undo_restores_it(tmp_path):
    memory_id = add("An old fact", cwd=tmp_path)
    assert run_zeph("memory", "archive", str(memory_id)).returncode == 0
    assert memories() == [] and [m["archived"] for m in memories("--all")] == [True]
    search = run_zeph("memory", "search", "old fact", cwd=tmp_path)
    assert search.returncode == 1
    run_zeph("memory", "archive", str(memory_id), "--undo")
    assert [m["id"] for m in memories()] == [memory_id]


def test_a_forgotten_memory_is_gone(tmp_path):
    memory_id = add("The launch code is 1234", cwd=tmp_path)
    unconfirmed = run_zeph("memory", "forget", str(memory_id))  # no terminal to confirm on
    assert_one_line_error(unconfirmed, 2, "needs confirmation: add --yes")
    result = run_zeph("memory", "forget", str(memory_id), "--yes")
    assert result.returncode == 0 and f"forgot memory #{memory_id}" in err(result)
    assert memories("--all") == []
    assert db_rows("select * from memories") == []
    assert run_zeph("memory", "search", "launch code", cwd=tmp_path).returncode == 1


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (("memory", "forget", "42", "--yes"), 1, "no memory with id 42"),
        (("memory", "edit", "42", "--text", "x"), 1, "no memory with id 42"),
        (("memory", "archive", "42"), 1, "no memory with id 42"),
        (("memory", "list", "--scope", "team"), 2, "--scope 'team' is not a scope: use user, project or session"),
        (("memory", "add", "--scope", "team", "x"), 2, "--scope 'team' is not a scope"),
        (("memory", "add", "--confidence", "3", "x"), 2, "between 0 and 1"),
        (("memory", "add", "   "), 2, "a memory needs some text"),
    ],
)
def test_bad_ids_scopes_and_values_are_one_line_non_zero_and_change_nothing(args, code, needle):
    assert_one_line_error(run_zeph(*args), code, needle)
    assert memories("--all") == []


def test_memory_help_lists_the_commands():
    result = run_zeph("memory", "--help")
    assert result.returncode == 0
    for name in ("list", "add", "search", "edit", "archive", "forget"):
        assert f"  {name} " in out(result)
