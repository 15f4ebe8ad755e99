"""Running the real `zeph` executable in a subprocess, as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ZEPH = str(Path(sys.executable).parent / "zeph")


def run_zeph(*args: str, input: str | bytes | None = None, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 120):
    full_env = {**os.environ, **(env or {})}
    data = input.encode() if isinstance(input, str) else input
    return subprocess.run(
        [ZEPH, *args],
        input=data if data is not None else b"",
        capture_output=True,
        env=full_env,
        cwd=str(cwd) if cwd else None,
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
