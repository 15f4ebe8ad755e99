"""Recall figures: the full pipeline's latency, its quality on a labelled set, and what it adds to `zeph ask`.

Section 1, latency: real zeph databases of 1k, 10k and 100k stored messages
(sessions of varied developer chat from benchmarks/data/dev_chat.py, inserted
as the store writes them, so FTS5 indexes them), indexed by the product's own
indexer (`index_pending`: the offline embedder, all-MiniLM-L6-v2 or the one
ZEPH_MEMORY_EMBEDDER names, the sqlite vector index) — its build time, split into embedding and the rest. Then `recall()`
exactly as a turn calls it (embed the query, vector search, FTS5, fusion, row
fetch, threshold) with `Config().memory`, p50 / p95 per route (keyword,
semantic, hybrid): warm, many queries in one process, and the first recall in
a fresh process (database opened, embedder loaded first — a real turn loads it
in the background — then one recall; open and load times printed beside). The
goal is p95 ≤ 50 ms at 100k.

Section 2, quality: the facts of benchmarks/data/recall_set.py told in earlier
sessions among ≥ 1,000 distractor messages, then each labelled query recalled
from a new session with the real defaults (`Config().memory`): hit@1 and hit@5
per route and overall, and how often an unrelated query recalls anything
(false recall). `--show` prints every query's outcome.

Section 3, `zeph ask`: the real executable against a local OpenAI-compatible
fake server (as benchmarks/startup.py), a database pre-filled with 1k and 10k
indexed messages, recall on (the defaults) and off
(ZEPH_MEMORY_SEMANTIC_ENABLED=false, ZEPH_MEMORY_LONG_TERM_ENABLED=false),
interleaved, median and p90 per mode for a semantic and a keyword query, and
the difference (goal: ≤ 150 ms more). Then where the time goes: the embedder's
load in a fresh process, and the modules a recall-on run imports that an off
run does not (`python -X importtime`).

Prints figures; asserts nothing. Run from the repository root with the project
installed: `python benchmarks/recall.py [--quick] [--section 1,2,3] [--sizes 1000,10000,100000]
[--ask-sizes 1000,10000] [--runs 10] [--show]` (--quick: 1k and 10k, fewer runs).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.data import dev_chat  # noqa: E402
from benchmarks.data.recall_set import ACKNOWLEDGEMENTS, FACTS, QUERIES  # noqa: E402
from tests.fakes import openai_wire  # noqa: E402
from tests.fakes.server import FakeServer  # noqa: E402
from zeph_cli.config import Config  # noqa: E402
from zeph_cli.features.memory.embedders.select import EMBEDDED_MODELS, shared_offline  # noqa: E402


def shared_embedded():
    """The offline embedder measured: `[memory] embedder`'s default, or ZEPH_MEMORY_EMBEDDER's."""
    return shared_offline(EMBEDDED_MODELS[os.environ.get("ZEPH_MEMORY_EMBEDDER", "minilm")])
from zeph_cli.features.memory.recall import recall  # noqa: E402
from zeph_cli.features.memory import routing  # noqa: E402
from zeph_cli.features.memory.service import MemoryService, index_pending  # noqa: E402
from zeph_cli.features.memory.vectors import open_index  # noqa: E402
from zeph_cli.messages import Message  # noqa: E402
from zeph_cli.paths import database_path  # noqa: E402
from zeph_cli.store import ConversationStore, open_database  # noqa: E402
from zeph_cli.store.conversations import message_record  # noqa: E402
from zeph_cli.store.transactions import write_transaction  # noqa: E402

class Route(str, Enum):
    """The shape of a query (both legs run for every one; the groups of the figures): code, an identifier
    or at most 3 words; a question or 6 words or more; in between."""
    KEYWORD = "keyword"
    SEMANTIC = "semantic"
    HYBRID = "hybrid"


def route(query: str) -> Route:
    found = routing.words(query)
    if routing.route(query) is routing.Route.KEYWORD or len(found) <= 3:
        return Route.KEYWORD
    if query.strip().endswith("?") or (found and found[0].lower() in routing.QUESTION_WORDS) or len(found) >= 6:
        return Route.SEMANTIC
    return Route.HYBRID


ZEPH = str(Path(sys.executable).parent / "zeph")
GOAL_RECALL_MS = 50.0
GOAL_ASK_MS = 150.0
EPOCH = datetime(2025, 3, 3, 9, 0, tzinfo=timezone.utc)

# Queries for the latency section, in the vocabulary of the stored sessions (so every
# backend finds candidates: the costly case). Each is checked against the router.
LATENCY_QUERIES: dict[Route, list[str]] = {
    Route.KEYWORD: [
        "IntegrityError", "parse_invoice", "src/billing/models.py", "worker timeout", "CSV export",
        "load_user", "flaky test", "permission denied",
    ],
    Route.SEMANTIC: [
        "why does the nightly job fail when the cache is cold?",
        "what did we change in the billing service last time?",
        "how did you fix the slow dashboard page?",
        "which tests cover the payment refresh logic?",
        "remind me what was wrong with the login redirect",
        "where is the memory leak in the worker coming from?",
        "did the CSV export handle unicode names?",
        "what is slow in the search ranking endpoint?",
    ],
    Route.HYBRID: [
        "billing endpoint slow dashboard", "search ranking timeout worker", "shipping client retry errors",
        "orders importer deadlock fix", "invoice rows sorted twice", "session token expired redirect",
        "uploads storage permission problem", "pricing rules cache size",
    ],
}


# ---- figures ------------------------------------------------------------------------

def pct(samples: list[float], q: float) -> float:
    return float(np.percentile(samples, q)) if samples else float("nan")


def ms(seconds: float) -> float:
    return seconds * 1000


# ---- databases ----------------------------------------------------------------------

def fill(store: ConversationStore, count: int, rng: random.Random, *, start: datetime = EPOCH) -> list[int]:
    """`count` messages of developer chat in sessions of 20-200 messages, user and assistant turns
    alternating, written as the store writes them (FTS5 triggers included). Returns the sessions."""
    sessions: list[int] = []
    clock = start
    written = 0
    while written < count:
        size = min(rng.randint(20, 200), count - written)
        conversation = store.create_conversation(
            provider="compatible", model="gpt-4o", cwd="/home/dev/shop", title=dev_chat.session_title(rng)
        )
        sessions.append(conversation.id)
        rows = []
        for n in range(size):
            clock += timedelta(seconds=rng.randint(5, 400))
            message = Message.user(dev_chat.user_text(rng)) if n % 2 == 0 else Message.assistant(dev_chat.assistant_text(rng))
            rows.append(message_record(conversation.id, message, metadata={}, stamp=clock.isoformat(timespec="microseconds")))
        with write_transaction(store.db):
            store.db["messages"].insert_all(rows, batch_size=500)
        written += size
        clock += timedelta(hours=rng.randint(1, 30))
    return sessions


class TimedEmbedder:
    """The embedded embedder, counting the time spent embedding (for the build-time split)."""

    def __init__(self) -> None:
        self.inner = shared_embedded()
        self.model = self.inner.model
        self.dimensions = self.inner.dimensions
        self.seconds = 0.0

    def load(self) -> None:
        self.inner.load()

    def embed(self, texts: list[str]) -> Any:
        started = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - started


def service_for(config: Config, db: Any, make_embedder: Callable[[], Any]) -> MemoryService:
    return MemoryService(config, db, project_root=ROOT, make_embedder=make_embedder,
                         make_index=lambda d, p: open_index(config, d, p))


@dataclass
class Build:
    messages: int
    seconds: float
    embed_seconds: float


def build_index(config: Config, store: ConversationStore) -> Build:
    """Index every pending message with the product's indexer; its time and the embedding part of it."""
    embedder = TimedEmbedder()
    embedder.load()  # load time is not build time (section 3 reports it)
    service = service_for(config, store.db, lambda: embedder)
    service.start_warming()
    started = time.perf_counter()
    done = index_pending(service)
    return Build(done, time.perf_counter() - started, embedder.seconds)


