"""Recall quality on long multi-session chats: evidence recall@5 and @10 per question kind, and latency.

The set is generated, never downloaded: benchmarks/data/life_chats.py builds
10 histories (5,000+ turns in 22-30 dated sessions each, two people, recurring
names, small talk, facts restated or updated later) and 400+ questions with
annotated evidence turns, from one seed (`--seed`). `--export DIR` writes it
as JSON Lines to publish or to run elsewhere: one file of messages per history
(`session`, `role`, `content`, `timestamp`, `id`) and questions.jsonl, whose
evidence names those ids.

Each history goes into its own new zeph database through zeph's own store
(sessions dated as in the chat, the speakers stored as user and assistant,
FTS5 kept by the store's triggers), then is indexed as `zeph memory reindex`
does (`embed_pending` with the configured embedder, the sqlite vector index).
Each question is then asked as a new turn asks it: `MemoryService.prepare` from
a new session, with `recall_limit` 10 (its first 5 are what the default limit
of 5 returns). Beside zeph's default:

- BM25: Okapi BM25 (bm25s, k1 1.5, b 0.75) over the same messages, its
  179 English stop words (STOPWORDS_EN_PLUS) removed, no stemming: the bag of
  words to beat;
- dense: the embedder's nearest neighbours alone (the index's cosine order,
  no threshold);
- FTS5 OR: zeph's full-text index queried with any of the question's content
  words, ranked by bm25().

Evidence recall@k of a question: the share of its evidence groups with a turn
in the top k (a fact said twice is one group; a two-hop question has two).
The table gives the mean per question kind and over all kinds; "none" and
"unrelated" questions have no evidence and count the hits zeph returns for
them. Then
diagnostics of how the default fails (routes taken, names, small talk, the
similarity cut, repeated questions) and the latency of `prepare` per question
on these histories and on databases of `--sizes` messages (generated the same
way with other seeds), p50 and p95; the goal is p95 ≤ 20 ms at 10k and ≤ 50 ms
at 100k.

The config is zeph's defaults with the ZEPH_MEMORY_* and ZEPH_LLM_EMBEDDING*
variables of the environment applied (no config file is read), so another
embedder or weight is measured by setting its variable. Prints figures, asserts
nothing. Run from the repository root with the project installed with its
`bench` extra (`pip install -e '.[bench]'`: bm25s and scipy): `python benchmarks/recall_quality.py [--quick]
[--sizes 10000,100000] [--show KIND] [--export DIR] [--json FILE]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.data.life_chats import KINDS, History, histories  # noqa: E402
from zeph_cli.config import Config, load_config  # noqa: E402
from zeph_cli.features.memory.embedders.select import embedder_for  # noqa: E402
from zeph_cli.features.memory.fusion import terms  # noqa: E402
from zeph_cli.features.memory.service import MemoryService, index_pending  # noqa: E402
from zeph_cli.features.memory.vectors import open_index  # noqa: E402
from zeph_cli.messages import Message  # noqa: E402
from zeph_cli.store import ConversationStore, open_database  # noqa: E402
from zeph_cli.store.conversations import message_record  # noqa: E402
from zeph_cli.store.transactions import write_transaction  # noqa: E402

METHODS = ("zeph default", "BM25", "dense", "FTS5 OR")
KS = (5, 10)
OLD_THRESHOLD = 0.35  # the fixed cosine cut recall used to apply


# ---- config and loading ---------------------------------------------------------------------

def bench_config() -> Config:
    """Defaults plus the environment's ZEPH_MEMORY_* / ZEPH_LLM_EMBEDDING* variables; recall_limit 10."""
    env = {k: v for k, v in os.environ.items() if k.startswith(("ZEPH_MEMORY_", "ZEPH_LLM_EMBEDDING"))}
    empty = Path(tempfile.mkdtemp(prefix="zeph-bench-config-"))
    try:
        config = load_config(env={**env, "XDG_CONFIG_HOME": str(empty), "ZEPH_HOME": str(empty)}).config
    finally:
        shutil.rmtree(empty, ignore_errors=True)
    config.memory.semantic = replace(config.memory.semantic, recall_limit=max(KS))
    return config


