"""Progressive middle-out tool-response removal, for summarization prompts that do not fit.

Invariant: pure; removal starts at the center of the tool-response list and
alternates outward, so the earliest and the latest responses survive longest;
a removed response keeps its tool_call_id and reads "[compacted]" (its images go with it).
"""

from __future__ import annotations

import math
from dataclasses import replace

from ...messages import Message, ToolResultPart
from ...tokens import TokenCounter, count_message
from ..assembler import HistoryItem
from .markers import COMPACTED, is_pruned

# Spec, "Progressive Tool Response Removal": tiers 1-4 remove 10%, 20%, 50%, 100%.
TIERS: tuple[float, ...] = (0.10, 0.20, 0.50, 1.00)


def middle_out_order(count: int) -> list[int]:
    """Positions 0..count-1 in removal order: the (lower) middle first, then right, left, right, …

    middle_out_order(5) == [2, 3, 1, 4, 0]; middle_out_order(4) == [1, 2, 0, 3].
    """
    if count <= 0:
        return []
    middle = (count - 1) // 2
    order = [middle]
    for step in range(1, count):
        for position in (middle + step, middle - step):
            if 0 <= position < count:
                order.append(position)
    return order


def removal_count(count: int, fraction: float) -> int:
    """ceil(fraction × count), without float noise (0.1 × 30 is 3, not 4)."""
    return min(count, math.ceil(round(fraction * count, 9)))


def tool_responses(items: list[HistoryItem]) -> list[tuple[int, int]]:
    """(item index, part index) of every tool response still worth removing, oldest first."""
    slots = []
    for i, item in enumerate(items):
        if is_pruned(item):
            continue
        for j, part in enumerate(item.message.parts):
            if isinstance(part, ToolResultPart) and part.content != COMPACTED:
                slots.append((i, j))
    return slots


def remove_middle_out(items: list[HistoryItem], fraction: float, counter: TokenCounter) -> list[HistoryItem]:
    """Items with ceil(fraction × n) of their n tool responses replaced by "[compacted]"
    (chosen middle-out), token counts of changed items recounted."""
    slots = tool_responses(items)
    chosen = {slots[k] for k in middle_out_order(len(slots))[: removal_count(len(slots), fraction)]}
    out = []
    for i, item in enumerate(items):
        if any((i, j) in chosen for j in range(len(item.message.parts))):
            parts = tuple(
                replace(p, content=COMPACTED, images=()) if (i, j) in chosen and isinstance(p, ToolResultPart) else p
                for j, p in enumerate(item.message.parts)
            )
            message = Message(item.message.role, parts)
            item = replace(item, message=message, tokens=count_message(counter, message))
        out.append(item)
    return out
