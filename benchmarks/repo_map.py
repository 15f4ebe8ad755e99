"""The repo map's speed at about 1,000 files of real Python: the tags of installed packages' source (the
site-packages this runs from), parsed by the code index's tags (`features/code_index/tags.py`), each
definition's `code` its stripped source line, as the store keeps it.

It prints:
- the corpus: files, definitions, uses, and the graph's edges;
- `RepoGraph.build` (once per index version: its caller keeps the graph);
- `render` warm (graph built, tokenizer loaded), p50 / p95 over many calls, beside the goal (≤ 300 ms):
  without personalization, with a new conversation each call (chat files and identifiers drawn at random:
  the ranking is computed), and with a repeated one (its ranking kept), at budgets of 1,024 and 4,096 tokens;
- PageRank three ways on the same weighted graph, each personalized the same: the module's own power
  iteration (numpy: links merged once per graph, iterated from the ranks without personalization; and
  from scratch, as a library would), the same iteration with a scipy CSR matrix, and networkx's
  `pagerank` (graph built from the edges each call, as the weights change with the conversation) — time
  and how far their ranks are from the module's (largest difference, and whether the top 50 files agree).
  scipy and networkx are optional here (`pip install networkx` to compare with it).

    python benchmarks/repo_map.py [--files N] [--repeat R]

It asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from zeph_cli.features.code_index.repo_map import DAMPING, TOLERANCE, RepoGraph, WeightedEdges, pagerank  # noqa: E402
from zeph_cli.features.code_index.tags import tags_of  # noqa: E402
from zeph_cli.tokens import TiktokenCounter  # noqa: E402

GOAL_MS = 300.0
# Packages whose files make the corpus, whole packages first so their names resolve across their files.
PACKAGES = ("textual", "rich", "pydantic", "huggingface_hub", "mypy", "qdrant_client", "httpx", "click",
            "pygments", "setuptools", "pip")


class StoredTag(NamedTuple):
    path: str
    name: str
    role: str
    kind: str
    line: int
    code: str


def corpus(limit: int) -> list[StoredTag]:
    site = Path(sysconfig.get_paths()["purelib"])
    paths: list[Path] = []
    for package in PACKAGES:
        paths += sorted((site / package).rglob("*.py"))
        if len(paths) >= limit:
            break
    tags: list[StoredTag] = []
    for path in paths[:limit]:
        text = path.read_text(encoding="utf-8", errors="replace")
        lines = text.split("\n")
        relative = str(path.relative_to(site))
        tags += [StoredTag(*tag, lines[tag.line - 1].strip()) for tag in tags_of(relative, text)]
    return tags


def timed(call: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return times


def line(label: str, times: list[float], goal: float | None = GOAL_MS) -> None:
    p50 = statistics.median(times)
    p95 = sorted(times)[max(0, int(len(times) * 0.95) - 1)]
    beside = f"   goal ≤ {goal:.0f} ms: {'met' if p95 <= goal else 'MISSED'}" if goal else ""
    print(f"  {label:<58} p50 {p50:8.2f} ms   p95 {p95:8.2f} ms{beside}")


def scipy_pagerank(edges: WeightedEdges, files: int) -> np.ndarray:
    from scipy.sparse import csr_matrix

    out = np.bincount(edges.src, weights=edges.weight, minlength=files)
    matrix = csr_matrix((edges.weight / out[edges.src], (edges.dst, edges.src)), shape=(files, files))
    personalization, dangling = edges.personalization, out == 0
    ranks = personalization.copy()
    for _ in range(200):
        new = DAMPING * (matrix @ ranks) + (DAMPING * ranks[dangling].sum() + 1 - DAMPING) * personalization
        change = float(np.abs(new - ranks).sum())
        ranks = new
        if change < files * TOLERANCE:
            break
    return ranks / ranks.sum()


def networkx_pagerank(edges: WeightedEdges, files: int) -> np.ndarray:
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(range(files))
    weights: dict[tuple[int, int], float] = {}
    for src, dst, weight in zip(edges.src.tolist(), edges.dst.tolist(), edges.weight.tolist(), strict=True):
        weights[(src, dst)] = weights.get((src, dst), 0.0) + weight
    graph.add_weighted_edges_from((src, dst, weight) for (src, dst), weight in weights.items())
    personalization = dict(enumerate(edges.personalization.tolist()))
    ranks = nx.pagerank(graph, alpha=DAMPING, personalization=personalization, dangling=personalization,
                        tol=TOLERANCE, max_iter=200)
    return np.array([ranks[i] for i in range(files)])


def top(ranks: np.ndarray, count: int = 50) -> list[int]:
    """The best ranked files, ranks rounded so that ties stay ties whatever the float noise."""
    return np.argsort(-np.round(ranks, 8), kind="stable")[:count].tolist()


def conversations(graph: RepoGraph, count: int, seed: int) -> list[dict[str, list[str]]]:
    """Conversations drawn at random: two chat files and five identifiers the project defines."""
    chooser = random.Random(seed)
    names = sorted(graph.names)
    return [{"chat_files": chooser.sample(graph.paths, 2), "identifiers": chooser.sample(names, 5)}
            for _ in range(count)]


def render_figures(graph: RepoGraph, budget: int, count_tokens: Callable[[str], int], repeat: int) -> None:
    plain = timed(lambda: graph.render(budget_tokens=budget, count_tokens=count_tokens), repeat)
    line(f"no personalization, {budget} tokens (first call {plain[0]:.1f} ms)", plain[1:])
    fresh = iter(conversations(graph, repeat, seed=budget))
    times = timed(lambda: graph.render(budget_tokens=budget, count_tokens=count_tokens, **next(fresh)), repeat)
    line(f"a new conversation each call, {budget} tokens", times)
    same = conversations(graph, 1, seed=budget + 1)[0]
    graph.render(budget_tokens=budget, count_tokens=count_tokens, **same)
    line(f"the same conversation again, {budget} tokens",
         timed(lambda: graph.render(budget_tokens=budget, count_tokens=count_tokens, **same), repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=60)
    args = parser.parse_args()

    start = time.perf_counter()
    tags = corpus(args.files)
    parse_seconds = time.perf_counter() - start
    count_tokens = TiktokenCounter().count
    count_tokens("warm the tokenizer")

    builds = timed(lambda: RepoGraph.build(tags), 5)
    graph = RepoGraph.build(tags)
    definitions = sum(1 for t in tags if t.role == "def")
    print(f"corpus: {len(graph.paths)} files of {', '.join(PACKAGES)} (in that order), {definitions} definitions, "
          f"{len(tags) - definitions} uses, {len(graph.edge_src)} edges; tags parsed in {parse_seconds:.1f} s")
    print("build (once per index version):")
    line("RepoGraph.build", builds, goal=None)

    print("render, warm:")
    for budget in (1024, 4096):
        graph = RepoGraph.build(tags)
        render_figures(graph, budget, count_tokens, args.repeat)
    shown = graph.render(budget_tokens=1024, count_tokens=count_tokens)
    print(f"  (1,024 tokens show {shown.definitions} definitions of {shown.files} files: {shown.tokens} tokens)")

    print("PageRank, one personalized ranking of the files (time; largest rank difference from render's;")
    print("  whether the top 50 files are the same, ranks rounded to 1e-8):")
    rounds = max(5, args.repeat // 4)
    cases = [graph.weighted_edges(**conversation) for conversation in conversations(graph, rounds, seed=3)]
    files = len(graph.paths)
    reference = [graph.file_pagerank(edges) for edges in cases]
    methods: list[tuple[str, Callable[[WeightedEdges, int], np.ndarray]]] = [
        ("own power iteration (numpy), as render runs it", lambda edges, _: graph.file_pagerank(edges)),
        ("the same from the personalization, links merged each call", pagerank)]
    for label, module, method in (("power iteration, scipy CSR matrix", "scipy", scipy_pagerank),
                                  ("networkx.pagerank (graph built each call)", "networkx", networkx_pagerank)):
        try:
            __import__(module)
        except ImportError:
            print(f"  {label:<58} ({module} not installed)")
            continue
        methods.append((label, method))
    for label, method in methods:
        results: list[np.ndarray] = []
        times = timed(lambda m=method, r=results: r.append(m(cases[len(r)], files)), rounds)
        difference = max(float(np.abs(a - b).max()) for a, b in zip(results, reference, strict=True))
        same_top = all(top(a) == top(b) for a, b in zip(results, reference, strict=True))
        line(label, times, goal=None)
        print(f"  {'':<58} largest difference {difference:.1e}, top 50 files {'the same' if same_top else 'DIFFER'}")


if __name__ == "__main__":
    main()
