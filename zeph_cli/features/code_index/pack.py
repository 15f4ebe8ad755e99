"""Search hits as the body of `<code_context>`: what a model reads of the code a question found.

Invariant: pure (no I/O; the caller gives the token counter). The body never counts more than the budget
(the final text is counted, headers and fences included; a budget of 0 or less gives nothing). Each hit is
a header line, `path:start-end  kind symbol`, then its code fenced with its language, in rank order. Whole
chunks go in first, best ranked first; one that does not fit is passed over and smaller ones after it may
still go in. Then, if room remains, the best ranked chunk passed over goes in cut: its first lines, ended at
a line boundary, its header saying how many lines were left out. The hits packed are returned in the order
shown, a cut one with its shown lines (`end_line` and `text`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from .languages import language_of
from .search import Hit

SEPARATOR = "\n\n"
MIN_CUT_LINES = 3  # a cut chunk shows at least this many lines (fewer say too little to be worth a header)


@dataclass(frozen=True)
class Packed:
    text: str
    hits: tuple[Hit, ...]  # as shown, in order (a cut one with the lines shown)
    tokens: int  # of `text`, by the counter given


def render(hit: Hit, left_out: int = 0) -> str:
    """One hit: its header line and its code, fenced with its language (a longer fence if the code has one)."""
    name = f"{hit.kind} {hit.symbol}" if hit.symbol else ""
    header = f"{hit.path}:{hit.start_line}-{hit.end_line}" + (f"  {name}" if name else "")
    if left_out:
        header += f"  (cut: {left_out} more line{'s' if left_out != 1 else ''} to line {hit.end_line + left_out})"
    fence = "```"
    while fence in hit.text:
        fence += "`"
    return f"{header}\n{fence}{language_of(hit.path) or ''}\n{hit.text}\n{fence}"


def head(hit: Hit, lines: int) -> Hit:
    """`hit` cut to its first `lines` lines."""
    kept = hit.text.split("\n")[:lines]
    return replace(hit, text="\n".join(kept), end_line=hit.start_line + len(kept) - 1)


def pack(hits: Sequence[Hit], budget_tokens: int, count_tokens: Callable[[str], int]) -> Packed:
    """The hits that fit `budget_tokens`, rendered: whole ones in rank order, then the head of the best
    ranked one that did not fit, if at least `MIN_CUT_LINES` of its lines do."""
    if budget_tokens <= 0 or not hits:
        return Packed("", (), 0)
    shown: list[tuple[int, Hit, str]] = []  # (rank, hit as shown, its block)

    def text_with(extra: tuple[int, Hit, str] | None = None) -> str:
        blocks = sorted([*shown, *([extra] if extra else [])], key=lambda item: item[0])
        return SEPARATOR.join(block for _, _, block in blocks)

    passed_over: list[int] = []
    used = 0
    for rank, hit in enumerate(hits):
        block = render(hit)
        cost = count_tokens(block) + (count_tokens(SEPARATOR) if shown else 0)
        if used + cost <= budget_tokens and count_tokens(text_with((rank, hit, block))) <= budget_tokens:
            shown.append((rank, hit, block))
            used = count_tokens(text_with())
        else:
            passed_over.append(rank)
    if passed_over:
        rank = passed_over[0]
        hit = hits[rank]
        total = hit.text.count("\n") + 1
        low, high, best = MIN_CUT_LINES, total - 1, 0  # the most lines whose block fits
        while low <= high:
            middle = (low + high) // 2
            cut = head(hit, middle)
            if count_tokens(text_with((rank, cut, render(cut, total - middle)))) <= budget_tokens:
                best, low = middle, middle + 1
            else:
                high = middle - 1
        if best:
            cut = head(hit, best)
            shown.append((rank, cut, render(cut, total - best)))
    shown.sort(key=lambda item: item[0])
    text = text_with()
    return Packed(text, tuple(hit for _, hit, _ in shown), count_tokens(text))
