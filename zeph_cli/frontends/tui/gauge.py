"""The status bar's context gauge and last-turn usage, as plain strings.

Invariant: pure functions (no Textual, no I/O). The gauge compares the same
numbers as compaction (`ContextReport.context_tokens` over `.capacity`) and
uses the same strict "exceeds" rule, so its marks sit where compaction fires.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ...context.compaction.tiers import decide
from ...context.report import ContextReport
from ...messages import Usage
from ..render import human_tokens
from ..usage_estimate import shown_usage

Level = Literal["ok", "soft", "hard", "over"]

# Cells of the bar. A threshold mark takes the cell in which that threshold is
# crossed: over an empty cell it is a thin line (dotted for soft, solid for
# hard); once the fill covers it, a shaded block, so the fill stays one solid run.
FILLED = "█"
EMPTY = "░"
SOFT_MARK = "┊"
HARD_MARK = "│"
MARK_FILLED = "▓"


@dataclass(frozen=True)
class GaugeView:
    bar: str  # exactly `width` cells
    label: str  # "12.3k / 128k · 9%", or "12.3k · no budget"
    level: Level  # for styling: ok, soft (past the soft mark), hard (past the hard mark), over (past 100%)


def gauge(used: int, capacity: int, soft: float, hard: float, width: int = 20) -> GaugeView:
    """`used` tokens against `capacity` (0 = no budget) with marks at the `soft` and `hard` fractions.

    The fill rounds up, so any token shows a cell and a mark is covered as soon
    as usage passes the start of its cell: exactly when the threshold is passed
    whenever threshold × width is whole (0.60 and 0.90 at widths 10, 20, 40).
    The percentage rounds down, so "60%" never claims more than is used.
    """
    used, width = max(used, 0), max(width, 0)
    if capacity <= 0:
        return GaugeView(EMPTY * width, f"{human_tokens(used)} · no budget", "ok")
    filled = min(-(-used * width // capacity), width)  # ceil in integers: no float drift at the marks
    cells = [FILLED] * filled + [EMPTY] * (width - filled)
    for threshold, mark in ((soft, SOFT_MARK), (hard, HARD_MARK)):  # hard drawn last: it wins a shared cell
        index = _mark_index(threshold, width)
        if index is not None:
            cells[index] = MARK_FILLED if index < filled else mark
    level: Level = "over" if used > capacity else _tier_level(used, capacity, soft, hard)
    label = f"{human_tokens(used)} / {human_tokens(capacity)} · {used * 100 // capacity}%"
    return GaugeView("".join(cells), label, level)


def _mark_index(threshold: float, width: int) -> int | None:
    """The cell in which `threshold` is crossed (the last cell for 1.0 and above)."""
    if width == 0:
        return None
    return min(max(math.floor(threshold * width + 1e-9), 0), width - 1)  # 0.29 × 100 is 28.999…


def _tier_level(used: int, capacity: int, soft: float, hard: float) -> Level:
    tier = decide(used, capacity, soft, hard)
    return "ok" if tier == "none" else tier


def gauge_for(report: ContextReport, width: int = 20) -> GaugeView:
    """The gauge of a request: its whole context against the prompt's capacity, marks at its thresholds."""
    return gauge(report.context_tokens, report.capacity, report.soft_threshold, report.hard_threshold, width)


def usage_text(usage: Usage, request_tokens: int | None, output_estimate: int = 0) -> str:
    """Last turn's tokens: "in 1.2k · out 340", plus " · cache 900 read / 120 written" when reported.

    When the provider reported no prompt tokens, `request_tokens` (the request's
    own estimate) stands in as "in ~1.2k"; when it reported no output tokens,
    `output_estimate` (from the streamed text) stands in as "out ~340" (the
    rule of `shown_usage`); with nothing at all, the text is empty.
    """
    shown = shown_usage(usage, request_tokens, output_estimate)
    if not shown.input_tokens and not shown.output_tokens:
        return ""
    prompt = ("~" if shown.input_estimated else "") + human_tokens(shown.input_tokens) if shown.input_tokens else "?"
    output = ("~" if shown.output_estimated else "") + human_tokens(shown.output_tokens)
    text = f"in {prompt} · out {output}"
    if shown.cache_read_tokens or shown.cache_write_tokens:
        text += f" · cache {human_tokens(shown.cache_read_tokens)} read / {human_tokens(shown.cache_write_tokens)} written"
    return text
