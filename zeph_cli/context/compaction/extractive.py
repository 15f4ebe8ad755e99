"""Extractive summaries: the sentences worth keeping, chosen without an LLM, within a token cap.

Invariant: pure and infallible; the result never exceeds `cap_tokens` by the
tokenizer given, keeps sentences in their original order, and prefers
sentences carrying identifiers, paths, numbers and decisions — what a later
turn cannot guess. Used when the summarizer is down (after the spec's metadata lines; the
summary is made again from its originals once the summarizer answers) and to cut an
over-long summary to its slot.
"""

from __future__ import annotations

import re

from ...messages import TextPart, ToolResultPart
from ...tokens import TokenCounter
from ..assembler import HistoryItem
from .fallback import METADATA_HEADER, metadata_summary
from .markers import SUMMARY_MARKER, is_compaction_summary

KEPT_LINES = "Kept sentences (extractive, provisional):"  # summarized again once the summarizer answers
SENTENCE_CHARS = 300  # one kept sentence is cut at this length
PREVIEWS_FROM_TOKENS = 400  # smaller slots leave out the metadata summary's last-message previews

# Codes a later turn cannot guess: FACT-AB12, ERR_42, PROJ-7, ABC123, commit hashes.
_CODE = re.compile(
    r"\b(?=[A-Z0-9_-]*\d)(?=[A-Z0-9_-]*[A-Z])[A-Z0-9][A-Z0-9_-]{3,}\b|\b[A-Z]{2,}[-_][A-Z0-9][A-Z0-9_-]*\b|\b[0-9a-f]{7,40}\b"
)
_NAME = re.compile(r"\b[a-z]+(?:_[a-z0-9]+)+\b|\b[a-z]+(?:[A-Z][a-z0-9]+)+\b")  # snake_case, camelCase
_PATH = re.compile(r"(?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.(?:py|js|ts|tsx|rs|go|md|toml|json|ya?ml|txt|c|h|cpp|java|sh|sql|cfg|ini)\b")
_NUMBER = re.compile(r"\d")
_DECISION = re.compile(
    r"\b(decid\w*|chose|choose|agreed|must|never|always|use|using|fix\w*|error\w*|fail\w*|todo|next|plan\w*|because)\b",
    re.IGNORECASE,
)
_MEMO = re.compile(r"\b(remember|don'?t forget|do not forget|important|note that|keep in mind)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\[\(\"'`])")
_CLAUSE_END = re.compile(r"(?<=[:;,])\s+")
LONG_SENTENCE_CHARS = 100  # longer sentences keep only their clauses worth keeping
_HEADERS = (SUMMARY_MARKER, METADATA_HEADER, KEPT_LINES, "Messages compacted:", "Last user message:", "Last assistant message:")


def score(sentence: str) -> int:
    """How much a later turn would miss this sentence: codes and what the user asked to keep most."""
    return (
        5 * bool(_CODE.search(sentence))
        + 3 * bool(_MEMO.search(sentence))
        + 2 * bool(_PATH.search(sentence))
        + 2 * bool(_NAME.search(sentence))
        + bool(_NUMBER.search(sentence))
        + bool(_DECISION.search(sentence))
    )


def _tighten(sentence: str) -> str:
    """A long sentence without its clauses that carry nothing worth keeping."""
    if len(sentence) <= LONG_SENTENCE_CHARS:
        return sentence
    clauses = _CLAUSE_END.split(sentence)
    best = max(score(c) for c in clauses)
    kept = [c for c in clauses if score(c) > 0 and 2 * score(c) >= best]  # the clauses that carry the sentence
    return "… " + " ".join(kept) if kept and len(kept) < len(clauses) else sentence


def _sentences(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        line = line.strip().lstrip("-*• ").strip()
        if not line or line.startswith(_HEADERS):
            continue
        out.extend(_tighten(s.strip())[:SENTENCE_CHARS] for s in _SENTENCE_END.split(line) if s.strip())
    return out


def _candidates(items: list[HistoryItem]) -> list[tuple[str, int]]:
    """(sentence, bonus) in history order; earlier summaries' sentences are carried forward as they are."""
    out: list[tuple[str, int]] = []
    for item in items:
        message = item.message
        if is_compaction_summary(item):
            out.extend((s, 1) for s in _sentences(message.content))
            continue
        label = {"user": "user", "assistant": "assistant", "tool": "tool"}.get(message.role, message.role)
        text = "\n".join(p.text for p in message.parts if isinstance(p, TextPart))
        bonus = 1 if message.role == "user" else 0
        out.extend((f"{label}: {s}", bonus) for s in _sentences(text))
        for part in message.parts:  # tool output: only its most telling lines compete, at a discount
            if isinstance(part, ToolResultPart):
                out.extend((f"tool {part.name or ''}: {s}".replace("  ", " "), -2) for s in _sentences(part.content)[:40])
    return out


def pick(
    candidates: list[tuple[str, int]], budget_tokens: int, counter: TokenCounter, *, fill: bool = False
) -> list[str]:
    """The best-scoring distinct sentences that fit `budget_tokens`, in their original order;
    with `fill`, sentences that score nothing fill what room is left (newest first)."""
    seen: set[str] = set()
    ranked = []
    for index, (sentence, bonus) in enumerate(candidates):
        key = sentence.split(": ", 1)[-1].lower()
        if key in seen:
            continue
        seen.add(key)
        ranked.append((score(sentence) + bonus, index, sentence))
    ranked.sort(key=lambda r: (-r[0], len(r[2]), -r[1]))  # best first; among equals the shortest, then the newest
    chosen: list[tuple[int, str]] = []
    used = 0
    for points, index, sentence in ranked:
        if points <= 0 and not fill:
            break
        cost = counter.count(f"- {sentence}\n")
        if used + cost > budget_tokens:
            continue
        chosen.append((index, sentence))
        used += cost
    return [sentence for _, sentence in sorted(chosen)]


def extractive_summary(items: list[HistoryItem], cap_tokens: int, counter: TokenCounter) -> str:
    """The spec's metadata summary of `items` (body, without the "[compaction summary]" line), followed
    by the sentences most worth keeping; within `cap_tokens` once that line is added, and never larger
    than half of what it replaces."""
    cap = min(cap_tokens, max(sum(i.tokens for i in items) // 2, 64))
    lines = metadata_summary(items).splitlines()
    if cap < PREVIEWS_FROM_TOKENS:  # a small slot: the sentences matter more than the last-message previews
        lines = lines[:2]
    head = "\n".join([*lines, KEPT_LINES])
    room = cap - counter.count(f"{SUMMARY_MARKER}\n{head}\n") - 4
    if room <= 0:
        return metadata_summary(items)
    lines = pick(_candidates(items), room, counter)
    return head + "".join(f"\n- {line}" for line in lines)


def cut_summary(text: str, cap_tokens: int, counter: TokenCounter) -> str:
    """An over-long summary body cut to `cap_tokens` by keeping its most telling sentences."""
    if counter.count(text) <= cap_tokens:
        return text
    lines = pick([(s, 0) for s in _sentences(text)], cap_tokens - 4, counter, fill=True)
    return "\n".join(f"- {line}" for line in lines)