def overrides() -> str:
    found = sorted(k for k in os.environ if k.startswith(("ZEPH_MEMORY_", "ZEPH_LLM_EMBEDDING")))
    return ", ".join(f"{k}={os.environ[k]}" for k in found) or "none"


def load_history(store: ConversationStore, history: History) -> list[int]:
    """The history's sessions as zeph stores them; the message id of each turn, in order."""
    ids: list[int] = []
    for n, session in enumerate(history.sessions):
        stamp = session.date.isoformat(timespec="seconds") + "+00:00"
        conversation = store.create_conversation(provider="import", model="chat", cwd="/home/user",
                                                 title=f"chat {n + 1}")
        store.db.execute("update conversations set created_at = ?, updated_at = ? where id = ?",
                         [stamp, stamp, conversation.id])
        rows = []
        for m, turn in enumerate(session.turns):
            when = (session.date + timedelta(seconds=40 * m)).isoformat(timespec="seconds") + "+00:00"
            message = Message.user(turn.text) if turn.speaker == 0 else Message.assistant(turn.text)
            rows.append(message_record(conversation.id, message, metadata={}, stamp=when))
        with write_transaction(store.db):
            first = store.db.execute("select coalesce(max(id), 0) from messages").fetchone()[0] + 1
            store.db["messages"].insert_all(rows, batch_size=500)
        ids.extend(range(first, first + len(rows)))
    return ids


def make_service(config: Config, db: Any) -> MemoryService:
    return MemoryService(config, db, project_root=ROOT, make_embedder=lambda: embedder_for(config, None),
                         make_index=lambda d, p: open_index(config, d if d is not None else db, p))


# ---- one history ---------------------------------------------------------------------------

@dataclass
class Asked:
    history: int
    text: str
    kind: str
    about: str
    evidence: list[list[int]]  # groups of message ids
    ranked: dict[str, list[int]]  # method -> message ids, best first
    seconds: float  # prepare's wall time
    cpu: float  # the process's CPU time during prepare (every thread: the query's embedding too)
    route: str
    hits: int  # what zeph's default returned (up to recall_limit)


@dataclass
class Run:
    asked: list[Asked] = field(default_factory=list)
    texts: dict[tuple[int, int], str] = field(default_factory=dict)  # (history, message id) -> text
    labels: dict[tuple[int, int], str] = field(default_factory=dict)
    cosines: list[float] = field(default_factory=list)  # question vs each of its evidence turns
    build_s: float = 0.0
    messages: int = 0


