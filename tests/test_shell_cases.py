"""The blocklist against a table of hostile and benign commands (tests/data/shell_cases.py):
every hostile one is refused, every benign one passes to the permission prompt."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.data.shell_cases import BENIGN, HOSTILE
from zeph_cli.tools.blocklist import blocked_reason


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    (workspace / "build").mkdir(parents=True)
    (workspace / "src").mkdir()
    (workspace / "file.txt").write_text("x")
    (tmp_path / "outside" / "deep").mkdir(parents=True)
    return workspace


def reason_for(command: str, ws: Path) -> str | None:
    return blocked_reason(command, cwd=ws, workspace=[ws], home=Path(os.environ["HOME"]))


def test_the_table_is_large_enough():
    assert len(set(HOSTILE)) >= 150 and len(set(BENIGN)) >= 100


@pytest.mark.parametrize("command", HOSTILE)
def test_hostile_commands_are_refused_with_one_line(ws, command):
    reason = reason_for(command, ws)
    assert reason is not None, command
    assert "\n" not in reason and len(reason) < 400


@pytest.mark.parametrize("command", BENIGN)
def test_benign_commands_pass(ws, command):
    assert reason_for(command, ws) is None
