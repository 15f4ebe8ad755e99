"""Code retrieval on this repository's own history: which retriever finds the functions a commit changed
from the commit's own subject, beside plain BM25 on the same chunks.

The data set is real and built here, offline, from git: for each commit that changed a few functions of
`zeph_cli/` (between 1 and `MAX_GOLD` definitions), the query is its subject up to the first colon or
semicolon (what the commit does, in the words of whoever wrote it), the corpus is every `zeph_cli/` Python
file at the commit's parent, chunked by the code index (`features/code_index/chunks.py`), and the gold
is the definitions (path + qualified symbol) whose lines at the parent the commit's diff touches, and
their files. A query that names a gold symbol verbatim is kept: commit subjects do, and so do users.

Each retriever ranks the same chunks; the table prints, averaged over queries, the share of gold
functions found among the top 5 chunks and the share of gold files among the top 5 files:
- BM25 (plain): `bm25s` over path + qualified name + code, split on non-word characters — the baseline;
- BM25 (identifiers): the same, with identifiers split into their parts (`code_index/words.py`);
- dense: wordllama or minilm vectors of each chunk's embedding text (`--texts`: the whole text, or cut to
  500 or 300 characters at a line, with or without the file's imports), cosine to the query's;
- hybrid: reciprocal rank fusion of BM25 (identifiers) and dense, as recall fuses its lists;
- zeph's search: what ships (`code_index/search.py`), each snapshot stored by the index's store in a real
  SQLite file (FTS5's BM25 over the same words; minilm vectors of the store's embedding text when `--texts`
  has `full`), the query searched by `CodeSearch` with its router.

`--router` also splits the queries into those that name code (`is_code_query`) and prose, and prints what
the router could change for the former; `--latency N` times zeph's warm search (the query's minilm
embedding included) over one index of N chunks; `--vector-cache DIR` keeps the vectors between runs.

    python benchmarks/code_retrieval.py [--commits N] [--seed S] [--rev REV] [--texts full,500,...]
        [--router] [--latency CHUNKS] [--vector-cache DIR]

It asserts nothing; it prints the data set's size, the tables and its time.
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from zeph_cli.features.code_index.chunks import Chunk, chunk_file  # noqa: E402
from zeph_cli.features.code_index.words import words  # noqa: E402
from zeph_cli.features.memory.fusion import reciprocal_rank_fusion  # noqa: E402

MAX_GOLD = 6
TOP = 5
SOURCE = "zeph_cli/"


@dataclass
class Case:
    commit: str
    query: str
    chunks: list[Chunk]
    imports: list[str]  # each chunk's file's imports (for its embedding text)
    gold: set[tuple[str, str]]  # (path, symbol)
    gold_files: set[str]


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout


def commits(rev: str = "HEAD") -> list[tuple[str, str]]:
    out = git("log", "--no-merges", "--format=%H%x00%s", rev, "--", f"{SOURCE}*.py")
    return [tuple(line.split("\0", 1)) for line in out.splitlines() if "\0" in line]  # type: ignore[misc]


def query_of(subject: str) -> str:
    return re.split(r"[:;]\s", subject, maxsplit=1)[0].strip()[:300]


def changed_rows(parent: str, commit: str) -> dict[str, list[tuple[int, int]]]:
    """Per file, the 1-based line ranges of the parent the commit changed (an insertion: the line it follows)."""
    diff = git("diff", "-U0", parent, commit, "--", f"{SOURCE}*.py")
    ranges: dict[str, list[tuple[int, int]]] = {}
    path = None
    for line in diff.splitlines():
        if line.startswith("--- "):
            path = line[6:] if line.startswith("--- a/") else None
        elif line.startswith("@@") and path is not None:
            match = re.match(r"@@ -(\d+)(?:,(\d+))? ", line)
            if match:
                start, count = int(match.group(1)), int(match.group(2) or "1")
                ranges.setdefault(path, []).append((start, start + max(count, 1) - 1))
    return ranges


def snapshot(commit: str, cache: dict[tuple[str, str], tuple[list[Chunk], str]]) -> list[tuple[Chunk, str]]:
    """Every chunk of the `zeph_cli/` Python files at `commit`, with its file's imports (chunked once per blob)."""
    listing = git("ls-tree", "-r", commit, "--", SOURCE)
    out: list[tuple[Chunk, str]] = []
    for line in listing.splitlines():
        meta, path = line.split("\t", 1)
        blob = meta.split()[2]
        if not path.endswith(".py"):
            continue
        key = (blob, path)
        if key not in cache:
            cache[key] = chunk_file(path, git("cat-file", "blob", blob))
        chunks, imports = cache[key]
        out += [(chunk, imports) for chunk in chunks]
    return out


