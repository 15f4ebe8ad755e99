"""A source file as retrieval chunks: whole definitions where they fit, split at statement boundaries where
they do not, the code between them grouped; other files as runs of lines.

Invariant: pure (the caller reads the file). Every line of the file with something on it is in exactly
one chunk, and a chunk is a run of whole lines. A definition (what the grammar's tags query captures as
`definition.*`: function, method, class, module, interface…) that fits `max_lines` is one chunk; one that
does not gives a chunk per nested definition and splits the rest at its children's boundaries (its first
piece keeps the signature); the code outside definitions is grouped by its top-level statements up to
`max_lines`. A chunk names its symbol qualified by its enclosing definitions (`Class.method`), and
`embedding_text` puts the path, the scope, the signature and the file's imports in front of the code;
it is what a chunk's vector is made of (`vector_text`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .languages import language_of, load

if TYPE_CHECKING:
    from tree_sitter import Node

MAX_LINES = 60  # a chunk's most lines (a definition longer than this is split)
TEXT_LINES = 40  # lines per chunk of a file that is not parsed
SMALL_LINES = 4  # code outside definitions (or a constant's) shorter than this joins a neighbouring chunk
MERGED_KINDS = frozenset({"code"})  # what a small chunk may be merged as (see `_merged_small`)
MAX_IMPORT_LINES = 8
VECTOR_CHARS = 300  # of a chunk's text embedded (`Chunk.vector_text`)  # of the file's imports, put in front of each chunk for its embedding


@dataclass(frozen=True)
class Chunk:
    path: str
    start_line: int  # 1-based, inclusive
    end_line: int
    symbol: str  # "Class.method"; "" for code outside definitions and text
    kind: str  # the tags' kind ("function", "method", "class", …), "code" outside definitions, "text"
    signature: str  # the definition's first line ("" for code and text)
    text: str

    def vector_text(self, imports: str = "") -> str:
        """What is embedded: the embedding text whole (minilm reads its first 256 word pieces). Cut to its
        first 300 characters without the imports it embeds twice as fast, and benchmarks/code_retrieval.py
        found as many functions with it on one sample (26.5% in the top 5, seed 7) but 2.6 points fewer on
        another (22.0% against 24.6%, seed 11), which took zeph's search under plain BM25 + 10 there."""
        return self.embedding_text(imports)

    def embedding_text(self, imports: str = "") -> str:
        """What is embedded (and what BM25 reads): the path, the scope, the signature, the imports, the code."""
        head = [f"# {self.path}" + (f" · {self.kind} {self.symbol}" if self.symbol else "")]
        if self.signature and not self.text.lstrip().startswith(self.signature.strip()):
            head.append(self.signature)
        if imports:
            head.append(imports)
        return "\n".join([*head, self.text])


@dataclass
class _Definition:
    node: Node
    name: str
    kind: str
    children: list[_Definition]

    @property
    def start(self) -> int:
        return self.node.start_point.row

    @property
    def end(self) -> int:
        return _last_row(self.node)


def chunk_file(path: str, text: str, *, max_lines: int = MAX_LINES) -> tuple[list[Chunk], str]:
    """The file's chunks and its imports (for the embedding text); text chunks when its language is not parsed."""
    name = language_of(path)
    grammar = load(name) if name is not None else None
    lines = text.split("\n")  # as the parser counts rows (splitlines would also break at \f, \x1c, \u2028…)
    if grammar is None:
        return text_chunks(path, lines), ""
    from tree_sitter import Parser, QueryCursor

    tree = Parser(grammar.language).parse(text.encode("utf-8", "surrogatepass"))
    root = tree.root_node
    definitions: list[_Definition] = []
    if grammar.tags is not None:
        for _, captures in QueryCursor(grammar.tags).matches(root):
            kinds = [key for key in captures if key.startswith("definition.")]
            if kinds and captures.get("name"):
                node = _outer(captures[kinds[0]][0])
                name_node = captures["name"][0]
                definitions.append(_Definition(node, _text(name_node), kinds[0].split(".", 1)[1], []))
    top = _nest(definitions)
    chunker = _Chunker(path, lines, max_lines)
    for definition in top:
        chunker.definition(definition, "")
    chunker.between(root, top, "", "code", "")
    chunks = _merged_small(sorted(chunker.chunks, key=lambda c: c.start_line), lines, max_lines)
    return chunks, _imports(root, lines)


