"""Bringing a project's index up to date with its files (`update`), then embedding its new chunks
(`embed_missing`): two phases, so the index answers by keywords and maps the project as soon as the first
is done, and vectors follow.

Invariant: `update` reads only files whose stat (size, mtime_ns) differs from what is stored (a file changed
in the last two seconds is stored with no mtime, so it is read again next time); one whose
content hash is unchanged only has its stat recorded (`touch_file`), any other is parsed and replaces its
rows in one transaction; files gone, or now left out (skipped, binary, generated), are forgotten. A
cancelled update keeps every file it finished and does not mark the project indexed; the next one goes on
from there. `embed_missing` embeds in batches, each stored before the next is embedded, so stopping it
(cancel, Ctrl+C) loses at most the batch in flight. Parsing is pure (`parse_source`) and may run in worker
processes; only this process writes to the database.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...store.transactions import write_transaction
from .chunks import Chunk, chunk_file
from .scan import DEFAULT_SETTINGS, SNIFF_BYTES, IndexSettings, ScannedFile, content_skip_reason, scan
from .store import CodeStore, Project, StoredFile, StoredTag, chunk_words
from .tags import tags_of

if TYPE_CHECKING:
    from ..memory.embedders.base import Embedder
    from .vectors import CodeVectors

__all__ = ["BuildReport", "IndexSettings", "Parsed", "embed_missing", "parse_source", "update"]

Progress = Callable[[str, int, int], None]
MAX_CODE_CHARS = 200  # of a definition's source line kept for the repo map
WRITE_FILES = 32  # parsed files written in one transaction, at most
WRITE_SECONDS = 0.25  # and at most this long after the last write (readers see progress)
RACY_NS = 2_000_000_000  # a file modified this recently is read again by the next update
POOL_MIN_FILES = 300  # fewer files to parse than this are parsed in this process (a pool's start costs more)


@dataclass
class BuildReport:
    files: int = 0  # the project's files the index reads
    parsed: int = 0
    unchanged: int = 0  # not parsed: same stat, or same content under a new stat
    removed: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> files
    chunks: int = 0  # written by this update
    embedded: int = 0
    parse_seconds: float = 0.0
    embed_seconds: float = 0.0
    cancelled: bool = False


@dataclass(frozen=True)
class Parsed:
    path: str
    sha: str
    size: int
    mtime_ns: int
    skip: str | None = None  # why the file is left out after all (binary, generated, unreadable)
    language: str = ""
    imports: str = ""
    chunks: tuple[Chunk, ...] = ()
    tags: tuple[StoredTag, ...] = ()
    words: tuple[str, ...] = ()  # each chunk's words for BM25 (`store.chunk_words`)


# The chunks' and tags' format: part of every stored hash, so a file stored by an earlier format is read
# and parsed again whatever its stat (bump it when chunking, tags or words change).
FORMAT = "f6"


def content_hash(data: bytes) -> str:
    return f"{FORMAT}:{hashlib.blake2b(data, digest_size=16).hexdigest()}"


def parse_source(path: str, data: bytes, language: str) -> tuple[str, tuple[Chunk, ...], tuple[StoredTag, ...]]:
    """A file's imports, chunks and tags (a definition's tag with its source line, stripped); pure."""
    text = data.decode("utf-8", "replace")
    chunks, imports = chunk_file(path, text)
    if not language:
        return imports, tuple(chunks), ()
    lines = text.split("\n")
    tags = tuple(
        StoredTag(tag.path, tag.name, tag.role, tag.kind, tag.line,
                  lines[tag.line - 1].strip()[:MAX_CODE_CHARS] if tag.role == "def" and tag.line <= len(lines) else "")
        for tag in tags_of(path, text)
    )
    return imports, tuple(chunks), tags


def read_inside(root: str, path: str, limit: int) -> bytes | None:
    """The bytes of `path` (relative to `root`), at most `limit` + 1 of them, or None: when it cannot be read,
    or any part of it is a symbolic link (its folders included: a folder swapped for a link after git listed
    it must not lead outside the project), checked on the path as opened."""
    full = os.path.join(root, path)
    try:
        if os.path.realpath(full) != os.path.join(os.path.realpath(root), path):
            return None
        descriptor = os.open(full, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        try:
            return handle.read(limit + 1)
        except OSError:
            return None


def read_and_parse(root: str, file: ScannedFile, known_sha: str | None) -> Parsed:
    """Read a file, tell whether it is left out by its content, and parse it unless its hash is `known_sha`.
    A file modified within RACY_NS of now keeps an mtime of 0, so the next update reads it again: a second
    write in the same clock tick, of the same size, would otherwise go unseen."""
    if time.time_ns() - file.mtime_ns < RACY_NS:
        file = replace(file, mtime_ns=0)
    data = read_inside(root, file.path, file.size)
    if data is None:
        return Parsed(file.path, "", file.size, file.mtime_ns, skip="unreadable")
    reason = content_skip_reason(data[:SNIFF_BYTES])
    sha = content_hash(data)
    if reason is not None:
        return Parsed(file.path, sha, file.size, file.mtime_ns, skip=reason)
    if sha == known_sha:
        return Parsed(file.path, sha, file.size, file.mtime_ns, language=file.language)
    imports, chunks, tags = parse_source(file.path, data, file.language)
    return Parsed(file.path, sha, file.size, file.mtime_ns, language=file.language, imports=imports,
                  chunks=chunks, tags=tags, words=tuple(chunk_words(file.path, chunk) for chunk in chunks))


def _read_and_parse_all(args: tuple[str, list[tuple[ScannedFile, str | None]]]) -> list[Parsed]:
    root, files = args
    return [read_and_parse(root, file, sha) for file, sha in files]


def update(
    store: CodeStore,
    root: Path | str,
    *,
    settings: IndexSettings = DEFAULT_SETTINGS,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    workers: int | None = 1,
) -> BuildReport:
    """Scan, parse what changed, store it, forget what is gone; no embedding. `workers`: processes to parse
    in (1, the default: this process; None: the machine's cores when there are at least POOL_MIN_FILES files
    to parse). On 1,000 files a pool of two was no faster than this process (benchmarks/code_index_speed.py)
    on a machine whose two cores were busy with other work, and this process parses 1,000 files in ~3.5 s."""
    started = time.perf_counter()
    if not Path(root).is_dir():  # a missing root is not a project whose files were all deleted
        raise FileNotFoundError(f"no folder {root}")
    report_progress = progress or (lambda stage, done, total: None)
    project = store.project(root)
    assert project is not None
    report_progress("scanning", 0, 1)
    found = scan(Path(project.root), settings)
    report_progress("scanning", 1, 1)
    report = BuildReport(files=len(found.files), skipped=dict(found.skipped))
    stored = store.files(project)
    scanned = {file.path for file in found.files}
    report.removed = store.forget_files(project, [path for path in stored if path not in scanned])

    to_read = [file for file in found.files if not _same_stat(stored.get(file.path), file)]
    report.unchanged = len(found.files) - len(to_read)
    skipped: Counter[str] = Counter(found.skipped)
    done = 0
    report_progress("parsing", 0, len(to_read))
    waiting: list[Parsed] = []  # parsed, written together (one transaction, each file's rows a savepoint)
    last_write = time.perf_counter()

    def write() -> None:
        nonlocal done, last_write
        if not waiting:
            return
        with write_transaction(store.db):
            for parsed in waiting:
                _write(store, project, parsed, stored.get(parsed.path), report, skipped)
        done += len(waiting)
        waiting.clear()
        last_write = time.perf_counter()
        report_progress("parsing", done, len(to_read))

    for parsed in _parsed(project.root, to_read, stored, workers, cancel):
        waiting.append(parsed)
        if len(waiting) >= WRITE_FILES or time.perf_counter() - last_write > WRITE_SECONDS:
            write()
        if cancel is not None and cancel.is_set():
            break
    write()
    report.skipped = dict(skipped)
    report.cancelled = done < len(to_read)
    if not report.cancelled:
        store.mark_indexed(project)
    report.parse_seconds = time.perf_counter() - started
    return report


def _write(store: CodeStore, project: Project, parsed: Parsed, known: StoredFile | None, report: BuildReport,
           skipped: Counter[str]) -> None:
    if parsed.skip is not None:
        skipped[parsed.skip] += 1
        report.files -= 1
        if known is not None:
            report.removed += store.forget_files(project, [parsed.path])
    elif known is not None and known.sha == parsed.sha and known.language == parsed.language:
        store.touch_file(project, parsed.path, size=parsed.size, mtime_ns=parsed.mtime_ns)
        report.unchanged += 1
    else:
        store.replace_file(project, parsed.path, language=parsed.language, sha=parsed.sha, size=parsed.size,
                           mtime_ns=parsed.mtime_ns, imports=parsed.imports, chunks=parsed.chunks,
                           tags=parsed.tags, words_of_chunks=parsed.words)
        report.parsed += 1
        report.chunks += len(parsed.chunks)


def _same_stat(known: StoredFile | None, file: ScannedFile) -> bool:
    return (known is not None and known.size == file.size and known.mtime_ns == file.mtime_ns
            and known.language == file.language and known.sha.startswith(FORMAT + ":"))


def _parsed(
    root: str, files: Sequence[ScannedFile], stored: dict[str, StoredFile], workers: int | None,
    cancel: threading.Event | None,
) -> Iterator[Parsed]:
    """Each file read and parsed, in order; in worker processes when there are enough of them."""
    count = workers if workers is not None else (os.cpu_count() or 1) if len(files) >= POOL_MIN_FILES else 1
    known = [(file, stored[file.path].sha if file.path in stored else None) for file in files]
    if count <= 1 or len(files) < 2:
        for file, sha in known:
            if cancel is not None and cancel.is_set():
                return
            yield read_and_parse(root, file, sha)
        return
    pool = _pool(count)
    pending: list[Future[list[Parsed]]] = []
    try:
        # small slices in order, a few ahead of the writer: the database is written while workers parse
        size = max(8, min(64, len(known) // (count * 8) or 8))
        slices = [known[i : i + size] for i in range(0, len(known), size)]
        pending += [pool.submit(_read_and_parse_all, (root, part)) for part in slices]
        for future in pending:
            if cancel is not None and cancel.is_set():
                break
            yield from future.result()
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True, cancel_futures=True)


def _pool(count: int) -> Executor:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # forkserver: no copy of this process's threads and locks (a build may run beside a chat's threads)
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    return ProcessPoolExecutor(count, mp_context=multiprocessing.get_context(method))


def embed_missing(
    store: CodeStore,
    vectors: CodeVectors,
    project: Project,
    embedder: Embedder,
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    batch: int = 64,
) -> int:
    """Embed the project's chunks that have no vector of the embedder's model, a batch at a time, each stored
    before the next; how many were embedded. Stopping (cancel, KeyboardInterrupt) keeps what is stored."""
    model = embedder.model
    total = store.missing_count(project, model)
    done = 0
    if progress is not None:
        progress("embedding", 0, total)
    after = 0
    while done < total:
        if cancel is not None and cancel.is_set():
            break
        missing = store.missing_vectors(project, model, batch, after=after)
        if not missing:
            break
        ids = [chunk_id for chunk_id, _ in missing]
        matrix = embedder.embed([text for _, text in missing])
        vectors.add(model, ids, matrix)
        after = ids[-1]
        done += len(ids)
        if progress is not None:
            progress("embedding", min(done, total), total)
    return done
