"""The words of code and of questions about it, for keyword retrieval: identifiers split the way people
name things.

Invariant: pure. A text's words are its runs of letters and digits, lower-cased; an identifier also gives
its parts (`snake_case` → snake, case; `camelCase` and `HTTPServer` → camel, case, http, server), so a
question in plain words finds the identifier and the identifier finds itself; a path gives its folders,
name and extension the same way. Words of one letter and common English words are left out.
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
