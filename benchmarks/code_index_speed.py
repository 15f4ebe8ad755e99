"""The code index's speed on a real project of 1,000 Python files: a cold build, an update after one edit,
and embedding throughput, beside their goals.

The project is made here, offline: Python files of the packages installed beside zeph (site-packages),
copied with their folders into a fresh git repository until there are `--files` of them (files over the
index's size limit are left for others). It measures
- cold `update()`: scan + parse + store of every file, in this process and in a pool of worker processes;
- `update()` after one file changes (what a watcher runs after a save);
- `embed_missing()` throughput with minilm (on a sample of `--sample` chunks, extrapolated to all of them,
  on its one onnxruntime thread) and with wordllama (all chunks).
Other measurements of the same index (query latency, the repo map) plug in with `measurement(...)`: each
gets the built `Bench` and returns rows for the table.

    python benchmarks/code_index_speed.py [--files N] [--sample N] [--skip-minilm]

It asserts nothing; it prints the project's size and a table of figures with their goals.
"""

from __future__ import annotations

import argparse
import shutil
import site
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from zeph_cli.features.code_index.build import IndexSettings, embed_missing, update  # noqa: E402
from zeph_cli.features.code_index.store import CodeStore, Project  # noqa: E402
from zeph_cli.features.code_index.vectors import SqliteCodeVectors  # noqa: E402
from zeph_cli.store import open_database  # noqa: E402

SETTINGS = IndexSettings()


@dataclass
class Row:
    what: str
    figure: str
    goal: str = ""


@dataclass
class Bench:
    """The built index, for every measurement."""
    root: Path
    store: CodeStore
    project: Project
    vectors: SqliteCodeVectors
    args: argparse.Namespace
    rows: list[Row] = field(default_factory=list)


Measurement = Callable[[Bench], list[Row]]
MEASUREMENTS: list[Measurement] = []


def measurement(fn: Measurement) -> Measurement:
    """Add `fn` to what the benchmark measures (in the order added), after the build."""
    MEASUREMENTS.append(fn)
    return fn


