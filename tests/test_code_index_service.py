"""The code index as a session uses it (`CodeIndex`): builds in the background, reads off the event loop,
the map's graph cached on disk, watching files, what a turn gets."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

import pytest

from zeph_cli.config import Config
from zeph_cli.features.code_index.service import CodeIndex, project_root_for
from zeph_cli.messages import Message, ToolCallPart
from zeph_cli.store import open_database
from zeph_cli.tokens import default_counter

RETRY = '''import time


def call_with_backoff(action, attempts=5):
    """Call action again after failures, waiting twice as long each time."""
    delay = 0.1
    for attempt in range(attempts):
        try:
            return action()
        except OSError:
            time.sleep(delay)
            delay *= 2
    raise RuntimeError("gave up")
'''
MAIN = '''from app.retrying import call_with_backoff


def main():
    return call_with_backoff(lambda: 1)
'''
COUNT = default_counter().count


def wait_for(condition, seconds: float = 30.0) -> bool:
    """Poll `condition` until it holds (a bound on a would-be hang, not a timing assert)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "project"
    (root / "app").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "app" / "retrying.py").write_text(RETRY)
    (root / "app" / "main.py").write_text(MAIN)
    monkeypatch.setenv("ZEPH_HOME", str(tmp_path / "home"))  # the graph's cache
    return root.resolve()


def make_index(tmp_path: Path, root: Path, config: Config | None = None) -> CodeIndex:
    path = tmp_path / "zeph.db"
    return CodeIndex(config or Config(), open_database(path), path, root)


def test_the_project_is_the_work_tree_top_and_elsewhere_only_when_asked(tmp_path, project):
    config = Config()
    assert project_root_for(config, project / "app", {}) == project
    outside = tmp_path / "plain"
    outside.mkdir()
    assert project_root_for(config, outside, {}) is None
    assert project_root_for(config, outside, {"index.enabled": "env ZEPH_INDEX_ENABLED"}) == outside.resolve()
    config.index.enabled = False
    assert project_root_for(config, project, {}) is None


def test_a_background_build_then_reads_off_the_event_loop(tmp_path, project):
    index = make_index(tmp_path, project)
    try:
        assert asyncio.run(index.status()) is None and not index.holds_code
        index.build_in_background(embed=False)
        asyncio.run(index.wait_for_build())
        status = asyncio.run(index.status())
        assert status is not None and status.files == 2 and index.holds_code
        hits = asyncio.run(index.search("wait longer after each failure", 3))
        assert hits[0].symbol == "call_with_backoff" and hits[0].path == "app/retrying.py"
        # a chunk the conversation shows already is left out
        shown = [Message("assistant", (ToolCallPart("c", "read_file", {"path": str(project / "app/retrying.py")}),))]
        code = asyncio.run(index.for_turn("wait longer after each failure", shown, project, k=3, map_tokens=200,
                                          count_tokens=COUNT))
        assert "call_with_backoff" not in [hit.symbol for hit in code.hits]
        assert "app/retrying.py" in code.files  # the file the conversation read personalizes the map
        assert code.map is not None and "app/retrying.py:" in code.map.text and code.map.tokens <= 200
    finally:
        index.close()


def test_the_maps_graph_is_cached_on_disk_for_the_next_process(tmp_path, project):
    first = make_index(tmp_path, project)
    try:
        first.build_now(embed=False)
        asyncio.run(first.repo_map(budget_tokens=300, count_tokens=COUNT))
    finally:
        first.close()
    cached = list((tmp_path / "home" / "cache" / "code-index").glob("*.graph"))
    assert len(cached) == 1
    second = make_index(tmp_path, project)
    try:
        again = asyncio.run(second.repo_map(budget_tokens=300, count_tokens=COUNT))
        assert again is not None and "call_with_backoff" in again.text
        (project / "app" / "extra.py").write_text("def helper():\n    return 3\n")
        second.build_now(embed=False)  # a new version: its own graph, the old file gone
        asyncio.run(second.repo_map(budget_tokens=300, count_tokens=COUNT))
        assert [path.name for path in cached[0].parent.glob("*.graph")] != [cached[0].name]
        assert len(list(cached[0].parent.glob("*.graph"))) == 1
    finally:
        second.close()


def test_watching_updates_the_index_when_a_file_changes(tmp_path, project):
    index = make_index(tmp_path, project)
    try:
        index.build_now(embed=False)
        index.watch()
        time.sleep(0.5)  # the watcher is up
        (project / "app" / "parsing.py").write_text("def split_csv_line(line):\n    return line.split(',')\n")
        assert wait_for(lambda: bool(asyncio.run(index.search("split_csv_line", 1))))
        assert asyncio.run(index.search("split_csv_line", 1))[0].path == "app/parsing.py"
    finally:
        index.close()
    assert index._watcher is not None and wait_for(lambda: not index._watcher.is_alive(), 10)


def test_a_build_that_fails_is_said_not_raised(tmp_path, project):
    index = make_index(tmp_path, project / "missing")
    try:
        assert index.build_now(embed=False) is None
        assert index.state.problem and not index.state.running
    finally:
        index.close()
