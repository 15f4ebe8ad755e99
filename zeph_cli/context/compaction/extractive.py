"""Extractive summaries: the lines and sentences worth keeping, chosen without an LLM, within a token cap.

Invariant: pure and infallible; the result never exceeds `cap_tokens` by the tokenizer given and keeps
what it keeps in its original order. Text is cut into units on lines, and a line into its sentences; text
repeated across the range goes first, and units that carry codes, key = value pairs, identifiers, paths,
numbers and words rare in the range — what a later turn cannot guess — are kept first (informative.py).
Used when the summarizer is down (after the spec's metadata lines; the summary is made again from its
originals once the summarizer answers) and to cut an over-long summary to its slot, where the least
informative lines go first and a last line says how much was cut and where the originals are.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ...messages import TextPart, ToolResultPart
from ...tokens import TokenCounter
from ..assembler import HistoryItem
from .fallback import METADATA_HEADER, metadata_summary
from .informative import (
    CARRIED_HEADER,
    base_score,
    choose,
    is_heading,
    others_room,
    scores,
    split_label,
    states_fact,
    strip_repeated,
)
from .markers import SUMMARY_MARKER, is_compaction_summary

KEPT_LINES = "Kept sentences (extractive, provisional):"  # summarized again once the summarizer answers
SENTENCE_CHARS = 300  # one kept sentence of a message is cut at this length
TIGHTEN_CHARS = 4 * SENTENCE_CHARS  # what of a sentence is read to choose its clauses before that cut
LONG_LINE_CHARS = 300  # a summary line longer than this is cut into its sentences
PREVIEWS_FROM_TOKENS = 400  # smaller slots leave out the metadata summary's last-message previews
SCROLL_BACK = "the originals stay in the user's scroll-back (zeph sessions show)"
CUT_NOTE = "[cut to fit the summary's slot:"  # the first words of the line that says what a cut left out

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\[\(\"'`])")
_CLAUSE_END = re.compile(r"(?<=[:;,])\s+")
LONG_SENTENCE_CHARS = 100  # longer sentences keep only their clauses worth keeping
# Lines compaction writes itself, not content: never kept as a sentence or carried as a fact.
NOT_CONTENT = (SUMMARY_MARKER, METADATA_HEADER, KEPT_LINES, CUT_NOTE, CARRIED_HEADER, "Messages compacted:",
               "Last user message:", "Last assistant message:")


def score(sentence: str) -> int:
    """What a sentence carries on its own (informative.base_score)."""
    return base_score(sentence)


def _tighten(sentence: str) -> str:
    """A long sentence without its clauses that carry nothing worth keeping."""
    if len(sentence) <= LONG_SENTENCE_CHARS:
        return sentence
    clauses = _CLAUSE_END.split(sentence)
    best = max(score(c) for c in clauses)
    kept = [c for c in clauses if score(c) > 0 and 2 * score(c) >= best]  # the clauses that carry the sentence
    return "… " + " ".join(kept) if kept and len(kept) < len(clauses) else sentence


def _units(text: str) -> list[str]:
    """The units of a message: its lines, and each line's sentences; list markers and the lines compaction
    writes itself are left out."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip().lstrip("-*• ").strip()
        if not line or line.startswith(NOT_CONTENT):
            continue
        out.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
    return out


def _candidates(items: list[HistoryItem]) -> list[tuple[str, int, int]]:
    """(unit, source, bonus) in history order, the source being the message's place in `items`: text an
    earlier message said already left out, a long sentence tightened to its telling clauses and cut at
    SENTENCE_CHARS. Earlier summaries' lines are carried forward as they are, at a small bonus."""
    out: list[tuple[str, int, int]] = []
    for source, item in enumerate(items):
        message = item.message
        if is_compaction_summary(item):
            out.extend((s, source, 1) for s in _units(message.content))
            continue
        label = {"user": "user", "assistant": "assistant", "tool": "tool"}.get(message.role, message.role)
        text = "\n".join(p.text for p in message.parts if isinstance(p, TextPart))
        bonus = 1 if message.role == "user" else 0
        out.extend((f"{label}: {s}", source, bonus) for s in _units(text))
        for part in message.parts:  # tool output: only its most telling lines compete, at a discount
            if isinstance(part, ToolResultPart):
                name = f"tool {part.name}" if part.name else "tool"
                out.extend((f"{name}: {s}", source, -2) for s in _units(part.content)[:40])
    kept = strip_repeated([(unit, source) for unit, source, _ in out])
    return [(_shorten(text), source, bonus) for text, (_, source, bonus) in zip(kept, out) if text]


def _shorten(unit: str) -> str:
    """A unit tightened to its telling clauses and cut at SENTENCE_CHARS, its speaker label kept; only its
    first TIGHTEN_CHARS are read (a 15,000-character token is not scored clause by clause)."""
    label, text = split_label(unit)
    return label + _tighten(text[:TIGHTEN_CHARS])[:SENTENCE_CHARS]


def pick(
    candidates: list[tuple[str, int, int]],
    budget_tokens: int,
    counter: TokenCounter,
    *,
    fill: bool = False,
    others_tokens: int | None = None,
) -> list[str]:
    """The most informative distinct (unit, source, bonus) candidates that fit `budget_tokens` as `- unit`
    lines, in their original order; with `fill`, units that score nothing fill what room is left. Units
    that state no fact (a tool output's lines never do) share `others_tokens` with those that do."""
    chosen = choose(candidates, budget_tokens, lambda unit: counter.count(f"- {unit}\n"), fill=fill,
                    facts=_stated_fact, others_budget=others_tokens)
    return [candidates[index][0] for index in chosen]


