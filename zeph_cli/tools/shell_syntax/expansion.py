"""Pure steps of word expansion on text with per-character flags: brace groups,
field splitting and leading `NAME=value` assignments.

Invariant: pure; flags are "0" unquoted, "1" quoted, "2" unknown until run time and
"3" from an unquoted known variable: only "0" braces expand, only "3" blanks split.
"""

from __future__ import annotations

import re

MAX_BRACE_OPENS = 64  # unmatched `{` in one word brace expansion tries before giving up

ASSIGNED_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]]*\])?\+?=")
_BRACE_CHARS = re.compile(r"[{},]")


class BracesTooComplex(Exception):
    """A brace expansion beyond its limits (unmatched `{`, words produced, work done)."""


def first_brace_group(text: str, flags: str) -> tuple[int, int, list[int]] | None:
    """The first unquoted `{a,b}` group as bash 5 finds it: (open, close, top-level commas).

    A `}` closing a group without a comma is literal and the search for the
    close goes on (`{a}b,c}` is `a}b` and `c`).
    """
    positions = [m.start() for m in _BRACE_CHARS.finditer(text) if flags[m.start()] == "0"]
    tried = 0
    for index, opened in enumerate(positions):
        if text[opened] != "{":
            continue
        tried += 1
        if tried > MAX_BRACE_OPENS:
            raise BracesTooComplex
        level = 0
        commas: list[int] = []
        for at in positions[index + 1:]:
            char = text[at]
            if char == "{":
                level += 1
            elif char == "}":
                if level:
                    level -= 1
                elif commas:
                    return opened, at, commas
            elif level == 0:
                commas.append(at)
    return None


def split_fields(text: str, flags: str, quoted: bool, ifs: str = " \t\n") -> list[str]:
    """Fields of an expanded word: only characters of known unquoted variables split, on `ifs`."""
    if "3" not in flags:
        return [text] if text or quoted else []
    fields: list[str] = []
    current: list[str] = []
    for char, flag in zip(text, flags):
        if flag == "3" and char in ifs:
            if current:
                fields.append("".join(current))
                current = []
        else:
            current.append(char)
    if current:
        fields.append("".join(current))
    return fields


def split_assignments(words: list) -> tuple[list[tuple[str, list]], list]:
    """Leading `NAME=value` words (as name and value parts), then the command's words."""
    assignments: list[tuple[str, list]] = []
    for index, word in enumerate(words):
        first = word.parts[0] if word.parts else None
        if first is None or first[0] != "lit" or first[2]:
            return assignments, words[index:]
        match = ASSIGNED_NAME.match(first[1])
        if not match:
            return assignments, words[index:]
        rest = first[1][match.end():]
        assignments.append((match.group(1), [("lit", rest, False), *word.parts[1:]]))
    return assignments, []
