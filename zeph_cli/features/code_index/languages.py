"""The languages the code index parses, each from its official tree-sitter grammar wheel.

Invariant: a grammar comes only from its installed wheel (the compiled grammar and the `TAGS_QUERY`
its authors ship), never downloaded; a language whose wheel is missing or fails to load is not
parsed (its files are indexed as text) and `load` says why once. Grammars load on first use.
"""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import PurePath
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from tree_sitter import Language, Query


class LanguageSpec(NamedTuple):
    name: str
    module: str  # the grammar wheel's module
    function: str = "language"  # the module's function that gives the compiled grammar
    tags: bool = True  # tags are read (the wheel's TAGS_QUERY, and `EXTRA_TAGS`)


SPECS: dict[str, LanguageSpec] = {spec.name: spec for spec in (
    LanguageSpec("python", "tree_sitter_python"),
    LanguageSpec("javascript", "tree_sitter_javascript"),
    LanguageSpec("typescript", "tree_sitter_typescript", "language_typescript"),
    LanguageSpec("tsx", "tree_sitter_typescript", "language_tsx"),
    LanguageSpec("rust", "tree_sitter_rust"),
    LanguageSpec("go", "tree_sitter_go"),
    LanguageSpec("java", "tree_sitter_java"),
    LanguageSpec("c", "tree_sitter_c"),
    LanguageSpec("cpp", "tree_sitter_cpp"),
    LanguageSpec("ruby", "tree_sitter_ruby"),
    LanguageSpec("bash", "tree_sitter_bash"),
)}

EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".rs": "rust", ".go": "go", ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hh": "cpp", ".hpp": "cpp", ".hxx": "cpp",
    ".rb": "ruby", ".sh": "bash", ".bash": "bash",
}


def language_of(path: str | PurePath) -> str | None:
    """The language a file is parsed as, by its extension; None: indexed as text."""
    return EXTENSIONS.get(PurePath(path).suffix.lower())


class Grammar(NamedTuple):
    language: Language
    tags: Query | None  # definitions (`definition.*` with `name`) and references (`reference.*`)


@cache
def load(name: str) -> Grammar | None:
    """The grammar and tags query of language `name`, or None when its wheel cannot be loaded."""
    from tree_sitter import Language, Query

    spec = SPECS[name]
    try:
        module = importlib.import_module(spec.module)
        language = Language(getattr(module, spec.function)())
        tags = Query(language, _tags_source(module, name)) if spec.tags else None
    except Exception:  # noqa: BLE001 — a missing or broken grammar means text chunks, not a failure
        return None
    return Grammar(language, tags)


# Definitions the shipped tags leave out that a chunk should follow: Rust's impl blocks (their methods are
# qualified by the type), bash's functions (its wheel ships no tags).
EXTRA_TAGS = {
    "rust": "(impl_item type: (_) @name) @definition.impl",
    "bash": "(function_definition name: (word) @name) @definition.function",
}


def _tags_source(module: object, name: str) -> str:
    source = str(getattr(module, "TAGS_QUERY", ""))
    if name in ("typescript", "tsx"):  # the TypeScript wheel's tags add to JavaScript's, as its authors use them
        source = str(importlib.import_module("tree_sitter_javascript").TAGS_QUERY) + "\n" + source
    return source + "\n" + EXTRA_TAGS.get(name, "")