def _merged_small(chunks: list[Chunk], lines: list[str], max_lines: int) -> list[Chunk]:
    """`chunks` with the small ones that say little alone merged (the cAST idea): a run of consecutive small
    chunks of code outside definitions (`MERGED_KINDS`) becomes one chunk, up to `max_lines`; a run still
    shorter than `SMALL_LINES` joins its next neighbour (a comment above a function belongs to it), or else
    its previous one, where the two span at most `max_lines`. Definitions stay chunks of their own, however
    short: merging runs of constants too cost benchmarks/code_retrieval.py 0.8 points of functions in the
    top 5 (25.7% against 26.5%, seed 7) and lifted plain BM25 by 3.4."""
    runs: list[Chunk] = []
    open_run = False  # runs[-1] is made of small chunks only, and may take the next
    for chunk in chunks:
        small = _mergeable(chunk)
        if open_run and small and chunk.end_line - runs[-1].start_line + 1 <= max_lines:
            last = runs[-1]
            runs[-1] = Chunk(chunk.path, last.start_line, chunk.end_line, "", "code", "",
                             "\n".join(lines[last.start_line - 1:chunk.end_line]))
        else:
            runs.append(chunk)
            open_run = small
    merged: list[Chunk] = []
    pending: Chunk | None = None  # a small run waiting for its next neighbour
    for chunk in runs:
        if pending is not None:
            if chunk.end_line - pending.start_line + 1 <= max_lines:
                chunk = _spanning(chunk, pending.start_line, chunk.end_line, lines)
            elif merged and pending.end_line - merged[-1].start_line + 1 <= max_lines:
                merged[-1] = _spanning(merged[-1], merged[-1].start_line, pending.end_line, lines)
            else:
                merged.append(pending)
            pending = None
        if _mergeable(chunk):
            pending = chunk
        else:
            merged.append(chunk)
    if pending is not None:
        if merged and pending.end_line - merged[-1].start_line + 1 <= max_lines:
            merged[-1] = _spanning(merged[-1], merged[-1].start_line, pending.end_line, lines)
        else:
            merged.append(pending)
    return merged


def _mergeable(chunk: Chunk) -> bool:
    return chunk.kind in MERGED_KINDS and chunk.end_line - chunk.start_line + 1 < SMALL_LINES


def _spanning(chunk: Chunk, start: int, end: int, lines: list[str]) -> Chunk:
    return Chunk(chunk.path, start, end, chunk.symbol, chunk.kind, chunk.signature, "\n".join(lines[start - 1:end]))


def text_chunks(path: str, lines: Sequence[str], size: int = TEXT_LINES) -> list[Chunk]:
    """Runs of at most `size` lines, trimmed of blank lines at both ends (blank runs left out)."""
    chunks = []
    for start in range(0, len(lines), size):
        first, last = start, min(start + size, len(lines)) - 1
        while first <= last and not lines[first].strip():
            first += 1
        while last >= first and not lines[last].strip():
            last -= 1
        if first <= last:
            chunks.append(Chunk(path, first + 1, last + 1, "", "text", "", "\n".join(lines[first:last + 1])))
    return chunks