def run_history(n: int, history: History, config: Config, run: Run, loop: asyncio.AbstractEventLoop) -> None:
    import bm25s

    tmp = Path(tempfile.mkdtemp(prefix="zeph-quality-"))
    try:
        path = tmp / "zeph.db"
        store = ConversationStore(open_database(path))
        ids = load_history(store, history)
        turns = history.turns()
        for i, turn in zip(ids, turns):
            run.texts[(n, i)] = turn.text
            run.labels[(n, i)] = turn.label
        service = make_service(config, store.db)
        service.start_warming()
        started = time.perf_counter()
        index_pending(service)
        run.build_s += time.perf_counter() - started
        run.messages += len(ids)
        now = store.create_conversation(provider="import", model="chat", cwd="/home/user", title="today").id
        embedder = service.embedder
        index = service._search_index([])
        from bm25s.stopwords import STOPWORDS_EN_PLUS

        corpus = bm25s.tokenize([t.text for t in turns], stopwords=STOPWORDS_EN_PLUS, show_progress=False)
        bm25 = bm25s.BM25(k1=1.5, b=0.75)
        bm25.index(corpus, show_progress=False)
        for q in history.questions:
            started, cpu = time.perf_counter(), time.process_time()
            turn = loop.run_until_complete(service.prepare(now, q.text, set()))
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
            result = turn.recall
            ranked = {"zeph default": [h.message_id for h in result.hits] if result else []}
            tokens = bm25s.tokenize([q.text], stopwords=STOPWORDS_EN_PLUS, show_progress=False)
            if tokens.vocab and any(tokens.ids[0]):
                docs, _ = bm25.retrieve(tokens, k=max(KS), show_progress=False)
                ranked["BM25"] = [ids[int(d)] for d in docs[0]]
            else:
                ranked["BM25"] = []
            vector = embedder.embed([q.text])[0]
            ranked["dense"] = [i for i, _ in index.search(embedder.model, vector, max(KS))]
            ranked["FTS5 OR"] = fts_or(store, q.text)
            evidence = [[ids[t] for t in group] for group in q.evidence]
            if evidence:
                texts = [turns[t].text for group in q.evidence for t in group]
                rows = embedder.embed(texts)
                run.cosines.extend(float(vector @ row) for row in rows)
            run.asked.append(Asked(n, q.text, q.kind, q.about, evidence, ranked, seconds, cpu,
                                   result.route.value if result else "-", len(ranked["zeph default"])))
        store.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def fts_or(store: ConversationStore, question: str) -> list[int]:
    words = sorted(terms(question))
    if not words:
        return []
    rows = store.db.execute(
        "select m.id from messages_fts join messages m on m.rowid = messages_fts.rowid "
        "where messages_fts match ? order by bm25(messages_fts) limit ?",
        [" OR ".join(f'"{w}"' for w in words), max(KS)],
    ).fetchall()
    return [r[0] for r in rows]


# ---- figures --------------------------------------------------------------------------------

def evidence_recall(asked: Asked, method: str, k: int) -> float:
    top = set(asked.ranked[method][:k])
    return sum(any(i in top for i in group) for group in asked.evidence) / len(asked.evidence)


def pct(samples: list[float], q: float) -> float:
    return float(np.percentile(samples, q)) if samples else float("nan")


def print_table(run: Run) -> dict[str, Any]:
    answerable = [a for a in run.asked if a.evidence]
    kinds = [k for k in KINDS if any(a.kind == k for a in answerable)]
    header = "| method | " + " | ".join(f"{k} ({sum(a.kind == k for a in answerable)})" for k in kinds)
    print(header + f" | all ({len(answerable)}) |")
    print("|---|" + "---:|" * (len(kinds) + 1))
    figures: dict[str, Any] = {}
    for method in METHODS:
        cells = []
        for kind in [*kinds, None]:
            group = [a for a in answerable if kind is None or a.kind == kind]
            at = [100 * statistics.mean(evidence_recall(a, method, k) for a in group) for k in KS]
            figures[f"{method}/{kind or 'all'}"] = at
            cells.append(" / ".join(f"{x:.1f}" for x in at))
        print(f"| {method} | " + " | ".join(cells) + " |")
    print("\n(each cell: evidence recall @5 / @10, in %)")
    for kind, what in (("none", "about something of theirs never said"), ("unrelated", "on topics never discussed")):
        none = [a for a in run.asked if a.kind == kind]
        if none:
            print(f"questions {what} ({len(none)}): zeph default returned {statistics.mean(a.hits for a in none):.1f} "
                  f"messages each on average; {sum(a.hits > 0 for a in none)} of them returned any")
    gap = figures["zeph default/all"][0] - figures["BM25/all"][0]
    print(f"goal: zeph default ≥ BM25 + 10 points at @5: {figures['zeph default/all'][0]:.1f} vs "
          f"{figures['BM25/all'][0]:.1f} ({gap:+.1f}): {'met' if gap >= 10 else 'not met'}")
    return figures


