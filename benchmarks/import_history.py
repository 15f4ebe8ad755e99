"""A newcomer's history, end to end: `zeph sessions import`, `zeph memory reindex`, `zeph recall`.

Builds a history of 6,000 messages (the size of the public long-conversation set recall is judged
on): sessions of 10 to 60 messages of developer chat (benchmarks/data/dev_chat.py) over a year,
dated, each message with an id, the 32 facts of benchmarks/data/recall_set.py told in some of them.
Writes it as JSON Lines and, when the `llm` package is installed, as an llm logs.db of the same
conversations (llm's own migrations; each prompt and reply one legacy `responses` row). Then runs
the real `zeph` in a fresh home, as a newcomer would, and times each step:

  import (which indexes), the same import again (stores nothing), reindex (nothing left),
  import --no-index then reindex (the two halves), the labelled queries through `zeph recall`
  on standard input (one process; per query), and one `zeph recall QUERY` (a fresh process).

Beside them, the baseline: writing the same messages straight into the store (as
benchmarks/recall.py fills its databases) and `MemoryService.prepare` in-process per query,
so what the commands add is visible. Also hit@5 of the labelled facts, as a check that the
import fed recall (recall quality itself is benchmarks/recall_quality.py's).

Prints figures; asserts nothing. Run from the repository root with the project installed:
`python benchmarks/import_history.py [--messages 6000] [--runs 3]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.data import dev_chat  # noqa: E402
from benchmarks.data.recall_set import ACKNOWLEDGEMENTS, FACTS, QUERIES  # noqa: E402

ZEPH = str(Path(sys.executable).parent / "zeph")
START = datetime(2024, 1, 8, 9, 0, tzinfo=timezone.utc)


def history(messages: int, seed: int = 30) -> list[dict]:
    """JSON Lines records: sessions of dev chat, the facts told (and acknowledged) in some of them."""
    rng = random.Random(seed)
    facts = list(FACTS.items())
    records: list[dict] = []
    clock, session = START, 0
    while len(records) < messages:
        session += 1
        size = min(rng.randint(10, 60), messages - len(records))
        title = dev_chat.session_title(rng)
        told = facts.pop(0) if facts and rng.random() < 0.4 else None
        at = rng.randrange(0, max(size - 2, 1), 2) if told else -1
        n = 0
        while n < size:
            clock += timedelta(seconds=rng.randint(20, 600))
            if n == at and told is not None:
                key, text = told
                pair = [("user", text, f"fact-{key}"), ("assistant", rng.choice(ACKNOWLEDGEMENTS), f"ack-{key}")]
            else:
                pair = [("user", dev_chat.user_text(rng), None), ("assistant", dev_chat.assistant_text(rng), None)]
            for role, text, label in pair[: size - n]:
                records.append({"session": f"s{session}", "role": role, "content": text, "title": title,
                                "timestamp": clock.isoformat(), "id": label or f"s{session}-m{n}"})
                n += 1
        clock += timedelta(hours=rng.randint(6, 60))
    return records


def write_llm_logs(records: list[dict], path: Path) -> bool:
    """The same conversations as llm's legacy `responses` rows, in a database made by llm's migrations."""
    try:
        import sqlite_utils
        from llm.migrations import migrate
    except ImportError:
        return False
    db = sqlite_utils.Database(path)
    migrate(db)
    rows, conversations = [], {}
    for n, user in enumerate(records):
        if user["role"] != "user":
            continue
        reply = records[n + 1] if n + 1 < len(records) else None
        if reply is not None and (reply["session"] != user["session"] or reply["role"] != "assistant"):
            reply = None  # a prompt its session ends on: logged with no response
        conversations[user["session"]] = {"id": user["session"], "name": user["title"], "model": "gpt-4o-mini"}
        rows.append({"id": user["id"], "model": "gpt-4o-mini", "prompt": user["content"], "system": None,
                     "prompt_json": "{}", "options_json": "{}", "response": reply["content"] if reply else "",
                     "response_json": "{}", "conversation_id": user["session"], "duration_ms": 1200,
                     "datetime_utc": datetime.fromisoformat(user["timestamp"]).replace(tzinfo=None).isoformat()})
    db["conversations"].insert_all(conversations.values())
    db["responses"].insert_all(rows)
    db.close()
    return True


def run(args: list[str], env: dict[str, str], stdin: str | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run([ZEPH, *args], input=stdin, capture_output=True, text=True, env=env, timeout=1800)
    elapsed = time.perf_counter() - started
    if result.returncode not in (0, 1):
        raise SystemExit(f"zeph {' '.join(args)} failed: {result.stderr}")
    return elapsed, result.stdout


def fresh_env(tmp: Path, name: str) -> dict[str, str]:
    home = tmp / name
    shutil.rmtree(home, ignore_errors=True)
    return {**os.environ, "ZEPH_HOME": str(home), "ZEPH_LLM_PROVIDER": "compatible",
            "ZEPH_LLM_BASE_URL": "http://127.0.0.1:9/v1", "ZEPH_LLM_MODEL": "gpt-4o",
            "XDG_CONFIG_HOME": str(tmp / "config")}


def baseline_store(records: list[dict], tmp: Path) -> float:
    """The same messages written straight into the store, one transaction per session (no checks, no ids)."""
    from zeph_cli.messages import Message
    from zeph_cli.store import ConversationStore, open_database
    from zeph_cli.store.conversations import message_record
    from zeph_cli.store.transactions import write_transaction

    store = ConversationStore(open_database(tmp / "baseline.db"))
    started = time.perf_counter()
    by_session: dict[str, list[dict]] = {}
    for record in records:
        by_session.setdefault(record["session"], []).append(record)
    for session in by_session.values():
        conversation = store.create_conversation(provider="jsonl", model="", cwd="", title=session[0]["title"])
        rows = [message_record(conversation.id, Message.text(r["role"], r["content"]), metadata={},
                               stamp=r["timestamp"]) for r in session]
        with write_transaction(store.db):
            store.db["messages"].insert_all(rows, batch_size=500)
    elapsed = time.perf_counter() - started
    store.close()
    return elapsed


def baseline_prepare(env: dict[str, str], queries: list[str]) -> list[float]:
    """`MemoryService.prepare` per query in this process, on the imported database (the call a turn makes)."""
    from zeph_cli.agent.factory import memory_service
    from zeph_cli.config import load_config
    from zeph_cli.providers import resolve_settings
    from zeph_cli.store import ConversationStore, open_database

    loaded = load_config(env=env)
    store = ConversationStore(open_database(Path(env["ZEPH_HOME"]) / "zeph.db"))
    memory = memory_service(loaded, store, resolve_settings(loaded.config, env, loaded.sources), ROOT)
    assert memory is not None

    async def timed() -> list[float]:
        await memory.backlog()  # the embedder loaded, as `zeph recall` does before its first query
        times = []
        for query in queries:
            started = time.perf_counter()
            await memory.prepare(0, query, ())
            times.append(time.perf_counter() - started)
        return times

    times = asyncio.run(timed())
    store.close()
    return times


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(int(round(q / 100 * (len(ordered) - 1))), len(ordered) - 1)] if ordered else float("nan")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=6000)
    parser.add_argument("--runs", type=int, default=3, help="runs of each timed step (the median is printed)")
    options = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="zeph-import-"))
    try:
        records = history(options.messages)
        source = tmp / "history.jsonl"
        source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        sessions = len({r["session"] for r in records})
        told = sum(1 for r in records if r["id"].startswith("fact-"))
        print(f"# A newcomer's history: {len(records):,} messages in {sessions} sessions, {told} facts told, "
              f"{source.stat().st_size / 1e6:.1f} MB of JSON Lines; median of {options.runs} runs, fresh home each\n")
        steps: dict[str, list[float]] = {}
        for _ in range(options.runs):
            env = fresh_env(tmp, "home")
            for name, args in (("import (reads, writes, indexes)", ["sessions", "import", str(source)]),
                               ("the same import again", ["sessions", "import", str(source)]),
                               ("memory reindex after it", ["memory", "reindex"])):
                steps.setdefault(name, []).append(run(args, env)[0])
            env = fresh_env(tmp, "split")
            steps.setdefault("import --no-index", []).append(run(["sessions", "import", str(source), "--no-index"], env)[0])
            steps.setdefault("then memory reindex", []).append(run(["memory", "reindex"], env)[0])
            steps.setdefault("baseline: the same rows into the store", []).append(baseline_store(records, tmp))
            for leftover in tmp.glob("baseline.db*"):
                leftover.unlink()
        env = fresh_env(tmp, "home")
        run(["sessions", "import", str(source)], env)
        queries = [q for q, _ in QUERIES]
        batch_times, lines = [], ""
        for _ in range(options.runs):
            elapsed, lines = run(["recall"], env, stdin="\n".join(queries) + "\n")
            batch_times.append(elapsed)
        single = [run(["recall", queries[n % len(queries)]], env)[0] for n in range(options.runs)]
        prepare = baseline_prepare(env, queries * 3)
        width = 44
        print(f"{'step':<{width}} {'seconds':>8}")
        for name, times in steps.items():
            print(f"{name:<{width}} {statistics.median(times):>8.2f}")
        batch = statistics.median(batch_times)
        print(f"{f'recall, {len(queries)} queries on stdin (one process)':<{width}} {batch:>8.2f}"
              f"   ({batch / len(queries) * 1000:.0f} ms a query, start-up included)")
        print(f"{'recall QUERY (a fresh process)':<{width}} {statistics.median(single):>8.2f}")
        print(f"{'baseline: prepare() in-process, p50 / p95':<{width}} {pct(prepare, 50) * 1000:>6.1f} ms / "
              f"{pct(prepare, 95) * 1000:.1f} ms a query")
        hits = 0
        labelled = [(json.loads(line), key) for line, (_, key) in zip(lines.splitlines(), QUERIES) if key is not None]
        for row, key in labelled:
            hits += any(hit["external_id"] == f"fact-{key}" for hit in row["hits"][:5])
        print(f"\nlabelled queries whose fact is in the top 5: {hits}/{len(labelled)} "
              f"(the import fed recall; quality itself: benchmarks/recall_quality.py)")
        logs = tmp / "logs.db"
        if write_llm_logs(records, logs):
            took, again = [], []
            for _ in range(options.runs):
                env = fresh_env(tmp, "llm")
                took.append(run(["sessions", "import", "--from", "llm", str(logs)], env)[0])
                again.append(run(["sessions", "import", "--from", "llm", str(logs)], env)[0])
            print(f"\nllm logs.db of the same conversations ({logs.stat().st_size / 1e6:.1f} MB, legacy responses "
                  f"rows): import {statistics.median(took):.2f} s (indexing included), the same import again "
                  f"{statistics.median(again):.2f} s")
        else:
            print("\n(llm is not installed: its logs.db import is not timed)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