def build_cases(limit: int, seed: int, rev: str = "HEAD") -> list[Case]:
    history = commits(rev)
    random.Random(seed).shuffle(history)
    cache: dict[tuple[str, str], tuple[list[Chunk], str]] = {}
    cases: list[Case] = []
    for commit, subject in history:
        if len(cases) >= limit:
            break
        parent = f"{commit}^"
        try:
            rows = changed_rows(parent, commit)
        except subprocess.CalledProcessError:
            continue  # the first commit
        if not rows:
            continue
        pairs = snapshot(parent, cache)
        gold = {(c.path, c.symbol) for c, _ in pairs if c.symbol and any(
            a <= c.end_line and b >= c.start_line for a, b in rows.get(c.path, ()))}
        if not 1 <= len(gold) <= MAX_GOLD:
            continue
        cases.append(Case(commit[:10], query_of(subject), [c for c, _ in pairs], [i for _, i in pairs], gold,
                          {path for path, _ in gold}))
    return cases


def plain_words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def bm25_ranking(tokenize: Callable[[str], list[str]]) -> Callable[[Case], list[int]]:
    import bm25s

    def rank(case: Case) -> list[int]:
        corpus = [tokenize(f"{c.path} {c.symbol}\n{c.text}") for c in case.chunks]
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenization.Tokenized(*_ids(corpus)), show_progress=False)
        query = tokenize(case.query)
        scores = retriever.get_scores(query) if query else np.zeros(len(corpus))
        return list(np.argsort(-np.asarray(scores), kind="stable"))
    return rank


def _ids(corpus: list[list[str]]) -> tuple[list[list[int]], dict[str, int]]:
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(w, len(vocab)) for w in doc] for doc in corpus]
    return ids, vocab