def print_diagnostics(run: Run) -> None:
    answerable = [a for a in run.asked if a.evidence]
    routes = Counter(a.route for a in run.asked)
    print("\ndiagnostics (zeph default, top 5):")
    print("  routes: " + ", ".join(f"{r} {c}" for r, c in routes.most_common()))
    hits = [(a, i) for a in answerable for i in a.ranked["zeph default"][:5]]
    named = sum(a.about.lower() in run.texts[(a.history, i)].lower() for a, i in hits)
    ev = [(a, i) for a in answerable for g in a.evidence for i in g]
    ev_named = sum(a.about.lower() in run.texts[(a.history, i)].lower() for a, i in ev)
    print(f"  recalled messages naming the person asked about: {named / max(len(hits), 1):.0%} "
          f"(of evidence turns: {ev_named / max(len(ev), 1):.0%})")
    labels = Counter(run.labels[(a.history, i)] for a, i in hits)
    print("  recalled messages by kind of turn: " + ", ".join(f"{k} {c / max(len(hits), 1):.0%}" for k, c in labels.most_common()))
    counts = Counter((a.history, i) for a, i in hits)
    if counts:
        (h, i), c = counts.most_common(1)[0]
        asked_there = sum(a.history == h for a in answerable)
        print(f"  most recalled message: {run.texts[(h, i)]!r}, in the top 5 of {c} of {asked_there} questions")
    below = sum(c < OLD_THRESHOLD for c in run.cosines)
    print(f"  evidence turns with a cosine under {OLD_THRESHOLD} to their question: {below / max(len(run.cosines), 1):.0%} "
          f"(median cosine {statistics.median(run.cosines):.2f})")
    repeated = [a for a in answerable if a.kind == "repeated"]
    if repeated:
        same = sum(any(run.texts[(a.history, i)] == a.text for i in a.ranked["zeph default"][:5]) for a in repeated)
        print(f"  repeated questions whose earlier identical question is in the top 5: {same} of {len(repeated)}")
    short = [a.hits for a in answerable]
    print(f"  hits returned per answerable question: mean {statistics.mean(short):.1f}, "
          f"{sum(h == 0 for h in short)} with none")


def print_latency(label: str, seconds: list[float], cpu: list[float], messages: int) -> None:
    ms, cpu_ms = [s * 1000 for s in seconds], [s * 1000 for s in cpu]
    print(f"| {label} | {messages:,} | {len(ms)} | {pct(ms, 50):.1f} | {pct(ms, 95):.1f} | {pct(cpu_ms, 50):.1f} "
          f"| {pct(cpu_ms, 95):.1f} |")


