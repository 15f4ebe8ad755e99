"""The log file: created on the first warning, one line per record, rotated, never in the user's way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import zeph_cli.log as log_module
from zeph_cli.log import LOG_NAME, current_log_path, get_logger, log_to


def test_nothing_is_created_before_the_first_warning(tmp_path: Path):
    directory = tmp_path / "data"
    path = log_to(directory)
    assert path == directory / LOG_NAME and current_log_path() == path
    get_logger("test").debug("below INFO: dropped")
    assert not directory.exists()
    get_logger("test").warning("the pair stays as it is: %s", "HTTP 500")
    (line,) = path.read_text(encoding="utf-8").splitlines()
    assert line.endswith(" WARNING zeph.test: the pair stays as it is: HTTP 500")


def test_a_new_destination_replaces_the_old_one(tmp_path: Path):
    first, second = log_to(tmp_path / "a"), log_to(tmp_path / "b")
    assert log_to(tmp_path / "b") == second  # the same destination again: nothing changes
    get_logger("test").warning("only here")
    assert second.read_text(encoding="utf-8").count("only here") == 1 and not first.exists()


def test_tracebacks_of_internal_errors_are_kept(tmp_path: Path):
    path = log_to(tmp_path)
    try:
        {}["missing"]
    except KeyError as exc:
        get_logger("cli").error("internal error", exc_info=exc)
    text = path.read_text(encoding="utf-8")
    assert "ERROR zeph.cli: internal error" in text and "Traceback" in text and "KeyError: 'missing'" in text


def test_the_log_rotates_and_keeps_three_old_files(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(log_module, "MAX_BYTES", 2_000)
    directory = tmp_path / "logs"
    path = log_to(directory)
    for i in range(200):
        get_logger("test").warning("line %d %s", i, "x" * 40)
    kept = sorted(p.name for p in directory.iterdir())
    assert kept == [LOG_NAME, f"{LOG_NAME}.1", f"{LOG_NAME}.2", f"{LOG_NAME}.3"]
    assert all(p.stat().st_size <= 2_000 for p in directory.iterdir())
    assert "line 199" in path.read_text(encoding="utf-8")


def test_an_unwritable_log_is_skipped_without_a_word(tmp_path: Path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory", encoding="utf-8")
    log_to(blocker / "data")  # its directory cannot be created
    get_logger("test").warning("lost, quietly")
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""
    assert blocker.read_text(encoding="utf-8") == "not a directory"


def test_help_does_not_load_logging():
    code = "import sys; from zeph_cli.frontends.cli.app import main; main(['--help']); print('logging' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip().splitlines()[-1] == "False", result.stdout[-500:] + result.stderr[-500:]