# ---- section 1: latency -------------------------------------------------------------

FRESH_RECALL = """
import sys, time, json
started = time.perf_counter()
sys.path.insert(0, {root!r})
from pathlib import Path
from zeph_cli.config import Config
from zeph_cli.store import open_database
from zeph_cli.features.memory.recall import recall
from zeph_cli.features.memory.vectors import open_index
import os
from zeph_cli.features.memory.embedders.select import EMBEDDED_MODELS, shared_offline
path = Path({path!r})
config = Config()
t0 = time.perf_counter()
db = open_database(path)
t1 = time.perf_counter()
embedder = shared_offline(EMBEDDED_MODELS[os.environ.get("ZEPH_MEMORY_EMBEDDER", "minilm")])
embedder.load()
t2 = time.perf_counter()
index = open_index(config, db, path)
result = recall(db, {query!r}, config.memory, conversation_id={conversation}, embedder=embedder, index=index)
t3 = time.perf_counter()
print(json.dumps({{"open_ms": (t1 - t0) * 1000, "load_ms": (t2 - t1) * 1000, "recall_ms": (t3 - t2) * 1000,
                  "hits": len(result.hits)}}))
"""


def check_routes() -> None:
    for expected, queries in LATENCY_QUERIES.items():
        for query in queries:
            if route(query) is not expected:
                print(f"  note: {query!r} routes {route(query).value}, listed as {expected.value}")


