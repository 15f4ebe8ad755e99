"""A prompt-injection scan of text zeph passes on to the model but did not write: skill files, MCP
tools' descriptions and schemas.

Invariant: pure; returns the names of the patterns found (empty = nothing
suspicious), each at most once, in the order of `PATTERNS`. It flags, it never
edits: what to do with a flagged text is the caller's (a flagged skill stays
readable on demand but is never matched on its own; a flagged MCP tool's
description is withheld).
"""

from __future__ import annotations

import re

_FLAGS = re.IGNORECASE | re.DOTALL

PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ignore previous instructions",
     re.compile(r"\b(ignore|forget|override)\s+(all\s+|any\s+|the\s+)?(previous|prior|above|earlier|preceding)\s+"
                r"(instructions|rules|directions|prompts?|messages)", _FLAGS)),
    ("disregard instructions",
     re.compile(r"\bdisregard\s+(all\s+|any\s+|the\s+|your\s+)?(previous\s+|prior\s+|above\s+|system\s+)?"
                r"(instructions|rules|guidelines|prompts?|safety)", _FLAGS)),
    ("you are now", re.compile(r"\byou\s+are\s+now\b", _FLAGS)),
    ("system prompt", re.compile(r"\bsystem\s+prompt\b", _FLAGS)),
    ("new instructions", re.compile(r"\bnew\s+(system\s+)?instructions\s*:", _FLAGS)),
    ("keep it from the user",
     re.compile(r"\b(do\s+not|don't|never)\s+(tell|inform|mention\s+(this\s+)?to|show|reveal\s+(this\s+)?to)\s+the\s+user\b",
                _FLAGS)),
    ("hidden instruction in an HTML comment",
     re.compile(r"<!--(?:(?!-->).)*\b(ignore|instructions?|you\s+must|assistant|system|execute|run)\b(?:(?!-->).)*-->",
                _FLAGS)),
    ("zero-width or bidi characters", re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")),
    ("base64 blob", re.compile(r"[A-Za-z0-9+/]{120,}={0,2}")),
    ("download piped to a shell",
     re.compile(r"\b(curl|wget)\b[^\n|]*\|\s*(sudo\s+)?(ba|z|da)?sh\b", _FLAGS)),
    ("sends data out",
     re.compile(r"\b(curl|wget)\b[^\n]*(-d\s|--data|--upload-file|-T\s|-F\s)[^\n]*(\$\(|`|@|~/|\.ssh|\.env|token|secret|key)",
                _FLAGS)),
)


def scan(text: str) -> tuple[str, ...]:
    """The names of the injection patterns `text` matches."""
    return tuple(name for name, pattern in PATTERNS if pattern.search(text))
