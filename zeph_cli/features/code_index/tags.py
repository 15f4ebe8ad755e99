"""A file's tags: the names it defines and the names it uses, from its grammar's tags query — what the repo
map's graph of files is made of.

Invariant: pure (the caller reads the file); one tag per name, role and line, in line order; a match that
both defines and uses a name is a definition; a file whose language is not parsed has no tags.
"""

from __future__ import annotations

from typing import NamedTuple

from .languages import language_of, load


class Tag(NamedTuple):
    path: str
    name: str
    role: str  # "def" | "ref"
    kind: str  # the tags' kind: "function", "class", "call", "type", …
    line: int  # 1-based, of the name


def tags_of(path: str, text: str) -> list[Tag]:
    name = language_of(path)
    grammar = load(name) if name is not None else None
    if grammar is None or grammar.tags is None:
        return []
    from tree_sitter import Parser, QueryCursor

    root = Parser(grammar.language).parse(text.encode("utf-8", "surrogatepass")).root_node
    found: dict[tuple[str, str, int], Tag] = {}
    for _, captures in QueryCursor(grammar.tags).matches(root):
        names = captures.get("name")
        roles = sorted(key for key in captures if key.startswith(("definition.", "reference.")))
        if not names or not roles:
            continue
        role, kind = roles[0].split(".", 1)  # "definition…" sorts before "reference…"
        node = names[0]
        tag = Tag(path, (node.text or b"").decode("utf-8", "replace"), "def" if role == "definition" else "ref",
                  kind, node.start_point.row + 1)
        found.setdefault((tag.name, tag.role, tag.line), tag)
    return sorted(found.values(), key=lambda t: (t.line, t.role, t.name))