class _Chunker:
    def __init__(self, path: str, lines: list[str], max_lines: int) -> None:
        self.path, self.lines, self.max_lines = path, lines, max_lines
        self.chunks: list[Chunk] = []

    def add(self, start: int, end: int, symbol: str, kind: str, signature: str) -> None:
        """Rows `start`..`end` (0-based, inclusive), trimmed of blank lines at both ends."""
        end = min(end, len(self.lines) - 1)
        while start <= end and not self.lines[start].strip():
            start += 1
        while end >= start and not self.lines[end].strip():
            end -= 1
        if start <= end:
            text = "\n".join(self.lines[start:end + 1])
            self.chunks.append(Chunk(self.path, start + 1, end + 1, symbol, kind, signature, text))

    def definition(self, definition: _Definition, scope: str) -> None:
        symbol = f"{scope}{definition.name}"
        kind = "method" if definition.kind == "function" and scope else definition.kind
        signature = self.lines[definition.node.start_point.row].strip() if self.lines else ""
        if definition.end - definition.start + 1 <= self.max_lines:
            self.add(definition.start, definition.end, symbol, kind, signature)
            return
        for child in definition.children:
            self.definition(child, f"{symbol}.")
        body = definition.node.child_by_field_name("body") or definition.node
        self.between(body, definition.children, symbol, kind, signature, first=definition.start, last=definition.end)

    def between(self, container: Node, nested: list[_Definition], symbol: str, kind: str, signature: str,
                first: int | None = None, last: int | None = None) -> None:
        """The rows of `container` (from `first` to `last`) outside the `nested` definitions, grouped at its
        children's boundaries into chunks of at most `max_lines` (a child longer than that alone is cut)."""
        taken = [(d.start, d.end) for d in nested]
        start = container.start_point.row if first is None else first
        end = _last_row(container) if last is None else last
        groups: list[tuple[int, int]] = []  # runs of rows outside the nested definitions
        row = start
        for a, b in sorted(taken):
            if a > row:
                groups.append((row, a - 1))
            row = max(row, b + 1)
        if row <= end:
            groups.append((row, end))
        cuts = sorted({child.start_point.row for child in container.named_children})
        for a, b in groups:
            self._split(a, b, [c for c in cuts if a < c <= b], symbol, kind, signature)

    def _split(self, start: int, end: int, cuts: list[int], symbol: str, kind: str, signature: str) -> None:
        """Rows `start`..`end` in pieces of at most `max_lines`, cut at `cuts` where one is close enough."""
        while end - start + 1 > self.max_lines:
            limit = start + self.max_lines - 1
            usable = [c for c in cuts if start < c <= limit + 1]
            cut = usable[-1] if usable else limit + 1
            self.add(start, cut - 1, symbol, kind, signature)
            start = cut
        self.add(start, end, symbol, kind, signature)


def _nest(definitions: list[_Definition]) -> list[_Definition]:
    """The definitions as a forest: each under the nearest one that contains it; the top-level ones."""
    ordered = sorted({(d.node.start_byte, -d.node.end_byte, d.name): d for d in definitions}.values(),
                     key=lambda d: (d.node.start_byte, -d.node.end_byte))
    top: list[_Definition] = []
    stack: list[_Definition] = []
    for definition in ordered:
        while stack and definition.node.start_byte >= stack[-1].node.end_byte:
            stack.pop()
        (stack[-1].children if stack else top).append(definition)
        stack.append(definition)
    return top


def _outer(node: Node) -> Node:
    """A definition with what belongs to it around it: C's function around the declarator the tags name,
    Python's decorators, an export statement."""
    parent = node.parent
    while parent is not None and (node.type.endswith("declarator")
                                  or parent.type in ("decorated_definition", "export_statement")):
        node, parent = parent, parent.parent
    return node


def _last_row(node: Node) -> int:
    """The last row with something of `node` on it (an end at column 0 is the row before)."""
    end = node.end_point
    return end.row - 1 if end.column == 0 and end.row > node.start_point.row else end.row


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


IMPORT_TYPES = ("import_statement", "import_from_statement", "import_declaration", "use_declaration",
                "preproc_include", "using_declaration")


def _imports(root: Node, lines: list[str]) -> str:
    """The file's top-level imports, as written (at most `MAX_IMPORT_LINES` lines)."""
    found = [lines[row] for child in root.named_children if child.type in IMPORT_TYPES
             for row in range(child.start_point.row, _last_row(child) + 1)]
    return "\n".join(found[:MAX_IMPORT_LINES])
