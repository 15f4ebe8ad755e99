"""`zeph index`: build or update the project's code index, and look into it (status, search, map, clear).

Invariant: presentation only — the index is the session's (`CodeIndex`, over zeph's database, for the
project the working directory is in); progress bars go to a terminal's standard error only; a project
the index does not cover, a bad option or an empty index is one line naming it and exit 1 (2 for
usage); Ctrl+C during a build keeps what was stored (the next `zeph index` goes on from there).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ...errors import UsageError, ZephError
from ...frontends.cli.stderr import eprint

if TYPE_CHECKING:
    from ...config import LoadedConfig
    from ...store import ConversationStore
    from .service import CodeIndex

index_app = typer.Typer(
    help="The code index: build it, search it, see its map.\n\nThe project's code parsed with tree-sitter, for "
    "<repo_map>, <code_context> and search_code. With no command: build the index, or bring it up to date (only "
    "changed files are read again).",
    invoke_without_command=True,
)


class IndexOff(ZephError):
    """The index does not cover the working directory."""


def _open() -> tuple[LoadedConfig, ConversationStore, CodeIndex]:
    from ...frontends.cli.command_context import load, open_store
    from ...providers import resolve_settings
    from ..memory.service import database_path
    from .service import CodeIndex, project_root_for, refused_root

    loaded = load()
    config = loaded.config
    cwd = Path.cwd()
    if not config.index.enabled:
        raise IndexOff(f"the code index is off ([index] enabled = false, from {loaded.source('index.enabled')})")
    root = project_root_for(config, cwd, loaded.sources)
    from .scan import project_root

    refused = refused_root(project_root(cwd) or cwd.resolve())
    if refused is not None:
        raise IndexOff(refused)
    if root is None:
        raise IndexOff(f"{cwd} is not inside a git work tree: run zeph index in a project, or set "
                       "ZEPH_INDEX_ENABLED=true (or [index] enabled = true) to index this directory")
    store = open_store()

    def make_embedder() -> Any:
        from ..memory.embedders.select import embedder_for

        return embedder_for(config, resolve_settings(config, os.environ, loaded.sources), sources=loaded.sources)

    return loaded, store, CodeIndex(config, store.db, database_path(store.db), root, make_embedder=make_embedder)


def _run(work: Any) -> None:
    try:
        work()
    except IndexOff as exc:
        eprint(f"zeph: error: {exc}")
        raise typer.Exit(1) from None


@index_app.callback()
def index_main(
    ctx: typer.Context,
    json_output: bool = typer.Option(False, "--json", help="Print the build's summary as JSON."),
    no_embed: bool = typer.Option(False, "--no-embed", help="Parse and store only; leave the chunks' vectors for later."),
) -> None:
    """Build the code index of this project, or bring it up to date."""
    if ctx.invoked_subcommand is not None:
        return
    _run(lambda: _build(json_output, embed=not no_embed))


def _build(json_output: bool, *, embed: bool) -> None:
    import asyncio
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    _, store, index = _open()
    started = time.perf_counter()
    interrupted = False
    try:
        with Progress(TextColumn("{task.description:<9}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                      console=Console(stderr=True), transient=True, disable=not sys.stderr.isatty()) as bar:
            tasks: dict[str, Any] = {}

            def progress(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = bar.add_task(stage, total=total or None)
                bar.update(tasks[stage], completed=done, total=total or None)

            try:
                report = index.build_now(embed=embed, progress=progress)
            except KeyboardInterrupt:
                index.cancel()
                interrupted, report = True, index.state.report
        status = asyncio.run(index.status())
    finally:
        index.close()
        store.close()
    if report is None and not interrupted:
        eprint(f"zeph: error: the index build failed: {index.state.problem}")
        raise typer.Exit(1)
    elapsed = time.perf_counter() - started
    summary = _summary(index, report, status, elapsed, interrupted)
    if json_output:
        print(json.dumps(summary, ensure_ascii=False))
    else:
        print(_summary_line(summary))
    if interrupted:
        raise typer.Exit(130)


def _summary(index: CodeIndex, report: Any, status: Any, elapsed: float, interrupted: bool) -> dict[str, Any]:
    model = index.embedding_model
    return {
        "root": str(index.root),
        "files": status.files if status else 0,
        "chunks": status.chunks if status else 0,
        "parsed": report.parsed if report else 0,
        "unchanged": report.unchanged if report else 0,
        "removed": report.removed if report else 0,
        "skipped": dict(report.skipped) if report else {},
        "embedded": index.state.embedded,
        "embedding_model": model,
        "vectors": (status.embedded.get(model, 0) if status and model else 0),
        "seconds": round(elapsed, 2),
        "interrupted": interrupted,
    }


def _summary_line(s: dict[str, Any]) -> str:
    skipped = sum(s["skipped"].values())
    parts = [f"indexed {s['root']}: {s['files']:,} files, {s['chunks']:,} chunks",
             f"{s['parsed']:,} parsed, {s['unchanged']:,} unchanged, {s['removed']:,} removed"
             + (f", {skipped:,} skipped ({', '.join(f'{n} {why}' for why, n in sorted(s['skipped'].items()))})" if skipped else "")]
    if s["embedding_model"]:
        parts.append(f"{s['vectors']:,} of {s['chunks']:,} chunks embedded with {s['embedding_model']}")
    parts.append(f"{s['seconds']:.1f} s")
    line = "; ".join(parts)
    if s["interrupted"]:
        line += " — interrupted: what was stored is kept, zeph index goes on from there"
    return line


@index_app.command("status")
def index_status(json_output: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """What the index holds for this project: files, chunks, languages, vectors, when it was built."""

    def work() -> None:
        import asyncio

        _, store, index = _open()
        try:
            status = asyncio.run(index.status())
        finally:
            index.close()
            store.close()
        if status is None:
            if json_output:
                print(json.dumps({"root": str(index.root), "indexed": False}))
            else:
                print(f"{index.root}: not indexed yet (zeph index builds it)")
            return
        data = {"root": str(index.root), "indexed": True, **_plain(status)}
        if json_output:
            print(json.dumps(data, ensure_ascii=False))
            return
        from .describe import status_lines

        for line in status_lines(str(index.root), status):
            print(line)

    _run(work)


def _plain(value: Any) -> dict[str, Any]:
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return dict(value._asdict()) if hasattr(value, "_asdict") else dict(vars(value))


@index_app.command("search")
def index_search(
    query: str = typer.Argument(None, metavar="QUERY", help="What to find; none: one query per line from standard input."),
    k: int = typer.Option(8, "-k", min=1, max=100, metavar="N", help="How many results."),
    json_output: bool = typer.Option(False, "--json", help="One JSON object per hit (per query when reading stdin)."),
) -> None:
    """Search the indexed code as <code_context> does (hybrid BM25 + vectors)."""

    def work() -> None:
        import asyncio

        queries = [query] if query is not None else _stdin_queries()
        if not queries or not all(q.strip() for q in queries[:1]):
            raise UsageError("zeph index search: give a QUERY, or queries on standard input (one per line)")
        _, store, index = _open()
        try:
            if asyncio.run(index.status()) is None:
                raise IndexOff(f"{index.root} is not indexed yet: run zeph index first")
            for q in queries:
                hits = asyncio.run(index.search(q, k))
                rows = [{"path": h.path, "start_line": h.start_line, "end_line": h.end_line, "symbol": h.symbol,
                         "score": round(float(h.score), 6)} for h in hits]
                if query is None:
                    print(json.dumps({"query": q, "hits": rows}, ensure_ascii=False) if json_output
                          else f"# {q}\n" + "\n".join(_hit_line(r) for r in rows))
                elif json_output:
                    for row in rows:
                        print(json.dumps(row, ensure_ascii=False))
                else:
                    print("\n".join(_hit_line(r) for r in rows) if rows else "no matches")
        finally:
            index.close()
            store.close()

    _run(work)


def _hit_line(row: dict[str, Any]) -> str:
    return f"{row['score']:.4f}  {row['path']}:{row['start_line']}-{row['end_line']}  {row['symbol']}"


def _stdin_queries() -> list[str]:
    from ...frontends.cli.command_context import read_stdin

    return [line.strip() for line in read_stdin().splitlines() if line.strip()]


@index_app.command("map")
def index_map(
    tokens: int = typer.Option(1024, "--tokens", min=0, max=100_000, metavar="N", help="The map's most tokens."),
    query: str = typer.Option("", "--query", metavar="Q",
                              help="The message the map is for (its files and identifiers rank first)."),
) -> None:
    """Print the repo map a turn with this message would get."""

    def work() -> None:
        import asyncio

        from ...tokens import default_counter
        from .blocks import MAP_HEAD, repo_map_text
        from .source import MAP_FRAME_TOKENS

        _, store, index = _open()
        try:
            if asyncio.run(index.status()) is None:
                raise IndexOff(f"{index.root} is not indexed yet: run zeph index first")
            count = default_counter().count
            room = tokens - count(MAP_HEAD) - MAP_FRAME_TOKENS
            code = asyncio.run(index.for_turn(query, [], Path.cwd(), k=8, map_tokens=max(room, 0), count_tokens=count))
            rendered = code.map
        finally:
            index.close()
            store.close()
        if rendered is None or not rendered.text.strip():
            eprint(f"zeph: error: no repo map fits {tokens:,} tokens")
            raise typer.Exit(1)
        text = repo_map_text(rendered.text)
        print(text)
        eprint(f"{rendered.files} files, {rendered.definitions} definitions, {count(text):,} tokens")

    _run(work)


@index_app.command("clear")
def index_clear() -> None:
    """Forget this project's index (its files, chunks, tags and vectors)."""

    def work() -> None:
        _, store, index = _open()
        try:
            from .store import CodeStore

            code = CodeStore(store.db)
            project = code.project(index.root, create=False)
            if project is None:
                print(f"{index.root}: nothing indexed")
                return
            from .vectors import open_code_vectors

            code.clear(project, open_code_vectors(index.config, store.db))
        finally:
            index.close()
            store.close()
        print(f"{index.root}: index cleared")

    _run(work)
