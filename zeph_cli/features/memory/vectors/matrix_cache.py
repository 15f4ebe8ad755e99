"""The on-disk matrix cache of one embedding model's vectors, beside the database.

Invariant: the cache is disposable and never torn. A cache is a directory of
immutable segment files (message ids as int64, then the float32 matrix) and a
`manifest.json` naming them; a segment is written in full before a manifest
names it, and a manifest replaces the old one with `os.replace`, so a reader
sees the old cache or the new one, whatever process is killed when. Readers
take no lock and memory-map the segments (a mapped file outlives its
replacement); writers take an exclusive `flock` on `.lock` and delete files no
manifest names. Anything unreadable loads as None, and the caller rebuilds from
the database, which stays the source of truth.

A segment is never trusted on its size alone: the manifest records the CRC-32
of each segment's bytes and the file's identity when that CRC was last checked
(inode, size, mtime, ctime). A load whose stat matches the identity trusts the
file (hashing 100k × 256 vectors would make a fresh process's first search
60 ms instead of 11); any other file is hashed, its identity saved when its
CRC holds, and one whose CRC differs is named once in zeph.log and makes the
whole cache load as None. Bytes changed without any change to the file's
metadata (or under a process's mapping) are what this misses; the index's
check of its scores (finite, within ±1) stands behind it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import re
import secrets
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ....atomic_file import write_atomically

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: writers go unlocked
    fcntl = None  # type: ignore[assignment]

FORMAT = 2  # 2: each segment's CRC-32 and checked file identity (a format-1 cache is rebuilt)
MANIFEST = "manifest.json"
LOCK = ".lock"
MAX_SEGMENTS = 8  # more than this, or a tail over a quarter of the base, and an append merges them all
LOCK_WAIT_S = 10.0
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)  # Linux only


Stamp = tuple[int, int, int, int]  # a file's (inode, size, mtime_ns, ctime_ns)


class DamagedSegment(ValueError):
    """A segment file whose bytes no longer match the CRC-32 its manifest records."""


@dataclass(frozen=True)
class Segment:
    ids: np.ndarray  # int64 message ids
    matrix: np.ndarray  # float32 (len(ids), dim), L2-normalized rows
    file: str = ""  # its file in the cache directory, "" while only in memory
    crc: int = 0  # CRC-32 of its file's bytes (ids, then matrix); with a file only
    stamp: Stamp = (0, 0, 0, 0)  # its file's identity when its CRC was last checked


@dataclass(frozen=True)
class CachedMatrix:
    """One model's vectors up to `max_rowid`: `rows_seen` table rows accounted for (rows without a
    vector included), the vectors in `segments`."""

    database_id: str
    model: str
    dim: int
    max_rowid: int
    rows_seen: int
    segments: tuple[Segment, ...] = field(default_factory=tuple)
    manifest_stamp: tuple[int, int] = (0, 0)  # (mtime_ns, inode) of the manifest it was loaded from
    restamp: bool = False  # a segment's file was hashed (its identity changed, its bytes did not): save to remember

    @property
    def size(self) -> int:
        return sum(len(s.ids) for s in self.segments)

    def with_segment(self, segment: Segment, *, max_rowid: int, rows_seen: int) -> CachedMatrix:
        segments = self.segments + ((segment,) if len(segment.ids) else ())
        return replace(self, segments=segments, max_rowid=max_rowid, rows_seen=rows_seen)


def model_key(model: str) -> str:
    """A directory name for `model`: readable, filesystem-safe, and unique by hash."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-.")[:40] or "model"
    return f"{readable}-{hashlib.sha256(model.encode()).hexdigest()[:12]}"


