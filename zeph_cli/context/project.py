"""The `<project_context>` block from ZEPH.md files, within a token cap.

Invariant: pure; given the files in spec order (global first, then ancestors
from the filesystem root down to the working directory), it renders them in
that order. When they exceed the cap, the files nearest the working directory
keep their text first, and every cut is announced in the block itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..tokens import TokenCounter


@dataclass(frozen=True)
class ProjectFile:
    """A project-context file (ZEPH.md and its kin) and its text."""
    path: str
    text: str


@dataclass(frozen=True)
class ProjectContext:
    """The <project_context> block and the files it came from."""
    text: str  # "" when there is nothing to inject
    files: tuple[str, ...]
    truncated: tuple[str, ...]
    tokens_before_cap: int


def _cut_to_tokens(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """The longest prefix of `text` (on a line boundary when possible) within `max_tokens`."""
    if max_tokens <= 0:
        return ""
    lo, hi = 0, len(text)
    while lo < hi:  # binary search on characters: counts grow monotonically with prefix length
        mid = (lo + hi + 1) // 2
        if counter.count(text[:mid]) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    cut = text[:lo]
    newline = cut.rfind("\n")
    return cut[:newline] if newline > len(cut) // 2 else cut


def render_project_context(files: list[ProjectFile], max_tokens: int, counter: TokenCounter) -> ProjectContext:
    files = [f for f in files if f.text.strip()]
    if not files:
        return ProjectContext("", (), (), 0)
    bodies = {f.path: f.text.strip() for f in files}
    sizes = {path: counter.count(body) for path, body in bodies.items()}
    total = sum(sizes.values())
    truncated: list[str] = []
    if max_tokens and total > max_tokens:
        remaining = max_tokens
        for f in reversed(files):  # nearest the working directory first
            size = sizes[f.path]
            if size <= remaining:
                remaining -= size
                continue
            kept = _cut_to_tokens(bodies[f.path], remaining, counter)
            remaining = max(remaining - counter.count(kept), 0)
            truncated.append(f.path)
            shown = f"{len(kept):,} of {len(bodies[f.path]):,} characters" if kept else "omitted"
            bodies[f.path] = (
                kept + f"\n[truncated: {shown} of {f.path} kept; project context is capped at {max_tokens:,} tokens]"
            ).strip()
    sections = [f"<!-- {f.path} -->\n{bodies[f.path]}" for f in files]
    text = "<project_context>\n" + "\n\n".join(sections) + "\n</project_context>"
    return ProjectContext(text, tuple(f.path for f in files), tuple(reversed(truncated)), total)