def shortened(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters at a line boundary (its first line cut if that is longer)."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit + 1)
    return text[:cut] if cut > 0 else text[:limit]


# What each chunk's vector is made of: its whole embedding text (path, scope, signature, imports, code;
# minilm reads its first 256 word pieces), or that text cut shorter (faster to embed).
TEXT_VARIANTS: dict[str, Callable[[Chunk, str], str]] = {
    "full": lambda chunk, imports: chunk.embedding_text(imports),
    "800": lambda chunk, imports: shortened(chunk.embedding_text(imports), 800),
    "500": lambda chunk, imports: shortened(chunk.embedding_text(imports), 500),
    "300": lambda chunk, imports: shortened(chunk.embedding_text(imports), 300),
    "500-noimports": lambda chunk, imports: shortened(chunk.embedding_text(""), 500),
    "300-noimports": lambda chunk, imports: shortened(chunk.embedding_text(""), 300),
}


class VectorCache:
    """Vectors by (model, text), kept in files of a folder between runs (each process writes its own file)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.vectors: dict[str, np.ndarray] = {}
        self.new: dict[str, np.ndarray] = {}
        self.saved = time.monotonic()
        if folder is not None:
            import pickle

            folder.mkdir(parents=True, exist_ok=True)
            for file in sorted(folder.glob("*.pickle")):
                self.vectors.update(pickle.loads(file.read_bytes()))

    @staticmethod
    def key(model: str, text: str) -> str:
        import hashlib

        return hashlib.sha1(f"{model}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()

    def get(self, key: str) -> np.ndarray | None:
        return self.vectors.get(key)

    def put(self, key: str, vector: np.ndarray) -> None:
        self.vectors[key] = self.new[key] = vector
        if time.monotonic() - self.saved > 60:
            self.save()

    def save(self) -> None:
        if self.folder is None or not self.new:
            return
        import os
        import pickle

        file = self.folder / f"{os.getpid()}-{int(time.time() * 1000)}.pickle"
        file.write_bytes(pickle.dumps(self.new))
        self.new, self.saved = {}, time.monotonic()


class Dense:
    def __init__(self, name: str, cache: VectorCache, variant: str = "full") -> None:
        if name == "minilm":
            from zeph_cli.features.memory.embedders.minilm import MiniLMEmbedder

            self.embedder = MiniLMEmbedder()
        else:
            from zeph_cli.features.memory.embedders.embedded import shared_embedded

            self.embedder = shared_embedded()
        self.cache, self.text_of = cache, TEXT_VARIANTS[variant]
        self.embed_seconds, self.embedded = 0.0, 0

    def texts(self, case: Case) -> list[str]:
        return [self.text_of(chunk, imports) for chunk, imports in zip(case.chunks, case.imports)]

    def matrix(self, texts: list[str]) -> np.ndarray:
        """Each text's vector (embedded once, across cases and runs)."""
        keys = [self.cache.key(self.embedder.model, t) for t in texts]
        missing = list({k: t for k, t in zip(keys, texts) if self.cache.get(k) is None}.items())
        for start in range(0, len(missing), 256):
            batch = missing[start:start + 256]
            began = time.monotonic()
            vectors = self.embedder.embed([t for _, t in batch])
            self.embed_seconds += time.monotonic() - began
            self.embedded += len(batch)
            for (key, _), vector in zip(batch, vectors):
                self.cache.put(key, vector)
        return np.stack([self.cache.vectors[k] for k in keys])

    def rank(self, case: Case) -> list[int]:
        matrix = self.matrix(self.texts(case))
        query = self.embedder.embed([case.query])[0]
        return list(np.argsort(-(matrix @ query), kind="stable"))


class Shipped:
    """zeph's own search (`code_index/search.py`), as it ships: each snapshot's chunks stored in a real SQLite
    file by the index's store, their vectors (the store's embedding text, by `dense`'s model) in its vectors,
    the query searched by `CodeSearch`. Its hits are mapped back to the case's chunks."""

    def __init__(self, folder: Path, dense: Dense | None) -> None:
        from zeph_cli.features.code_index.store import CodeStore
        from zeph_cli.features.code_index.vectors import SqliteCodeVectors
        from zeph_cli.store import open_database

        self.db = open_database(folder / "zeph.db")
        self.store, self.vectors, self.dense = CodeStore(self.db), SqliteCodeVectors(self.db), dense
        self.seconds: list[float] = []  # each search's time, the query's embedding included

    def index(self, root: str, chunks: Sequence[Chunk], imports: Sequence[str]):  # -> Project
        project = self.store.project(root)
        by_path: dict[str, list[Chunk]] = {}
        imports_of: dict[str, str] = {}
        for chunk, imported in zip(chunks, imports):
            by_path.setdefault(chunk.path, []).append(chunk)
            imports_of[chunk.path] = imported
        for path, its in by_path.items():
            self.store.replace_file(project, path, language="python", sha="", size=0, mtime_ns=0,
                                    imports=imports_of[path], chunks=its, tags=[])
        if self.dense is not None:
            model = self.dense.embedder.model
            todo = self.store.missing_vectors(project, model, 1_000_000)
            if todo:
                self.vectors.add(model, [i for i, _ in todo], self.dense.matrix([t for _, t in todo]))
        return project

    def search(self, project, query: str, k: int) -> list:
        from zeph_cli.features.code_index.search import CodeSearch

        search = CodeSearch(self.store, self.vectors if self.dense else None,
                            self.dense.embedder if self.dense else None)
        began = time.perf_counter()
        hits = search.search(project, query, k)
        self.seconds.append(time.perf_counter() - began)
        return hits

    def rank(self, case: Case) -> list[int]:
        project = self.index(f"/snapshots/{case.commit}", case.chunks, case.imports)
        try:
            hits = self.search(project, case.query, 60)
        finally:
            self.store.clear(project)
        where = {(c.path, c.start_line): i for i, c in enumerate(case.chunks)}
        return [where[(h.path, h.start_line)] for h in hits]


def latency(cases: list[Case], shipped: Shipped, chunks: int) -> None:
    """Warm search times over one project of about `chunks` chunks (snapshots side by side, paths prefixed)."""
    from dataclasses import replace

    picked: list[tuple[Chunk, Chunk]] = []  # (as indexed, as in its snapshot)
    imports: list[str] = []
    for n, case in enumerate(cases):
        if len(picked) >= chunks:
            break
        picked += [(replace(c, path=f"s{n}/{c.path}"), c) for c in case.chunks]
        imports += case.imports
    picked, imports = picked[:chunks], imports[:chunks]
    dense, shipped.dense = shipped.dense, None
    project = shipped.index("/snapshots/latency", [c for c, _ in picked], imports)
    shipped.dense = dense
    if dense is not None:  # each chunk's vector is its snapshot's (the prefixed path is not embedded again)
        original = {(c.path, c.start_line): dense.text_of(o, i) for (c, o), i in zip(picked, imports)}
        stored = shipped.store.chunks_of_paths(project, sorted({c.path for c, _ in picked}))
        texts = [original[(c.path, c.start_line)] for c in stored]
        shipped.vectors.add(dense.embedder.model, [c.id for c in stored], dense.matrix(texts))
    shipped.search(project, "warm up", 8)
    shipped.seconds.clear()
    for case in cases:
        shipped.search(project, case.query, 8)
    times = sorted(shipped.seconds)
    print(f"\nzeph's search over {len(picked):,} chunks, {len(times)} queries, warm "
          f"(the query's embedding included): p50 {1000 * times[len(times) // 2]:.1f} ms, "
          f"p95 {1000 * times[int(len(times) * 0.95)]:.1f} ms, max {1000 * times[-1]:.1f} ms")
    shipped.store.clear(project)


def hybrid(first: Callable[[Case], list[int]], second: Callable[[Case], list[int]],
           weight: float = 1.0) -> Callable[[Case], list[int]]:
    """Reciprocal rank fusion of two rankings, the second weighted `weight` against the first's 1."""
    def rank(case: Case) -> list[int]:
        fused = reciprocal_rank_fusion([(first(case)[:200], 1.0), (second(case)[:200], weight)])
        return sorted(fused, key=lambda i: -fused[i])
    return rank


def routed(lexical: Callable[[Case], list[int]], dense: Callable[[Case], list[int]], *, dense_weight: float = 0.5,
           code_dense_weight: float = 0.5, symbols: float = 0.0, files: float = 0.0,
           symbols_first: bool = False) -> Callable[[Case], list[int]]:
    """The hybrid (lexical + dense at `dense_weight`), and for a query that names code (`is_code_query`):
    the dense ranking at `code_dense_weight`, the chunks whose symbol the query names (and those of the
    files it names) fused as one more ranking at weight `symbols` (`files`), or the named symbols first."""
    from zeph_cli.features.code_index.search import code_names, names_file, names_symbol

    def rank(case: Case) -> list[int]:
        names = code_names(case.query)
        weight = code_dense_weight if names else dense_weight
        rankings = [(lexical(case)[:200], 1.0), *([(dense(case)[:200], weight)] if weight else [])]
        fused = reciprocal_rank_fusion(rankings)
        order = sorted(fused, key=lambda i: -fused[i])
        if not names:
            return order
        chunks = case.chunks
        named = [i for i in range(len(chunks)) if names_symbol(names, chunks[i].symbol)]
        if symbols_first:
            first = sorted(named, key=lambda i: -fused.get(i, 0.0))
            return first + [i for i in order if i not in set(first)]
        extra = []
        if symbols and named:
            extra.append((sorted(named, key=lambda i: -fused.get(i, 0.0)), symbols))
        in_files = [i for i in order if names_file(names, chunks[i].path)]
        if files and in_files:
            extra.append((in_files, files))
        if not extra:
            return order
        fused = reciprocal_rank_fusion([*rankings, *extra])
        return sorted(fused, key=lambda i: -fused[i])
    return rank


def _memo(rank: Callable[[Case], list[int]]) -> Callable[[Case], list[int]]:
    """`rank`, each case ranked once (the hybrids reuse their parts' rankings)."""
    done: dict[str, list[int]] = {}

    def memo(case: Case) -> list[int]:
        if case.commit not in done:
            done[case.commit] = rank(case)
        return done[case.commit]
    return memo


def scores(case: Case, ranking: Sequence[int]) -> tuple[float, float]:
    top = [case.chunks[i] for i in ranking[:TOP]]
    found = {(c.path, c.symbol) for c in top} & case.gold
    files: list[str] = []
    for i in ranking:
        path = case.chunks[i].path
        if path not in files:
            files.append(path)
        if len(files) == TOP:
            break
    return len(found) / len(case.gold), len(set(files) & case.gold_files) / len(case.gold_files)


def table(cases: list[Case], retrievers: list[tuple[str, Callable[[Case], list[int]]]], title: str = "") -> None:
    print(f"\n{title or 'retriever':44} {'functions@5':>12} {'files@5':>9}   vs baseline")
    base: tuple[float, float] | None = None
    for name, rank in retrievers:
        results = [scores(case, rank(case)) for case in cases]
        functions = sum(r[0] for r in results) / max(len(results), 1)
        files = sum(r[1] for r in results) / max(len(results), 1)
        base = base or (functions, files)
        print(f"{name:44} {functions:12.1%} {files:9.1%}   {100 * (functions - base[0]):+.1f} / "
              f"{100 * (files - base[1]):+.1f} points", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=80)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--texts", default="full",
                        help=f"what minilm embeds of each chunk, comma-separated: {', '.join(TEXT_VARIANTS)}")
    parser.add_argument("--vector-cache", type=Path, default=None,
                        help="a folder keeping the vectors between runs (each text embedded once)")
    parser.add_argument("--rev", default="HEAD", help="the history sampled: commits up to this one")
    parser.add_argument("--latency", type=int, default=0, metavar="CHUNKS",
                        help="also time zeph's search over one index of this many chunks")
    parser.add_argument("--router", action="store_true",
                        help="also compare what a code-looking query could change (on the first --texts)")
    args = parser.parse_args()
    started = time.monotonic()
    cases = build_cases(args.commits, args.seed, args.rev)
    built = time.monotonic() - started
    print(f"{len(cases)} commits of this repository ({sum(len(c.gold) for c in cases)} gold functions, "
          f"{sum(len(c.chunks) for c in cases) // max(len(cases), 1):,} chunks a snapshot); built in {built:.1f} s")
    cache = VectorCache(args.vector_cache)
    try:
        wordllama = Dense("wordllama", cache)
        plain, ident = _memo(bm25_ranking(plain_words)), _memo(bm25_ranking(words))
        retrievers: list[tuple[str, Callable[[Case], list[int]]]] = [
            ("BM25 (plain): baseline", plain), ("BM25 (identifiers)", ident),
            ("dense (wordllama)", _memo(wordllama.rank)),
            ("hybrid: BM25 (identifiers) + wordllama, RRF", hybrid(ident, wordllama.rank)),
        ]
        minilms = []
        for variant in filter(None, args.texts.split(",")):
            minilm = Dense("minilm", cache, variant)
            minilms.append((variant, minilm))
            rank = _memo(minilm.rank)
            retrievers += [
                (f"dense (minilm, {variant})", rank),
                (f"hybrid: BM25 (id.) + minilm {variant}, RRF", hybrid(ident, rank)),
                (f"hybrid: BM25 (id.) + minilm {variant} x0.5", hybrid(ident, rank, 0.5)),
            ]
        with tempfile.TemporaryDirectory() as folder:
            shipped_lexical = Shipped(Path(folder) / "lexical", None)
            retrievers.append(("zeph's search, lexical (no vectors)", _memo(shipped_lexical.rank)))
            full = [m for v, m in minilms if v == "full"]  # the store embeds the full text
            if full:
                shipped = Shipped(Path(folder) / "hybrid", full[0])
                retrievers.append(("zeph's search: BM25 + minilm x0.5, routed", _memo(shipped.rank)))
            table(cases, retrievers)
            if full:
                times = sorted(shipped.seconds)
                print(f"zeph's search per query over a snapshot: p50 {1000 * times[len(times) // 2]:.1f} ms, "
                      f"p95 {1000 * times[int(len(times) * 0.95)]:.1f} ms (cold: each snapshot is a new index, its vectors read by its one search)")
                if args.latency:
                    latency(cases, shipped, args.latency)
        if args.router:
            from zeph_cli.features.code_index.search import is_code_query

            code = [case for case in cases if is_code_query(case.query)]
            prose = [case for case in cases if not is_code_query(case.query)]
            rank = minilms[0][1].rank if minilms else wordllama.rank
            variants: list[tuple[str, Callable[[Case], list[int]]]] = [
                ("BM25 (plain): baseline", plain),
                ("hybrid x0.5 (as for prose)", routed(ident, rank)),
                ("dense x0.25", routed(ident, rank, code_dense_weight=0.25)),
                ("dense off", routed(ident, rank, code_dense_weight=0.0)),
                ("named symbols first", routed(ident, rank, symbols_first=True)),
                ("+ named symbols, RRF x1", routed(ident, rank, symbols=1.0)),
                ("+ named symbols, RRF x2", routed(ident, rank, symbols=2.0)),
                ("+ named files, RRF x0.5", routed(ident, rank, files=0.5)),
                ("+ named symbols x1, files x0.5", routed(ident, rank, symbols=1.0, files=0.5)),
                ("+ symbols x1, files x0.5, dense x0.25", routed(ident, rank, symbols=1.0, files=0.5,
                                                                code_dense_weight=0.25)),
            ]
            table(code, variants, f"code-looking queries ({len(code)})")
            table(prose, variants[:2], f"prose queries ({len(prose)})")
    finally:
        cache.save()
    for variant, minilm in minilms:
        if minilm.embedded:
            print(f"minilm, {variant}: {minilm.embedded:,} texts embedded in {minilm.embed_seconds:.0f} s "
                  f"({minilm.embedded / max(minilm.embed_seconds, 1e-9):.1f} a second)")
    print(f"\n{time.monotonic() - started:.1f} s in all")


if __name__ == "__main__":
    main()
