"""The repo map: the project's files ranked by how much the rest of the code leans on them, each shown by
the signatures of its most used definitions, fitted to a token budget.

Files form a graph: a file that uses a name points to each file that defines it, with a weight that grows
with the number of uses (square-root damped), shrinks for private names and names defined in many files,
and grows for long distinctive names, names mentioned in the conversation and uses from the conversation's
files. A personalized PageRank over that graph (toward the conversation's files and the files defining
the identifiers it mentions; uniform when it mentions none) ranks the files; each file's rank is then shared
among its definitions by the rank their users bring them (each user's rank split along its edges, as aider
does), which ranks the definitions.

Invariant: pure (tags in, text out: no I/O); the same tags and arguments give the same text; the text is
never over `budget_tokens` as counted by the `count_tokens` given (a budget too small for one line gives
the empty text); shown definitions are the best ranked ones (a prefix of the ranking), each on one line,
under its file's path, with its enclosing class's line where the language makes that cheap to tell.
"""

from __future__ import annotations

import builtins
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .languages import language_of

DAMPING = 0.85
TOLERANCE = 1e-10  # PageRank stops when an iteration moves the ranks less than this (L1), per file
MAX_ITERATIONS = 200
PERSONAL_SHARE = 0.9  # of the restart mass that goes to the conversation's files (the rest is uniform)
MENTIONED_WEIGHT = 10.0  # a name the conversation mentions
DISTINCTIVE_WEIGHT = 10.0  # a long snake_case / camelCase name: one use of it says much
DISTINCTIVE_LENGTH = 8
PRIVATE_WEIGHT = 0.1  # `_name`
COMMON_WEIGHT = 0.1  # a name defined in more than COMMON_DEFINERS files
COMMON_DEFINERS = 5
GENERIC_WEIGHT = 0.1  # a name the standard types' methods share (`append`, `get`, `replace`): most uses mean those
CHAT_FILE_WEIGHT = 50.0  # uses from a file of the conversation
UNUSED_WEIGHT = 0.1  # a definition nobody uses: a self-edge, so it still gets its file's share
SELF_SHARE = 0.1  # of a file's rank, what goes to its definitions by its own uses of them (others' uses: the rest)
MAX_LINE_CHARS = 120
GENERIC_NAMES = frozenset(name for kind in (builtins, str, bytes, list, dict, set, tuple, int, float, BaseException)
                          for name in dir(kind) if not name.startswith("_")) | frozenset(
    {"read", "write", "close", "flush", "open", "seek", "readline", "readlines", "get", "run", "main", "next",
     "send", "call", "apply", "bind", "then", "push", "map", "filter", "forEach", "length", "size", "toString",
     "equals", "hashCode", "iter", "clone", "len", "unwrap", "new", "default", "fmt", "from", "into", "put",
     "add", "remove", "contains", "isEmpty", "set", "has", "delete", "clear", "init", "name", "value", "type"})
RANKINGS_KEPT = 8  # personalizations whose rankings are kept (the uniform one among them)

CONTAINER_KINDS = frozenset({"class", "interface", "impl", "module", "trait", "struct", "enum"})
# Languages whose tags call a definition inside a class a "method" (and only those).
METHOD_KIND_LANGUAGES = frozenset({"javascript", "typescript", "tsx", "java", "rust"})
PYTHON_METHOD = re.compile(r"^(?:async\s+)?def\s+\w+\s*\(\s*(?:self|cls)\b")
DISTINCTIVE = re.compile(r"^_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+$|^_*[a-z0-9]+(?:[A-Z][a-z0-9]*)+$|"
                         r"^_*[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+$")