def _stated_fact(unit: str) -> bool:
    return not unit.startswith("tool") and states_fact(unit)


def extractive_summary(
    items: list[HistoryItem], cap_tokens: int, counter: TokenCounter, *, others_tokens: int | None = None
) -> str:
    """The spec's metadata summary of `items` (body, without the "[compaction summary]" line), followed
    by the units most worth keeping and how many of them were left out; within `cap_tokens` once that line
    is added, and never larger than half of what it replaces. Units that state no fact share `others_tokens`
    (the slot's floor) with those that do: the room above it is for facts."""
    cap = min(cap_tokens, max(sum(i.tokens for i in items) // 2, 64))
    lines = metadata_summary(items).splitlines()
    if cap < PREVIEWS_FROM_TOKENS:  # a small slot: the units matter more than the last-message previews
        lines = lines[:2]
    candidates = _candidates(items)

    def head(kept: int) -> str:
        return "\n".join([*lines, f"{KEPT_LINES} {kept} of {len(candidates)}; {SCROLL_BACK}"])

    spent = counter.count(f"{SUMMARY_MARKER}\n{head(len(candidates))}\n") + 4
    room = cap - spent
    if room <= 0:
        return metadata_summary(items)
    kept = pick(candidates, room, counter, others_tokens=None if others_tokens is None else others_tokens - spent)
    return head(len(kept)) + "".join(f"\n- {line}" for line in kept)


def cut_note(lines_cut: int, lines: int, tokens_cut: int, *, short: bool = False) -> str:
    """The last line of a cut summary: how much went, and where the originals are."""
    if short:
        return f"{CUT_NOTE} {lines_cut} of {lines} lines left out]"
    return (f"{CUT_NOTE} {lines_cut} of {lines} lines ({tokens_cut:,} tokens) left out, the least "
            f"informative first; {SCROLL_BACK}]")


def _summary_units(text: str) -> list[str]:
    """A summary's lines as they are (headings included), a line longer than LONG_LINE_CHARS as its
    sentences; blank lines and an earlier cut's note left out."""
    out = []
    for line in text.splitlines():
        line = line.rstrip()
        if not line.strip() or line.strip().startswith(CUT_NOTE):
            continue
        if len(line) <= LONG_LINE_CHARS or is_heading(line):
            out.append(line)
        else:
            out.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
    return out


def cut_summary(
    text: str,
    cap_tokens: int,
    counter: TokenCounter,
    *,
    facts: Callable[[str], bool] = lambda line: True,
    others_tokens: int | None = None,
) -> str:
    """A summary body within `cap_tokens`: its lines kept as they are and in their order, the least
    informative left out first (repeated text, filler, lines without codes, numbers, identifiers, paths,
    key = value pairs or rare words), headings kept over what is kept under them, and a last line saying how
    much was cut. With `others_tokens` (the slot's floor), the room above it is for the lines that carry
    something (`informative.scores` above 0) and that `facts` accepts (the caller leaves out, say, text
    copied from tool outputs that can be read again); the other lines, the headings and the note share the
    floor with them (`informative.others_room`). A body within both limits comes back as it is."""
    units = _summary_units(text)
    content_points = scores([(unit, n) for n, unit in enumerate(units)])
    telling = {unit for unit, points in zip(units, content_points)
               if points > 0 and not is_heading(unit) and facts(unit)}
    eligible = telling.__contains__
    within = counter.count(text) <= cap_tokens
    if within and others_tokens is not None:
        costs = [(counter.count(unit) + 1, not eligible(unit)) for unit in units]
        fact_tokens = sum(cost for cost, other in costs if not other)
        within = sum(cost for cost, other in costs if other) <= others_room(others_tokens, fact_tokens)
    if within:
        return text
    headings = {n for n, unit in enumerate(units) if is_heading(unit)}
    content = [n for n in range(len(units)) if n not in headings]
    whole = counter.count(text)
    widest = (len(content), len(content), whole)  # no figure of the note is larger than these
    short = counter.count(cut_note(*widest)) > cap_tokens // 4
    note_cost = counter.count(cut_note(*widest, short=short)) + 1
    heading_cost = sum(counter.count(units[n]) + 1 for n in headings)
    if heading_cost > (cap_tokens - note_cost) // 4:  # headings that would crowd out their content go
        headings, heading_cost = set(), 0
    room = cap_tokens - note_cost - heading_cost
    others_floor = None if others_tokens is None else max(others_tokens - note_cost - heading_cost, 0)
    chosen = choose([(units[n], n, 0) for n in content], room, lambda unit: counter.count(unit) + 1, fill=True,
                    facts=eligible, others_budget=others_floor)
    kept = [content[index] for index in chosen]
    points = dict(zip(content, scores([(units[n], n) for n in content])))

    def render(kept: list[int]) -> str:
        keep = set(kept)
        out = []
        for n, unit in enumerate(units):
            if n in keep:
                out.append(unit)
            elif n in headings:
                after = next((m for m in sorted(headings) if m > n), len(units))
                if keep & set(range(n + 1, after)):
                    out.append(unit)
        body = "\n".join(out)
        note = cut_note(len(content) - len(kept), len(content), max(whole - counter.count(body), 0), short=short)
        return f"{body}\n{note}" if body else note

    result = render(kept)
    while kept and counter.count(result) > cap_tokens:  # per-line costs are an estimate: drop the weakest
        kept.remove(min(kept, key=lambda n: (points[n], -n)))
        result = render(kept)
    return result

