"""Running the real `zeph` executable in a subprocess, as a user would."""

from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ZEPH = str(Path(sys.executable).parent / "zeph")
# Where zeph runs when a test names no directory: an empty project, the same for every call of this test
# process (sessions and the latest one are found by project), never this checkout, whose ZEPH.md would be
# the project context (its size deciding whether counts are exact) and whose files the tools would see.
EMPTY_PROJECT = Path(tempfile.mkdtemp(prefix="zeph-test-project-"))
EMPTY_PROJECT.chmod(0o755)  # the sandbox tests run zeph as nobody too
atexit.register(shutil.rmtree, EMPTY_PROJECT, True)


def run_zeph(*args: str, input: str | bytes | None = None, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 120):
    full_env = {**os.environ, **(env or {})}
    data = input.encode() if isinstance(input, str) else input
    return subprocess.run(
        [ZEPH, *args],
        input=data if data is not None else b"",
        capture_output=True,
        env=full_env,
        cwd=str(cwd or EMPTY_PROJECT),
        timeout=timeout,
    )


def out(result) -> str:
    return result.stdout.decode()


def err(result) -> str:
    return result.stderr.decode()


def assert_one_line_error(result, code: int, *needles: str) -> str:
    """Exit `code`, stderr one `zeph: error:` line (plus optional hints), never a traceback."""
    text = err(result)
    assert result.returncode == code, (result.returncode, text)
    assert "Traceback" not in text
    first = text.splitlines()[0]
    assert first.startswith("zeph: error: "), text
    for needle in needles:
        assert needle in first, (needle, first)
    return first


def db_rows(sql: str, *args) -> list[dict]:
    """Rows of the database the zeph under test writes ($ZEPH_HOME/zeph.db)."""
    path = Path(os.environ["ZEPH_HOME"]) / "zeph.db"
    with sqlite3.connect(path) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute(sql, args)]


def db_rows_safe(sql: str, *args) -> list[dict]:
    """Like `db_rows`, but empty while the database is not there or not migrated yet."""
    try:
        return db_rows(sql, *args)
    except sqlite3.Error:
        return []