class MapTag(Protocol):
    """What the map reads of a tag (the store's `StoredTag`): `code` is a definition's stripped source line."""

    @property
    def path(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def role(self) -> str: ...  # "def" | "ref"
    @property
    def kind(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def code(self) -> str: ...


@dataclass(frozen=True)
class RepoMap:
    text: str
    tokens: int
    files: int  # files shown
    definitions: int  # ranked definitions shown (enclosing classes shown only as context not counted)


EMPTY_MAP = RepoMap("", 0, 0, 0)


@dataclass(frozen=True)
class Ranking:
    """One personalization's ranks: of files, and of definitions (best first)."""

    file_ranks: np.ndarray  # by file index, sums to 1
    order: np.ndarray  # definition indexes, best first (ties: path, then line)
    definition_ranks: np.ndarray  # by definition index


@dataclass(frozen=True)
class Conversation:
    """What personalizes a ranking: the conversation's files, files named by their stem, names mentioned."""

    chat: frozenset[int]  # file indexes
    named: frozenset[int]  # file indexes
    mentioned: frozenset[int]  # name ids


NO_CONVERSATION = Conversation(frozenset(), frozenset(), frozenset())


@dataclass(frozen=True)
class WeightedEdges:
    """The graph of files for one personalization: edge i goes from file `src[i]` to another file `dst[i]`
    with `weight[i]` (a file's uses of its own names are no edge of it: they would keep its rank)."""

    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    personalization: np.ndarray  # by file index, sums to 1
    all_weights: np.ndarray  # of every edge of the graph, self-uses included, in the graph's order
    personalized: bool  # by a conversation (else the weights and the personalization are the default ones)


def name_weight(name: str, definers: int) -> float:
    """How much one use of `name` says about the files defining it (before the conversation's say)."""
    weight = 1.0
    if DISTINCTIVE.match(name) and len(name) >= DISTINCTIVE_LENGTH:
        weight *= DISTINCTIVE_WEIGHT
    if name.startswith("_"):
        weight *= PRIVATE_WEIGHT
    if definers > COMMON_DEFINERS:
        weight *= COMMON_WEIGHT
    if name in GENERIC_NAMES:
        weight *= GENERIC_WEIGHT
    return weight


def is_method(language: str | None, kind: str, code: str) -> bool:
    """Whether a definition sits inside a class, as far as its tag's kind and line tell."""
    if language == "python":
        return PYTHON_METHOD.match(code) is not None
    return language in METHOD_KIND_LANGUAGES and kind == "method"


def clipped(code: str) -> str:
    return code if len(code) <= MAX_LINE_CHARS else code[:MAX_LINE_CHARS - 1] + "…"


# The graph's pickled form: part of its disk cache's key (bump it when RepoGraph's attributes change).
GRAPH_FORMAT = "g1"

class RepoGraph:
    """The graph of files and the definitions of one version of the tags; build once, render often."""

    def __init__(self, paths: list[str], definitions: list[MapTag], names: dict[str, int],
                 definition_pair: np.ndarray, edges: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                 container: list[int], name_definers: dict[int, np.ndarray]) -> None:
        self.paths = paths
        self.file_index = {path: index for index, path in enumerate(paths)}
        self.definitions = definitions  # sorted by (path, line, name)
        self.definition_file = np.array([self.file_index[d.path] for d in definitions], dtype=np.int64)
        self.definition_pair = definition_pair  # the (file, name) pair of each definition
        self.names = names  # name -> name id (names defined somewhere)
        self.edge_src, self.edge_dst, self.edge_pair, self.edge_name, self.edge_base = edges
        self.container = container  # the enclosing class's definition index, or -1
        self.lines = [("    " if container[i] >= 0 else "  ") + clipped(d.code or d.name)
                      for i, d in enumerate(definitions)]
        self.pair_count = int(definition_pair.max()) + 1 if len(definition_pair) else 0
        self.pair_file = np.zeros(self.pair_count, dtype=np.int64)  # the file of each (file, name) pair
        self.pair_file[definition_pair] = self.definition_file
        self.edge_is_self = self.edge_src == self.edge_dst
        cross = ~self.edge_is_self
        self.cross_src, self.cross_dst = self.edge_src[cross], self.edge_dst[cross]
        self.links = Links.of(self.cross_src, self.cross_dst, len(paths))
        self._uniform: np.ndarray | None = None  # the file ranks without personalization
        self.name_definers = name_definers  # name id -> the files defining it
        self.stems: dict[str, list[int]] = {}
        for index, path in enumerate(paths):
            stem = path.rsplit("/", 1)[-1].split(".", 1)[0]
            self.stems.setdefault(stem, []).append(index)
        self._rankings: OrderedDict[Conversation, Ranking] = OrderedDict()
        self._lock = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:
        """The graph alone (pickled to a cache): no kept rankings, no lock."""
        state = dict(self.__dict__)
        del state["_rankings"], state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._rankings = OrderedDict()
        self._lock = threading.RLock()

    @classmethod
    def build(cls, tags: Sequence[MapTag]) -> RepoGraph:
        paths = sorted({t.path for t in tags})
        file_index = {path: index for index, path in enumerate(paths)}
        definitions = sorted((t for t in tags if t.role == "def"), key=lambda t: (t.path, t.line, t.name, t.kind))
        names: dict[str, int] = {}
        definers: dict[int, set[int]] = {}
        for d in definitions:
            name_id = names.setdefault(d.name, len(names))
            definers.setdefault(name_id, set()).add(file_index[d.path])
        pairs: dict[tuple[int, int], int] = {}
        definition_pair = np.array([pairs.setdefault((file_index[d.path], names[d.name]), len(pairs))
                                    for d in definitions], dtype=np.int64)
        uses = Counter((file_index[t.path], names[t.name]) for t in tags if t.role == "ref" and t.name in names)
        name_definers = {name_id: np.array(sorted(files), dtype=np.int64) for name_id, files in definers.items()}
        edges = _edges(uses, name_definers, pairs, [name_weight(name, len(definers[i])) for name, i in names.items()])
        return cls(paths, definitions, names, definition_pair, edges, _containers(definitions), name_definers)

    # -- ranking ---------------------------------------------------------------------------------------

    def weighted_edges(self, *, chat_files: Collection[str] = (), identifiers: Collection[str] = ()) -> WeightedEdges:
        """The edges weighted for a conversation, and its personalization (what PageRank runs on)."""
        return self._weighted(self._conversation(chat_files, identifiers))

    def ranking(self, *, chat_files: Collection[str] = (), identifiers: Collection[str] = ()) -> Ranking:
        return self._ranking(self._conversation(chat_files, identifiers))

    def file_ranks(self, *, chat_files: Collection[str] = (), identifiers: Collection[str] = ()) -> dict[str, float]:
        ranks = self.ranking(chat_files=chat_files, identifiers=identifiers).file_ranks
        return {path: float(ranks[i]) for i, path in enumerate(self.paths)}

    def _conversation(self, chat_files: Collection[str], identifiers: Collection[str]) -> Conversation:
        return Conversation(
            chat=frozenset(self.file_index[p] for p in chat_files if p in self.file_index),
            named=frozenset(i for n in identifiers for i in self.stems.get(n, ())),
            mentioned=frozenset(self.names[n] for n in identifiers if n in self.names))

    def _weighted(self, conversation: Conversation) -> WeightedEdges:
        files = len(self.paths)
        weight = self.edge_base
        if conversation.mentioned:
            weight = weight * np.where(np.isin(self.edge_name, sorted(conversation.mentioned)), MENTIONED_WEIGHT, 1.0)
        if conversation.chat:
            weight = weight * np.where(np.isin(self.edge_src, sorted(conversation.chat)), CHAT_FILE_WEIGHT, 1.0)
        personal = np.zeros(files)
        for file in conversation.chat | conversation.named:
            personal[file] += 1.0
        for name_id in sorted(conversation.mentioned):  # sorted: the same sums in the same order
            definers = self.name_definers[name_id]
            personal[definers] += 1.0 / len(definers)
        uniform = np.full(files, 1.0 / files) if files else np.zeros(0)
        if personal.sum() > 0:
            personalization = PERSONAL_SHARE * personal / personal.sum() + (1 - PERSONAL_SHARE) * uniform
        else:
            personalization = uniform
        return WeightedEdges(self.cross_src, self.cross_dst, weight[~self.edge_is_self], personalization, weight,
                             conversation != NO_CONVERSATION)

    def file_pagerank(self, edges: WeightedEdges) -> np.ndarray:
        """The files' PageRank for edges weighted by `weighted_edges`: iterated from the ranks without
        personalization (computed once), which a conversation's ranks are near."""
        with self._lock:
            uniform = self._uniform
            if uniform is None:
                uniform = self._uniform = pagerank(self._weighted(NO_CONVERSATION), len(self.paths), links=self.links)
        if not edges.personalized:
            return uniform
        return pagerank(edges, len(self.paths), links=self.links, start=uniform)

    def _ranking(self, conversation: Conversation) -> Ranking:
        with self._lock:  # renders may come from more than one thread; the kept rankings are shared
            kept = self._rankings.get(conversation)
            if kept is not None:
                self._rankings.move_to_end(conversation)
                return kept
            edges = self._weighted(conversation)
            file_ranks = self.file_pagerank(edges)
            definition_ranks = self._spread(file_ranks, edges.all_weights)
            order = np.argsort(-definition_ranks, kind="stable")  # definitions are in (path, line) order: ties so
            ranking = Ranking(file_ranks, order, definition_ranks)
            self._rankings[conversation] = ranking
            if len(self._rankings) > RANKINGS_KEPT:
                self._rankings.popitem(last=False)
            return ranking

    def _spread(self, file_ranks: np.ndarray, weight: np.ndarray) -> np.ndarray:
        """Each file's rank shared among its definitions: most of it by the rank the other files bring them
        (each user's rank split over the names it uses, aider's flow along edges), the rest by the file's own
        uses (all of it, for a file no other uses)."""
        if not self.pair_count:
            return np.zeros(0)
        files, cross, own = len(self.paths), ~self.edge_is_self, self.edge_is_self
        out = np.bincount(self.cross_src, weights=weight[cross], minlength=files)
        inflow = np.bincount(self.edge_pair[cross], weights=file_ranks[self.cross_src] * weight[cross]
                             / np.where(out[self.cross_src] > 0, out[self.cross_src], 1.0), minlength=self.pair_count)
        self_use = np.bincount(self.edge_pair[own], weights=weight[own], minlength=self.pair_count)
        # np.bincount of no weights gives integers: one file with no uses across files is a real project
        inflow, self_use = inflow.astype(np.float64, copy=False), self_use.astype(np.float64, copy=False)
        file_inflow = np.bincount(self.pair_file, weights=inflow, minlength=files)[self.pair_file].astype(np.float64)
        file_self_use = np.bincount(self.pair_file, weights=self_use, minlength=files)[self.pair_file].astype(np.float64)
        inflow_share = np.divide(inflow, file_inflow, out=np.zeros_like(inflow), where=file_inflow > 0)
        self_share = np.divide(self_use, file_self_use, out=np.zeros_like(self_use), where=file_self_use > 0)
        own_part = np.where(file_inflow == 0, 1.0, np.where(file_self_use == 0, 0.0, SELF_SHARE))
        pair_ranks = file_ranks[self.pair_file] * ((1 - own_part) * inflow_share + own_part * self_share)
        return pair_ranks[self.definition_pair]

    # -- rendering -------------------------------------------------------------------------------------

    def render(self, *, chat_files: Collection[str] = (), identifiers: Collection[str] = (), budget_tokens: int,
               count_tokens: Callable[[str], int], exclude_files: Collection[str] = ()) -> RepoMap:
        """The map for a conversation: as many of the best ranked definitions as fit `budget_tokens`.

        `chat_files` (paths as in the tags) and `identifiers` (names as written) personalize the ranking;
        `exclude_files` are left out of the text (e.g. files shown whole elsewhere) but still rank."""
        if budget_tokens <= 0 or not self.definitions:
            return EMPTY_MAP
        order = self._ranking(self._conversation(chat_files, identifiers)).order
        excluded = [self.file_index[p] for p in exclude_files if p in self.file_index]
        if excluded:
            order = order[~np.isin(self.definition_file[order], sorted(excluded))]
        estimate = self._fitting_by_lines(order, budget_tokens, count_tokens)
        return self._fitted(order, estimate, budget_tokens, count_tokens)

    def _fitting_by_lines(self, order: np.ndarray, budget: int, count_tokens: Callable[[str], int]) -> int:
        """How many of `order`'s definitions fit when each line's tokens are counted alone and summed."""
        spent = 0
        shown_files: set[int] = set()
        shown_lines: set[int] = set()  # definition indexes whose line is in the text
        for taken, index in enumerate(order.tolist()):
            cost = 0
            file = int(self.definition_file[index])
            if file not in shown_files:
                cost += count_tokens(self.paths[file] + ":\n")
            new_lines = [i for i in (self.container[index], index) if i >= 0 and i not in shown_lines]
            cost += sum(count_tokens(self.lines[i] + "\n") for i in new_lines)
            if spent + cost > budget:
                return taken
            spent += cost
            shown_files.add(file)
            shown_lines.update(new_lines)
        return len(order)

    def _fitted(self, order: np.ndarray, estimate: int, budget: int, count_tokens: Callable[[str], int]) -> RepoMap:
        """The longest prefix of `order` whose text counts within `budget`, searched from `estimate` down."""
        best = EMPTY_MAP
        low, high = 1, estimate
        probe = estimate
        while low <= high:
            text, files = self.text_of(order[:probe])
            tokens = count_tokens(text)
            if tokens <= budget:
                best = RepoMap(text, tokens, files, probe)
                low = probe + 1
            else:
                high = probe - 1
            probe = (low + high) // 2
        return best

    def text_of(self, shown: np.ndarray) -> tuple[str, int]:
        """The text showing definitions `shown` (and their files), with the number of files."""
        by_file: dict[int, set[int]] = {}
        for index in shown.tolist():
            lines = by_file.setdefault(int(self.definition_file[index]), set())
            lines.add(index)
            if self.container[index] >= 0:
                lines.add(self.container[index])
        out: list[str] = []
        for file, indexes in by_file.items():  # first shown first: the files' rank order
            out.append(self.paths[file] + ":")
            seen_lines: set[int] = set()
            for index in sorted(indexes):  # definitions are in line order within a file
                line = self.definitions[index].line
                if line not in seen_lines:
                    seen_lines.add(line)
                    out.append(self.lines[index])
        return "\n".join(out), len(by_file)


@dataclass(frozen=True)
class Links:
    """The graph's edges merged by (source, destination) file, sorted by destination then source, for the
    power iteration: link `i` goes from `src[i]` to `dst[i]`; edge `j` is part of link `of_edge[j]`; the
    links into one file are consecutive, from `starts[k]` on, into file `into[k]`."""

    src: np.ndarray
    dst: np.ndarray
    of_edge: np.ndarray
    starts: np.ndarray
    into: np.ndarray

    @classmethod
    def of(cls, src: np.ndarray, dst: np.ndarray, files: int) -> Links:
        keys, of_edge = np.unique(dst * files + src, return_inverse=True)
        link_src, link_dst = keys % files, keys // files
        starts = np.flatnonzero(np.r_[True, link_dst[1:] != link_dst[:-1]]) if len(keys) else np.zeros(0, np.int64)
        return cls(link_src, link_dst, of_edge.reshape(-1), starts, link_dst[starts])


def pagerank(edges: WeightedEdges, files: int, *, links: Links | None = None,
             start: np.ndarray | None = None) -> np.ndarray:
    """Personalized PageRank by power iteration (numpy only): a file's rank flows along its links in
    proportion to their weights; a file without links restarts as the personalization does. `links`: the
    edges' `Links` when known; `start`: ranks to iterate from (the personalization when None). Ranks sum to 1."""
    if files == 0:
        return np.zeros(0)
    links = links if links is not None else Links.of(edges.src, edges.dst, files)
    personalization = edges.personalization
    link_weight = np.bincount(links.of_edge, weights=edges.weight, minlength=len(links.src))
    out = np.bincount(links.src, weights=link_weight, minlength=files)
    share = link_weight / np.where(out[links.src] > 0, out[links.src], 1.0)
    dangling = out == 0
    ranks = (start if start is not None else personalization).copy()
    moved = np.zeros(files)
    for _ in range(MAX_ITERATIONS):
        if len(links.src):
            moved[links.into] = np.add.reduceat(ranks[links.src] * share, links.starts)
        restart = DAMPING * ranks[dangling].sum() + (1 - DAMPING)
        new = DAMPING * moved + restart * personalization
        change = float(np.abs(new - ranks).sum())
        ranks = new
        if change < files * TOLERANCE:
            break
    return ranks / ranks.sum()


def _edges(uses: Counter[tuple[int, int]], name_definers: dict[int, np.ndarray], pairs: dict[tuple[int, int], int],
           name_weights: list[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The graph's edges (source file, destination file, (file, name) pair, name, weight): one from each file
    using a name to each file defining it, weighted by the name and the square root of the uses; one from a
    file to itself for each of its definitions that nothing uses."""
    names = len(name_weights)
    used = sorted(uses.items())
    user = np.array([key[0] for key, _ in used], dtype=np.int64)
    name = np.array([key[1] for key, _ in used], dtype=np.int64)
    count = np.array([c for _, c in used], dtype=np.float64)
    definers_of = [name_definers[i] for i in range(names)]
    fanout = np.array([len(files) for files in definers_of], dtype=np.int64)[name] if names else name
    definer = np.concatenate([definers_of[i] for i in name.tolist()]) if len(name) else name
    src, edge_name = np.repeat(user, fanout), np.repeat(name, fanout)
    base = np.repeat(np.sqrt(count), fanout)
    used_names = set(name.tolist())
    unused = sorted((pair, key) for key, pair in pairs.items() if key[1] not in used_names)
    unused_file = np.array([key[0] for _, key in unused], dtype=np.int64)
    unused_name = np.array([key[1] for _, key in unused], dtype=np.int64)
    src = np.concatenate([src, unused_file])
    dst = np.concatenate([definer, unused_file])
    edge_name = np.concatenate([edge_name, unused_name])
    base = np.concatenate([base, np.full(len(unused), UNUSED_WEIGHT)])
    pair_keys = np.array([file * names + name_id for file, name_id in pairs], dtype=np.int64)
    pair_ids = np.array(list(pairs.values()), dtype=np.int64)
    by_key = np.argsort(pair_keys)
    edge_pair = pair_ids[by_key][np.searchsorted(pair_keys[by_key], dst * names + edge_name)]
    weight = base * np.array(name_weights, dtype=np.float64)[edge_name] if len(edge_name) else base
    return src, dst, edge_pair, edge_name, weight


def _containers(definitions: list[MapTag]) -> list[int]:
    """Each definition's enclosing class (its definition index), or -1: the nearest class-like definition
    above it in its file, for what its language's tags tell is a method."""
    containers = [-1] * len(definitions)
    last_container = -1
    last_path, language = None, None
    for index, d in enumerate(definitions):
        if d.path != last_path:
            last_path, last_container, language = d.path, -1, language_of(d.path)
        if last_container >= 0 and is_method(language, d.kind, d.code):
            containers[index] = last_container
        if d.kind in CONTAINER_KINDS:
            last_container = index
    return containers
