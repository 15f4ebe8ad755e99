"""The words of code and of questions about it, for keyword retrieval: identifiers split the way people
name things.

Invariant: pure. A text's words are its runs of letters and digits, lower-cased; an identifier also gives
its parts (`snake_case` → snake, case; `camelCase` and `HTTPServer` → camel, case, http, server), so a
question in plain words finds the identifier and the identifier finds itself; a path gives its folders,
name and extension the same way. Words of one letter and common English words are left out. A text's
names written as code (`code_names`) are what it spells only as code: snake_case, camelCase, dotted names,
calls, paths, names in backticks.
"""

from __future__ import annotations

import re

_RUN = re.compile(r"[A-Za-z0-9_]+")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z]|[0-9]|\b|_)|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
STOPWORDS = frozenset(
    """a an the and or but if then else of to in on at by for with from into as is are was were be been it its this
    that these those there here not no so than when where which who what how all any each every can could should
    would will may might must do does did has have had""".split()
)


def words(text: str) -> list[str]:
    """The text's words, in order, with each identifier's parts after it (repeats kept: BM25 counts them)."""
    out: list[str] = []
    for run in _RUN.findall(text):
        whole = run.strip("_").lower()
        parts = [p.lower() for p in _PART.findall(run)]
        if len(whole) > 1 and whole not in STOPWORDS:
            out.append(whole)
        if len(parts) > 1 or (parts and parts[0] != whole):
            out += [p for p in parts if len(p) > 1 and p not in STOPWORDS]
    return out


# A name people write only for code: snake_case (or _private, CONSTANT_CASE), camelCase, PascalCase with two
# humps (CodeStore, HTTPServer), a dotted name (store.lexical, os.path), a call (run(), load(path)), a path
# (src/main.rs, ./x), or a name in backticks.
_SNAKE = r"\b_*[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]*\b|\b_[A-Za-z][A-Za-z0-9]+\b"
_CAMEL = r"\b[a-z]+[A-Z][A-Za-z0-9]*\b|\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b|\b[A-Z]{2,}[a-z][A-Za-z0-9]*\b"
_DOTTED = r"\b[A-Za-z_][A-Za-z0-9_]+(?:\.[A-Za-z_][A-Za-z0-9_]*)+\b"
_CALL = r"\b[A-Za-z_][A-Za-z0-9_.]*\((?=[^()]{0,40}\))"
_PATH = r"(?:\.{0,2}/)?(?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_.-]+"
_TICKED = r"`[^`\s]+`"
_CODE = re.compile("|".join(f"(?:{p})" for p in (_TICKED, _PATH, _CALL, _DOTTED, _SNAKE, _CAMEL)))
# A dotted "name" that is prose: abbreviations and version-like words.
_PROSE_DOTTED = frozenset({"e.g", "i.e", "etc", "vs", "a.k.a", "cf"})


def code_names(query: str) -> list[str]:
    """The names in `query` written as code, as written (backticks, a call's parentheses and a leading ./
    dropped), in order, each once."""
    found: list[str] = []
    for match in _CODE.finditer(query):
        name = match.group().strip("`").rstrip("(").removeprefix("./").strip(".")
        if len(name) > 1 and name.lower() not in _PROSE_DOTTED and name not in found:
            found.append(name)
    return found
