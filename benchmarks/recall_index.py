"""Vector index figures on the embedded (sqlite) backend: build time and search latency.

For 1k, 10k and 100k stored messages with random-but-clustered 256-dim unit
vectors in a temporary zeph database: the time to index them (`add` in
batches, as the indexer does, matrix cache included), the time to rebuild the
matrix cache from the table alone, the latency of a fresh process's first
search (what every `zeph ask` pays: new connection, cache mapped cold), the
same first search when the cache's files are not the ones its manifest
checked (a copied or restored cache: every segment's CRC-32 computed once),
and of warm searches in one process, p50 / p95. The goal is p95 ≤ 50 ms at 100k.

Prints figures; asserts nothing. Run from the repository root with the project
installed: `python benchmarks/recall_index.py [--sizes 1000,10000,100000] [--dim 256]`.
`index_figures()` returns the same figures for benchmarks/recall.py.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from zeph_cli.features.memory.vectors import VectorRow  # noqa: E402
from zeph_cli.features.memory.vectors.matrix_cache import MANIFEST, MatrixCache  # noqa: E402
from zeph_cli.features.memory.vectors.sqlite_index import SqliteVectorIndex  # noqa: E402
from zeph_cli.store import ConversationStore, open_database  # noqa: E402
from zeph_cli.store.conversations import now_iso  # noqa: E402
from zeph_cli.store.transactions import write_transaction  # noqa: E402

MODEL = "bench-model-256"
BATCH = 512
FRESH_RUNS = 15
CHECKED_RUNS = 5
WARM_RUNS = 200

FRESH_SEARCH = """
import sys, time, json
sys.path.insert(0, {root!r})
import numpy as np
from pathlib import Path
from zeph_cli.store import open_database
from zeph_cli.features.memory.vectors.sqlite_index import SqliteVectorIndex
path = Path({path!r})
started = time.perf_counter()
index = SqliteVectorIndex(open_database(path), path)
opened = time.perf_counter()
query = np.random.default_rng({seed}).standard_normal({dim}).astype(np.float32)
index.search({model!r}, query, 20)
done = time.perf_counter()
print(json.dumps({{"open_ms": (opened - started) * 1000, "search_ms": (done - opened) * 1000}}))
"""


@dataclass
class IndexFigures:
    messages: int
    dim: int
    build_s: float  # add() in batches of BATCH, matrix cache kept up to date
    rebuild_s: float  # the cache gone: the first search reads every row and saves the cache
    fresh_open_p50_ms: float  # a fresh process: open the database (migrations checked) and the index
    fresh_search_p50_ms: float  # ... then its first search
    fresh_search_p95_ms: float
    checked_search_p50_ms: float  # ... a fresh first search that hashes every segment (a copied cache)
    warm_search_p50_ms: float
    warm_search_p95_ms: float


def clustered_unit_vectors(count: int, dim: int, *, clusters: int = 64, seed: int = 0) -> np.ndarray:
    """`count` unit vectors around `clusters` random centres (what topical message embeddings look like)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    members = rng.integers(0, clusters, count)
    vectors = centres[members] + 0.6 * rng.standard_normal((count, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _percentile(values: list[float], pct: float) -> float:
    return float(np.percentile(values, pct))


def _insert_messages(store: ConversationStore, count: int) -> tuple[int, list[int]]:
    conversation = store.create_conversation(provider="bench", model="bench", cwd="/tmp")
    stamp = now_iso()
    rows = [
        {"conversation_id": conversation.id, "role": "user", "content": f"message {i}", "created_at": stamp}
        for i in range(count)
    ]
    with write_transaction(store.db):
        store.db["messages"].insert_all(rows, batch_size=2000)
    ids = [r[0] for r in store.db.execute("select id from messages where conversation_id = ? order by id", [conversation.id])]
    return conversation.id, ids


def index_figures(count: int, dim: int = 256, *, workdir: Path | None = None) -> IndexFigures:
    """Build `count` vectors into a temporary database and measure (see the module docstring)."""
    tmp = Path(tempfile.mkdtemp(dir=workdir))
    try:
        path = tmp / "zeph.db"
        store = ConversationStore(open_database(path))
        conversation, ids = _insert_messages(store, count)
        vectors = clustered_unit_vectors(count, dim)
        index = SqliteVectorIndex(store.db, path)
        started = time.perf_counter()
        for start in range(0, count, BATCH):
            chunk = range(start, min(start + BATCH, count))
            index.add(MODEL, [VectorRow(ids[i], conversation, vectors[i]) for i in chunk])
        build_s = time.perf_counter() - started

        shutil.rmtree(f"{path}.vectors")
        started = time.perf_counter()
        SqliteVectorIndex(open_database(path), path).search(MODEL, vectors[0], 20)
        rebuild_s = time.perf_counter() - started

        fresh = [_fresh_search(path, dim, seed) for seed in range(FRESH_RUNS)]
        checked = []
        for seed in range(CHECKED_RUNS):
            _forget_file_identities(path)
            checked.append(_fresh_search(path, dim, seed))
        queries = clustered_unit_vectors(WARM_RUNS, dim, seed=7)
        warm_index = SqliteVectorIndex(open_database(path), path)
        warm_index.search(MODEL, queries[0], 20)
        warm = []
        for query in queries:
            started = time.perf_counter()
            warm_index.search(MODEL, query, 20)
            warm.append((time.perf_counter() - started) * 1000)
        return IndexFigures(
            messages=count,
            dim=dim,
            build_s=build_s,
            rebuild_s=rebuild_s,
            fresh_open_p50_ms=statistics.median(f["open_ms"] for f in fresh),
            fresh_search_p50_ms=_percentile([f["search_ms"] for f in fresh], 50),
            fresh_search_p95_ms=_percentile([f["search_ms"] for f in fresh], 95),
            checked_search_p50_ms=_percentile([f["search_ms"] for f in checked], 50),
            warm_search_p50_ms=_percentile(warm, 50),
            warm_search_p95_ms=_percentile(warm, 95),
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _forget_file_identities(path: Path) -> None:
    """Make the manifest's recorded file identities stale, as a copy of the cache would."""
    manifest = MatrixCache(Path(f"{path}.vectors"), MODEL).dir / MANIFEST
    data = json.loads(manifest.read_text())
    for segment in data["segments"]:
        segment["stamp"] = [0, 0, 0, 0]
    manifest.write_text(json.dumps(data))


def _fresh_search(path: Path, dim: int, seed: int) -> dict[str, float]:
    code = FRESH_SEARCH.format(root=str(ROOT), path=str(path), seed=seed, dim=dim, model=MODEL)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--dim", type=int, default=256)
    args = parser.parse_args()
    print(f"vector index (sqlite backend), {args.dim}-dim float32, top 20; times in ms unless marked")
    print(f"{'messages':>9} {'build s':>8} {'rebuild s':>9} {'open':>6} {'fresh p50':>9} {'fresh p95':>9} "
          f"{'copied p50':>10} {'warm p50':>8} {'warm p95':>8}")
    for size in (int(s) for s in args.sizes.split(",")):
        f = index_figures(size, args.dim)
        print(f"{f.messages:>9} {f.build_s:>8.2f} {f.rebuild_s:>9.2f} {f.fresh_open_p50_ms:>6.1f} "
              f"{f.fresh_search_p50_ms:>9.1f} {f.fresh_search_p95_ms:>9.1f} {f.checked_search_p50_ms:>10.1f} "
              f"{f.warm_search_p50_ms:>8.1f} {f.warm_search_p95_ms:>8.1f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
