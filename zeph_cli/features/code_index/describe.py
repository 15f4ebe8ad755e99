"""The code index's state in words, for `zeph index status` and `/index`.

Invariant: pure (a status in, lines out).
"""

from __future__ import annotations

from typing import Any


def status_lines(root: str, status: Any) -> list[str]:
    """The index's state in a few lines: counts, when built, languages, vectors per model."""
    built = f"; built {status.indexed_at}" if status.indexed_at else "; not completely built (zeph index goes on)"
    lines = [f"{root}: {status.files:,} files, {status.chunks:,} chunks, {status.tags:,} tags{built}"]
    languages = sorted(status.languages.items(), key=lambda item: (-item[1], item[0]))
    lines.append("  languages: " + ", ".join(f"{name or 'text'} {n:,}" for name, n in languages))
    if not any(status.embedded.values()):
        lines.append("  vectors: none yet (search goes by words; zeph index embeds the chunks)")
    for model, n in status.embedded.items():
        rest = "" if n >= status.chunks else " (zeph index embeds the rest)"
        lines.append(f"  vectors: {n:,} of {status.chunks:,} chunks with {model}{rest}")
    return lines