def latency(sizes: list[int], runs: int, fresh_runs: int) -> None:
    print("## 1. Recall latency: full pipeline (embed query + vector search + FTS5 + fusion + rows), embedded "
          "embedder, sqlite index, Config().memory")
    check_routes()
    config = Config()
    shared_embedded().load()
    rows = []
    for size in sizes:
        tmp = Path(tempfile.mkdtemp(prefix="zeph-recall-"))
        try:
            path = tmp / "zeph.db"
            store = ConversationStore(open_database(path))
            started = time.perf_counter()
            fill(store, size, random.Random(size))
            fill_s = time.perf_counter() - started
            build = build_index(config, store)
            current = store.create_conversation(provider="compatible", model="gpt-4o", cwd="/home/dev/shop").id
            store.close()

            db = open_database(path)
            index = open_index(config, db, path)
            embedder = shared_embedded()
            recall(db, "warm up", config.memory, conversation_id=current, embedder=embedder, index=index)
            warm: dict[Route, list[float]] = {r: [] for r in LATENCY_QUERIES}
            hits: dict[Route, list[int]] = {r: [] for r in LATENCY_QUERIES}
            for _ in range(runs):
                for expected, queries in LATENCY_QUERIES.items():
                    for query in queries:
                        t = time.perf_counter()
                        result = recall(db, query, config.memory, conversation_id=current, embedder=embedder, index=index)
                        warm[expected].append(ms(time.perf_counter() - t))
                        hits[expected].append(len(result.hits))
            db.close()

            fresh: dict[Route, list[dict[str, float]]] = {r: [] for r in LATENCY_QUERIES}
            for n in range(fresh_runs):
                for expected, queries in LATENCY_QUERIES.items():
                    fresh[expected].append(_fresh_recall(path, queries[n % len(queries)], current))
            row = {
                "size": size, "fill_s": fill_s, "build": build, "warm": warm, "fresh": fresh, "hits": hits,
            }
            rows.append(row)
            _print_latency(row)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print()
    print("| stored messages | index build (embedding) | route | warm p50 | warm p95 | fresh first recall p50 | fresh p95 |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    for row in rows:
        b = row["build"]
        for n, r in enumerate(LATENCY_QUERIES):
            build = f"{b.seconds:.1f} s ({b.embed_seconds:.1f} s)" if n == 0 else ""
            size = f"{row['size']:,}" if n == 0 else ""
            f = [x["recall_ms"] for x in row["fresh"][r]]
            print(f"| {size} | {build} | {r.value} | {pct(row['warm'][r], 50):.1f} ms | {pct(row['warm'][r], 95):.1f} ms "
                  f"| {pct(f, 50):.1f} ms | {pct(f, 95):.1f} ms |")
    print()


def _fresh_recall(path: Path, query: str, conversation: int) -> dict[str, float]:
    code = FRESH_RECALL.format(root=str(ROOT), path=str(path), query=query, conversation=conversation)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def _print_latency(row: dict[str, Any]) -> None:
    b: Build = row["build"]
    print(f"{row['size']:>7,} messages: filled in {row['fill_s']:.1f} s; index build {b.seconds:.2f} s for {b.messages:,} "
          f"messages (embedding {b.embed_seconds:.2f} s, {b.messages / max(b.embed_seconds, 1e-9):,.0f} texts/s)")
    every_warm: list[float] = []
    every_fresh: list[float] = []
    for r in LATENCY_QUERIES:
        warm, fresh = row["warm"][r], row["fresh"][r]
        every_warm += warm
        every_fresh += [f["recall_ms"] for f in fresh]
        recalled = statistics.mean(row["hits"][r])
        print(f"  {r.value:<8} warm p50 {pct(warm, 50):6.1f} ms  p95 {pct(warm, 95):6.1f} ms  (n={len(warm)}, "
              f"{recalled:.1f} hits)   fresh first recall p50 {pct([f['recall_ms'] for f in fresh], 50):6.1f} ms  "
              f"p95 {pct([f['recall_ms'] for f in fresh], 95):6.1f} ms  (n={len(fresh)})")
    opens = [f["open_ms"] for r in LATENCY_QUERIES for f in row["fresh"][r]]
    loads = [f["load_ms"] for r in LATENCY_QUERIES for f in row["fresh"][r]]
    verdict = "meets" if pct(every_warm, 95) <= GOAL_RECALL_MS and pct(every_fresh, 95) <= GOAL_RECALL_MS else "misses"
    print(f"  all      warm p95 {pct(every_warm, 95):6.1f} ms, fresh p95 {pct(every_fresh, 95):6.1f} ms: {verdict} the "
          f"{GOAL_RECALL_MS:.0f} ms goal; fresh process: database open p50 {pct(opens, 50):.1f} ms, embedder load p50 "
          f"{pct(loads, 50):.0f} ms (in zeph it loads in the background)")
    sys.stdout.flush()


# ---- section 2: quality -------------------------------------------------------------

@dataclass
class Outcome:
    query: str
    key: str | None
    route: Route
    rank: int | None  # 1-based rank of the fact's message among the hits, None if absent
    hits: int
    top: str


def quality(distractors: int, show: bool) -> list[Outcome]:
    print(f"## 2. Recall quality: {len(FACTS)} facts among {distractors:,} distractor messages, "
          f"{sum(k is not None for _, k in QUERIES)} labelled queries + {sum(k is None for _, k in QUERIES)} unrelated, "
          "Config().memory")
    config = Config()
    rng = random.Random(2024)
    tmp = Path(tempfile.mkdtemp(prefix="zeph-quality-"))
    try:
        path = tmp / "zeph.db"
        store = ConversationStore(open_database(path))
        fact_ids = _fill_with_facts(store, distractors, rng)
        build_index(config, store)
        current = store.create_conversation(provider="compatible", model="gpt-4o", cwd="/home/dev/shop").id
        index = open_index(config, store.db, path)
        embedder = shared_embedded()
        outcomes = []
        for query, key in QUERIES:
            result = recall(store.db, query, config.memory, conversation_id=current, embedder=embedder, index=index)
            ids = [h.message_id for h in result.hits]
            rank = ids.index(fact_ids[key]) + 1 if key is not None and fact_ids[key] in ids else None
            top = result.hits[0].content[:70].replace("\n", " ") if result.hits else ""
            outcomes.append(Outcome(query, key, route(query), rank, len(ids), top))
        store.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _print_quality(outcomes, show)
    return outcomes


def _fill_with_facts(store: ConversationStore, distractors: int, rng: random.Random) -> dict[str, int]:
    """Distractor sessions, and the facts told one by one (each answered) inside some of them."""
    sessions = fill(store, distractors, rng)
    fact_ids: dict[str, int] = {}
    for n, (key, text) in enumerate(FACTS.items()):
        conversation = sessions[n % len(sessions)]
        told = store.add_message(conversation, Message.user(text))
        store.add_message(conversation, Message.assistant(rng.choice(ACKNOWLEDGEMENTS)))
        fact_ids[key] = told.id
    return fact_ids


def _rate(outcomes: list[Outcome], rank: int) -> str:
    if not outcomes:
        return "–"
    hit = sum(o.rank is not None and o.rank <= rank for o in outcomes)
    return f"{hit}/{len(outcomes)} ({hit / len(outcomes):.0%})"


def _print_quality(outcomes: list[Outcome], show: bool) -> None:
    labelled = [o for o in outcomes if o.key is not None]
    unrelated = [o for o in outcomes if o.key is None]
    print("| route | queries | hit@1 | hit@5 |")
    print("|---|---:|---:|---:|")
    for r in Route:
        group = [o for o in labelled if o.route is r]
        print(f"| {r.value} | {len(group)} | {_rate(group, 1)} | {_rate(group, 5)} |")
    print(f"| **all** | {len(labelled)} | {_rate(labelled, 1)} | {_rate(labelled, 5)} |")
    recalled = sum(o.hits > 0 for o in unrelated)
    by_route = ", ".join(
        f"{r.value} {sum(o.hits > 0 for o in unrelated if o.route is r)}/{sum(o.route is r for o in unrelated)}"
        for r in Route if any(o.route is r for o in unrelated)
    )
    print(f"\nfalse recall: {recalled}/{len(unrelated)} unrelated queries recalled something ({by_route}); "
          f"{statistics.mean(o.hits for o in unrelated):.1f} messages each on average")
    for o in outcomes:
        missed = o.key is not None and o.rank is None
        if show or missed or (o.key is None and o.hits):
            mark = "miss" if missed else ("FALSE" if o.key is None and o.hits else f"@{o.rank}" if o.key else "none")
            print(f"  {mark:>5} {o.route.value:<8} {o.query!r:<58} {o.hits} hits; top: {o.top!r}")
    print()
    sys.stdout.flush()


# ---- section 3: zeph ask --------------------------------------------------------------

ASK_QUERIES = {
    "semantic": "what did we change about the worker timeout last week?",
    "keyword": "IntegrityError billing",
}
OFF = {"ZEPH_MEMORY_SEMANTIC_ENABLED": "false", "ZEPH_MEMORY_LONG_TERM_ENABLED": "false"}

EMBEDDER_LOAD = """
import os, time, json
t0 = time.perf_counter()
import numpy
t1 = time.perf_counter()
from zeph_cli.features.memory.embedders.select import EMBEDDED_MODELS, shared_offline
e = shared_offline(EMBEDDED_MODELS[os.environ.get("ZEPH_MEMORY_EMBEDDER", "minilm")]); e.load()
t3 = time.perf_counter()
e.embed(["what did we change about the worker timeout last week?"])
t4 = time.perf_counter()
print(json.dumps({"numpy": t1 - t0, "runtime and model files": t3 - t1, "first embed": t4 - t3}))
"""


@dataclass
class Run:
    wall_s: float
    cpu_s: float  # user + system time of the process, every thread (less sensitive to other load than wall)
    stderr: str


def timed(args: list[str], env: dict[str, str], python_flags: tuple[str, ...] = ()) -> Run:
    command = [sys.executable, *python_flags, ZEPH, *args] if python_flags else [ZEPH, *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(command, check=False, env=env, capture_output=True, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"zeph {' '.join(args)} failed: {result.stderr.decode()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(elapsed, cpu, result.stderr.decode())


def ask_cost(sizes: list[int], runs: int) -> None:
    print(f"## 3. `zeph ask` wall time, recall on vs off (real executable, local OpenAI-compatible fake server, "
          f"{runs} interleaved runs each)")
    config = Config()
    table = []
    server = FakeServer()
    server.route("/v1/chat/completions", openai_wire.stream_response(openai_wire.text_chunks(["Hello", " there."])))
    try:
        for size in sizes:
            tmp = Path(tempfile.mkdtemp(prefix="zeph-ask-"))
            try:
                env = _ask_env(tmp, server.url)
                timed(["ask", "hi"], env)  # creates the database (and warms the file cache)
                store = ConversationStore(open_database(database_path(env)))
                fill(store, size, random.Random(size))
                build_index(config, store)
                store.close()
                for kind, query in ASK_QUERIES.items():
                    on, off, cpu_on, cpu_off = [], [], [], []
                    timed(["ask", query], env)
                    timed(["ask", query], {**env, **OFF})
                    for n in range(runs):
                        for mode in (("on", "off") if n % 2 == 0 else ("off", "on")):
                            run = timed(["ask", query], env if mode == "on" else {**env, **OFF})
                            (on if mode == "on" else off).append(ms(run.wall_s))
                            (cpu_on if mode == "on" else cpu_off).append(ms(run.cpu_s))
                    cpu = statistics.median(cpu_on) - statistics.median(cpu_off)
                    table.append((size, kind, on, off, cpu))
                    diff = statistics.median(on) - statistics.median(off)
                    print(f"{size:>7,} messages, {kind:<8} query: wall on median {statistics.median(on):6.0f} ms p90 "
                          f"{pct(on, 90):6.0f} ms | off median {statistics.median(off):6.0f} ms p90 {pct(off, 90):6.0f} ms "
                          f"| {diff:+.0f} ms median, {pct(on, 90) - pct(off, 90):+.0f} ms p90 "
                          f"({'meets' if diff <= GOAL_ASK_MS else 'misses'} the {GOAL_ASK_MS:.0f} ms goal); "
                          f"CPU median {statistics.median(cpu_on):.0f} vs {statistics.median(cpu_off):.0f} ms: +{cpu:.0f} ms")
                    sys.stdout.flush()
                if size == sizes[-1]:
                    _breakdown(env)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    finally:
        server.close()
    print()
    print("| stored messages | query | recall off: median / p90 | recall on: median / p90 | difference (median) "
          "| CPU difference (median) |")
    print("|---:|---|---:|---:|---:|---:|")
    for size, kind, on, off, cpu in table:
        print(f"| {size:,} | {kind} | {statistics.median(off):.0f} / {pct(off, 90):.0f} ms | "
              f"{statistics.median(on):.0f} / {pct(on, 90):.0f} ms | {statistics.median(on) - statistics.median(off):+.0f} ms "
              f"| {cpu:+.0f} ms |")
    print()


def _ask_env(tmp: Path, url: str) -> dict[str, str]:
    env = {
        **os.environ,
        "ZEPH_HOME": str(tmp / "data"),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "ZEPH_LLM_PROVIDER": "compatible",
        "ZEPH_LLM_BASE_URL": url + "/v1",
        "ZEPH_LLM_MODEL": "gpt-4o",
    }
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ZEPH_CONFIG", *OFF):
        env.pop(name, None)
    return env


def _breakdown(env: dict[str, str]) -> None:
    """Where recall's time goes: the embedder's load, indexing a turn's new messages, and the modules a
    recall-on run imports that an off run does not."""
    load = json.loads(subprocess.run([sys.executable, "-c", EMBEDDER_LOAD], capture_output=True, text=True,
                                     check=True, cwd=ROOT).stdout)
    print("  embedder load in a fresh process (a background thread in zeph; numpy comes with sqlite_utils anyway): "
          + ", ".join(f"{k} {ms(v):.0f} ms" for k, v in load.items()))
    print(f"  indexing one turn's two new messages after the reply (own connection, embedder loaded): "
          f"median {statistics.median(_turn_indexing(env)):.0f} ms")
    for kind, query in ASK_QUERIES.items():
        on = timed(["ask", query], env, ("-X", "importtime")).stderr
        off = timed(["ask", query], {**env, **OFF}, ("-X", "importtime")).stderr
        on_imports, off_imports = _imports(on), _imports(off)
        added = {name: self_us for name, self_us in on_imports.items() if name not in off_imports}
        by_package: dict[str, int] = {}
        for name, self_us in added.items():
            package = ".".join(name.split(".")[:3]) if name.startswith("zeph_cli.") else name.split(".")[0]
            by_package[package] = by_package.get(package, 0) + max(self_us, 0)
        shown = ", ".join(f"{n} {t / 1000:.0f}" for n, t in sorted(by_package.items(), key=lambda x: -x[1])[:6])
        print(f"  {kind} query: recall on imports {len(added)} more modules, {sum(by_package.values()) / 1000:.0f} ms "
              f"of import time on any thread (ms: {shown})")


def _turn_indexing(env: dict[str, str], runs: int = 5) -> list[float]:
    config = Config()
    path = database_path(env)
    store = ConversationStore(open_database(path))
    conversation = store.create_conversation(provider="compatible", model="gpt-4o", cwd="/home/dev/shop").id
    embedder = shared_embedded()
    embedder.load()
    samples = []
    for n in range(runs):
        store.add_message(conversation, Message.user(f"what did we change about the worker timeout, take {n}?"))
        store.add_message(conversation, Message.assistant("Hello there."))
        service = service_for(config, store.db, lambda: embedder)
        service.start_warming()
        started = time.perf_counter()
        index_pending(service)
        samples.append(ms(time.perf_counter() - started))
    store.close()
    return samples


def _imports(stderr: str) -> dict[str, int]:
    """Module → self import µs, from `-X importtime` output."""
    out: dict[str, int] = {}
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        self_us, _, name = line[len("import time:"):].split("|")
        out[name.strip()] = int(self_us)
    return out


# ---- main ---------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1k and 10k messages, fewer runs")
    parser.add_argument("--section", default="1,2,3", help="which sections to run, e.g. 1,3")
    parser.add_argument("--sizes", help="stored messages for section 1 (default 1000,10000,100000)")
    parser.add_argument("--ask-sizes", help="stored messages for section 3 (default 1000,10000)")
    parser.add_argument("--runs", type=int, help="warm rounds over the queries (1) and zeph ask runs per mode (3)")
    parser.add_argument("--fresh-runs", type=int, help="fresh processes per route (section 1)")
    parser.add_argument("--distractors", type=int, default=2000, help="distractor messages for section 2")
    parser.add_argument("--show", action="store_true", help="print every quality query's outcome")
    args = parser.parse_args(argv)
    sections = {int(s) for s in args.section.split(",")}
    sizes = [int(s) for s in (args.sizes or ("1000,10000" if args.quick else "1000,10000,100000")).split(",")]
    ask_sizes = [int(s) for s in (args.ask_sizes or ("1000" if args.quick else "1000,10000")).split(",")]
    runs = args.runs or (5 if args.quick else 10)
    fresh_runs = args.fresh_runs or (4 if args.quick else 8)
    print(f"# {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start "
          "(other processes on the machine inflate every wall time)\n")
    if 1 in sections:
        latency(sizes, runs, fresh_runs)
    if 2 in sections:
        quality(max(args.distractors, 1000), args.show)
    if 3 in sections:
        ask_cost(ask_sizes, runs)


if __name__ == "__main__":
    main()