def make_project(target: Path, files: int, max_bytes: int = SETTINGS.max_file_bytes) -> int:
    """A git repository at `target` with `files` Python files copied from site-packages; how many functions
    they define (by a line starting with `def`/`async def`, indented or not)."""
    sources = [Path(p) for p in site.getsitepackages() if Path(p).is_dir()]
    copied = functions = 0
    for base in sources:
        for package in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.endswith("-info")):
            if package.name in {"__pycache__", "zeph_cli"} or package.name.startswith("_"):
                continue
            for source in sorted(package.rglob("*.py")):
                if copied >= files:
                    break
                if "__pycache__" in source.parts or any(part in {"tests", "test"} for part in source.parts):
                    continue
                try:
                    if source.stat().st_size > max_bytes:
                        continue
                    text = source.read_text("utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                destination = target / source.relative_to(base)
                destination.parent.mkdir(parents=True, exist_ok=True)
                destination.write_text(text, "utf-8")
                functions += sum(1 for line in text.split("\n") if line.lstrip().startswith(("def ", "async def ")))
                copied += 1
            if copied >= files:
                break
    subprocess.run(["git", "init", "-q"], cwd=target, check=True)
    subprocess.run(["git", "add", "-A"], cwd=target, check=True)
    return functions


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def cold_and_update(bench: Bench, db_folder: Path) -> list[Row]:
    rows = []
    for workers in (1, 2):
        store = CodeStore(open_database(db_folder / f"cold{workers}.db"))
        seconds, report = timed(partial(update, store, bench.root, settings=SETTINGS, workers=workers))
        rows.append(Row(f"cold update(), {workers} process{'es' if workers > 1 else ''}",
                        f"{seconds:.2f} s ({report.parsed} files, {report.chunks} chunks)",  # type: ignore[attr-defined]
                        "≤ 20 s"))
    seconds, report = timed(lambda: update(bench.store, bench.root, settings=SETTINGS))
    rows.append(Row("cold update(), default (this process)", f"{seconds:.2f} s", "≤ 20 s"))
    seconds, _ = timed(lambda: update(bench.store, bench.root, settings=SETTINGS))
    rows.append(Row("update(), nothing changed", f"{seconds * 1000:.0f} ms", "≤ 1 s"))
    edited = sorted(bench.store.files(bench.project))[len(bench.store.files(bench.project)) // 2]
    path = bench.root / edited
    path.write_text(path.read_text("utf-8") + "\n\ndef added_by_the_benchmark():\n    return 1\n", "utf-8")
    seconds, report = timed(lambda: update(bench.store, bench.root, settings=SETTINGS))
    rows.append(Row("update(), one file edited", f"{seconds * 1000:.0f} ms ({report.parsed} parsed)",  # type: ignore[attr-defined]
                    "≤ 1 s"))
    return rows


class StopAfter:
    """A progress callback that cancels once `count` chunks are done."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.event = threading.Event()

    def progress(self, stage: str, done: int, total: int) -> None:
        if done >= self.count:
            self.event.set()


def embedding_rows(bench: Bench) -> list[Row]:
    rows = []
    total = bench.store.status(bench.project).chunks
    from zeph_cli.features.memory.embedders.embedded import EmbeddedEmbedder

    wordllama = EmbeddedEmbedder()
    wordllama.embed(["warm up"])
    seconds, count = timed(lambda: embed_missing(bench.store, bench.vectors, bench.project, wordllama))
    rows.append(Row("embed_missing(), wordllama", f"{count / seconds:,.0f} chunks/s ({count} chunks, {seconds:.1f} s)"))  # type: ignore[operator]
    if bench.args.skip_minilm:
        return rows
    from zeph_cli.features.memory.embedders.minilm import MiniLMEmbedder

    for threads in (1,):
        minilm = MiniLMEmbedder()
        minilm.embed(["warm up"])
        stop = StopAfter(bench.args.sample)
        bench.store.db.execute("delete from code_vectors where model = ?", (minilm.model,))
        seconds, count = timed(partial(embed_missing, bench.store, bench.vectors, bench.project, minilm,
                                       progress=stop.progress, cancel=stop.event))
        rate = count / seconds  # type: ignore[operator]
        rows.append(Row(f"embed_missing(), minilm, {threads} thread{'s' if threads > 1 else ''}",
                        f"{rate:.1f} chunks/s ({count} chunks in {seconds:.1f} s); all {total}: "
                        f"~{total / rate:.0f} s (extrapolated)"))
    return rows


def percentiles(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p50, p95 = ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"p50 {p50 * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms"


@measurement
def store_queries(bench: Bench) -> list[Row]:
    """BM25 (`lexical`) and a warm vector search (wordllama's vectors) over the whole index, 50 queries."""
    from zeph_cli.features.code_index.words import words
    from zeph_cli.features.memory.embedders.embedded import EmbeddedEmbedder

    queries = [tag.name.replace("_", " ") for tag in bench.store.tags(bench.project) if tag.role == "def"][::97][:50]
    lexical = [timed(partial(bench.store.lexical, bench.project, words(q), 50))[0] for q in queries]
    embedder = EmbeddedEmbedder()
    vectors = embedder.embed(queries)
    cold, _ = timed(partial(bench.vectors.search, bench.project, embedder.model, vectors[0], 50))
    warm = [timed(partial(bench.vectors.search, bench.project, embedder.model, v, 50))[0] for v in vectors]
    return [Row("store.lexical(), 50 hits", percentiles(lexical)),
            Row("vectors.search(), first (reads the matrix)", f"{cold * 1000:.0f} ms"),
            Row("vectors.search(), warm, 50 hits", percentiles(warm))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--sample", type=int, default=300, help="chunks minilm embeds (then extrapolated)")
    parser.add_argument("--skip-minilm", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zeph-code-index-") as folder:
        base = Path(folder)
        root = base / "project"
        root.mkdir()
        started = time.perf_counter()
        functions = make_project(root, args.files)
        print(f"project: {args.files} Python files from site-packages, {functions:,} functions "
              f"(made in {time.perf_counter() - started:.1f} s)")
        store = CodeStore(open_database(base / "zeph.db"))
        project = store.project(root)
        assert project is not None
        bench = Bench(root, store, project, SqliteCodeVectors(store.db), args)
        bench.rows += cold_and_update(bench, base)
        status = store.status(project)
        definitions = sum(1 for tag in store.tags(project) if tag.role == "def" and tag.kind in ("function", "method"))
        print(f"index: {status.files} files, {status.chunks:,} chunks, {status.tags:,} tags, "
              f"{definitions:,} functions and methods defined")
        bench.rows += embedding_rows(bench)
        for fn in MEASUREMENTS:
            bench.rows += fn(bench)
        width = max(len(row.what) for row in bench.rows)
        figure_width = max(len(row.figure) for row in bench.rows)
        print(f"\n{'measured':<{width}}  {'figure':<{figure_width}}  goal")
        for row in bench.rows:
            print(f"{row.what:<{width}}  {row.figure:<{figure_width}}  {row.goal}")
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