def latency(sizes: list[int], config: Config, loop: asyncio.AbstractEventLoop,
            seed: int) -> list[tuple[int, list[float], list[float], float]]:
    out = []
    for size in sizes:
        tmp = Path(tempfile.mkdtemp(prefix="zeph-latency-"))
        try:
            path = tmp / "zeph.db"
            store = ConversationStore(open_database(path))
            questions: list[str] = []
            stored, n = 0, 0
            while stored < size:
                history = _one(seed, n)
                stored += len(load_history(store, history))
                questions += [q.text for q in history.questions]
                n += 1
            service = make_service(config, store.db)
            service.start_warming()
            started = time.perf_counter()
            index_pending(service)
            build = time.perf_counter() - started
            now = store.create_conversation(provider="import", model="chat", cwd="/home/user", title="today").id
            loop.run_until_complete(service.prepare(now, "warm up", set()))
            step = max(len(questions) // 300, 1)
            samples, cpu = [], []
            for text in questions[::step]:
                started, used = time.perf_counter(), time.process_time()
                loop.run_until_complete(service.prepare(now, text, set()))
                samples.append(time.perf_counter() - started)
                cpu.append(time.process_time() - used)
            out.append((stored, samples, cpu, build))
            store.close()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def _one(seed: int, n: int) -> History:
    from benchmarks.data.life_chats import history

    return history((seed + 1) * 1000 + n)


def show(run: Run, kind: str) -> None:
    for a in run.asked:
        if kind not in ("all", a.kind):
            continue
        got = evidence_recall(a, "zeph default", 5) if a.evidence else float(a.hits == 0)
        print(f"\n[{a.kind}] {a.text}  route={a.route}  @5={got:.2f}")
        for g in a.evidence:
            print("   evidence: " + " | ".join(run.texts[(a.history, i)][:90] for i in g))
        for r, i in enumerate(a.ranked["zeph default"][:5], 1):
            mark = "*" if any(i in g for g in a.evidence) else " "
            print(f"   {r}{mark} {run.texts[(a.history, i)][:100]}")


def export(folder: Path, items: list[History]) -> None:
    """Each history as JSON Lines of messages (`session`, `role`, `content`, `timestamp`, `id`, and who spoke),
    and the questions in questions.jsonl with their evidence as those ids."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "questions.jsonl").open("w") as questions:
        for n, h in enumerate(items):
            with (folder / f"history-{n + 1:02d}.jsonl").open("w") as out:
                index = 0
                for s, session in enumerate(h.sessions):
                    for m, t in enumerate(session.turns):
                        when = (session.date + timedelta(seconds=40 * m)).isoformat(timespec="seconds") + "Z"
                        out.write(json.dumps({"session": f"chat {s + 1}", "role": "user" if t.speaker == 0 else "assistant",
                                              "content": t.text, "timestamp": when, "id": f"h{n + 1}-t{index}",
                                              "speaker": h.names[t.speaker], "label": t.label}) + "\n")
                        index += 1
            for q in h.questions:
                questions.write(json.dumps({"history": n + 1, "question": q.text, "kind": q.kind, "about": q.about,
                                            "evidence": [[f"h{n + 1}-t{i}" for i in g] for g in q.evidence],
                                            "answer": q.answer}) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--histories", type=int, default=10)
    parser.add_argument("--sizes", default="10000,100000", help="stored messages for the latency databases")
    parser.add_argument("--quick", action="store_true", help="latency at 10k only")
    parser.add_argument("--show", metavar="KIND", help="print each question of KIND (or all) with zeph's top 5")
    parser.add_argument("--export", type=Path, metavar="DIR", help="write the set as JSON Lines into DIR and stop")
    parser.add_argument("--json", type=Path, help="write every question's rankings as JSON (to compare runs)")
    args = parser.parse_args(argv)
    items = histories(args.seed, args.histories)
    if args.export:
        export(args.export, items)
        print(f"wrote {len(items)} histories and questions.jsonl into {args.export}")
        return
    config = bench_config()
    loop = asyncio.new_event_loop()
    turns = sum(len(h.turns()) for h in items)
    sessions = sum(len(h.sessions) for h in items)
    print(f"# recall quality: {len(items)} histories (seed {args.seed}), {sessions} sessions, {turns:,} turns, "
          f"{sum(len(h.questions) for h in items)} questions; embedder {embedder_for(config, None).model}; "
          f"overrides: {overrides()}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}\n")
    run = Run()
    for n, history in enumerate(items):
        run_history(n, history, config, run, loop)
    figures = print_table(run)
    print_diagnostics(run)
    if args.show:
        show(run, args.show)
    print(f"\nlatency of MemoryService.prepare per question (warm, recall_limit 10, ms; CPU: the process's CPU "
          f"time, less sensitive to other load; load now {os.getloadavg()[0]:.1f}):\n")
    print("| database | stored messages | questions | wall p50 | wall p95 | CPU p50 | CPU p95 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print_latency(f"the {len(items)} histories", [a.seconds for a in run.asked], [a.cpu for a in run.asked],
                  run.messages // len(items))
    sizes = [int(s) for s in ("10000" if args.quick else args.sizes).split(",") if s]
    for stored, samples, cpu, build in latency(sizes, config, loop, args.seed):
        print_latency(f"generated, indexed in {build:.0f} s", samples, cpu, stored)
    if args.json:
        args.json.write_text(json.dumps({"figures": figures, "asked": [a.__dict__ for a in run.asked]}))


if __name__ == "__main__":
    main()