class MatrixCache:
    """The cache directory `root/<model key>/` of one model."""

    def __init__(self, root: Path, model: str) -> None:
        self.model = model
        self.dir = root / model_key(model)

    # ---- reading (no lock) ---------------------------------------------------

    def manifest_stamp(self) -> tuple[int, int]:
        try:
            st = os.stat(self.dir / MANIFEST)
        except OSError:
            return (0, 0)
        return (st.st_mtime_ns, st.st_ino)

    def load(self) -> CachedMatrix | None:
        """The cache as its current manifest describes it, or None when absent, unreadable or damaged."""
        for _ in range(3):  # a writer may delete a segment between our manifest read and its open
            try:
                return self._load_once()
            except FileNotFoundError:
                continue
            except DamagedSegment as exc:
                _report(self.dir / str(exc))
                return None
            except (OSError, ValueError, KeyError, TypeError):
                return None
        return None

    def _load_once(self) -> CachedMatrix | None:
        path = self.dir / MANIFEST
        try:
            st = os.stat(path)
            data = json.loads(path.read_bytes())
        except FileNotFoundError:
            if self.dir.exists():
                raise  # maybe replaced under us; the retry decides
            return None
        if data.get("format") != FORMAT or data.get("model") != self.model:
            return None
        dim = int(data["dim"])
        segments = tuple(
            self._open_segment(s["file"], int(s["rows"]), dim, int(s["crc"]), _stamp_of(s["stamp"]))
            for s in data["segments"]
        )
        return CachedMatrix(
            database_id=str(data["database_id"]),
            model=self.model,
            dim=dim,
            max_rowid=int(data["max_rowid"]),
            rows_seen=int(data["rows_seen"]),
            segments=segments,
            manifest_stamp=(st.st_mtime_ns, st.st_ino),
            restamp=any(s.stamp != _stamp_of(d["stamp"]) for s, d in zip(segments, data["segments"])),
        )

    def _open_segment(self, name: str, rows: int, dim: int, crc: int, stamp: Stamp) -> Segment:
        """The segment file `name`, memory-mapped; its CRC checked unless its identity is `stamp`'s."""
        path = self.dir / name
        fd = os.open(path, os.O_RDONLY)
        try:
            now = _stamp(os.fstat(fd))
            if now[1] != rows * 8 + rows * dim * 4:
                raise ValueError(f"segment {name} has the wrong size")
            # MAP_POPULATE maps the pages in one go: a fresh process's first search then pays no page
            # fault per 4 KB (a third faster at 100k vectors)
            mapped = mmap.mmap(fd, 0, flags=mmap.MAP_SHARED | _POPULATE, prot=mmap.PROT_READ)
        finally:
            os.close(fd)
        if now != stamp:
            if zlib.crc32(mapped) != crc:
                raise DamagedSegment(name)
            stamp = now
        ids = np.frombuffer(mapped, dtype=np.int64, count=rows).copy()
        matrix = np.frombuffer(mapped, dtype=np.float32, count=rows * dim, offset=rows * 8).reshape(rows, dim)
        return Segment(ids, matrix, name, crc, stamp)

    # ---- writing (under the lock) --------------------------------------------

    @contextlib.contextmanager
    def locked(self, *, wait: bool = True) -> Iterator[bool]:
        """Hold the writers' lock; yields False (and holds nothing) when `wait` is False and it is taken,
        or when it could not be had within LOCK_WAIT_S."""
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.dir / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            yield self._acquire(fd, wait)
        finally:
            os.close(fd)  # closing releases the flock

    @staticmethod
    def _acquire(fd: int, wait: bool) -> bool:
        if fcntl is None:  # pragma: no cover
            return True
        deadline = time.monotonic() + (LOCK_WAIT_S if wait else 0.0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.01)

    def save(self, cached: CachedMatrix) -> CachedMatrix:
        """Write `cached` (its in-memory segments as new files; merged when there are too many) and make
        it the current cache. Call under `locked()`. Returns it as loaded back from its files."""
        sized = [s for s in cached.segments if len(s.ids)]
        base = len(sized[0].ids) if sized else 0
        tail = sum(len(s.ids) for s in sized[1:])
        if len(sized) > MAX_SEGMENTS or tail * 4 > base:
            sized = [_merged(sized)] if len(sized) > 1 else sized
        written = tuple(s if s.file else self._write_segment(s) for s in sized)
        manifest = {
            "format": FORMAT,
            "model": cached.model,
            "database_id": cached.database_id,
            "dim": cached.dim,
            "max_rowid": cached.max_rowid,
            "rows_seen": cached.rows_seen,
            "segments": [{"file": s.file, "rows": len(s.ids), "crc": s.crc, "stamp": list(s.stamp)} for s in written],
        }
        write_atomically(self.dir / MANIFEST, json.dumps(manifest).encode())
        self._collect_garbage({s.file for s in written})
        return self.load() or replace(cached, segments=written)

    def remember_checked(self, cached: CachedMatrix) -> CachedMatrix:
        """Record the identities of `cached`'s files, checked by their CRC on load, in its manifest (when
        the lock is free and the manifest is still the one it was loaded from), so the next load trusts
        them without hashing. Returns it as it stands now."""
        try:
            with self.locked(wait=False) as held:
                if held and self.manifest_stamp() == cached.manifest_stamp:
                    return self.save(cached)
        except OSError:
            pass
        return cached

    def clear(self) -> None:
        """Forget the cache (the next reader rebuilds it)."""
        with self.locked() as held:
            if held:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.dir / MANIFEST)
                self._collect_garbage(set())

    def _write_segment(self, segment: Segment) -> Segment:
        name = f"seg-{time.time_ns():x}-{secrets.token_hex(4)}.bin"
        ids = np.ascontiguousarray(segment.ids, dtype=np.int64)
        matrix = np.ascontiguousarray(segment.matrix, dtype=np.float32)
        tmp = self.dir / f".{name}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(ids.data)
            fh.write(matrix.data)
        os.replace(tmp, self.dir / name)
        crc = zlib.crc32(matrix.data, zlib.crc32(ids.data))
        return Segment(ids, matrix, name, crc, _stamp(os.stat(self.dir / name)))

    def _collect_garbage(self, keep: set[str]) -> None:
        for entry in os.scandir(self.dir):
            if entry.name in keep or entry.name in (MANIFEST, LOCK):
                continue
            with contextlib.suppress(OSError):
                os.unlink(entry.path)


def _stamp(st: os.stat_result) -> Stamp:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _stamp_of(value: Iterable[Any]) -> Stamp:
    ino, size, mtime, ctime = (int(v) for v in value)
    return (ino, size, mtime, ctime)


_reported: set[Path] = set()


def _report(path: Path) -> None:
    """One line in zeph.log per damaged segment file and process."""
    if path in _reported:
        return
    _reported.add(path)
    from ....log import get_logger

    get_logger("memory").warning(
        "vector cache segment %s fails its checksum: dropped, the cache is rebuilt from the database", path
    )


def _merged(segments: list[Segment]) -> Segment:
    return Segment(
        np.concatenate([s.ids for s in segments]),
        np.concatenate([np.asarray(s.matrix) for s in segments]),
    )
