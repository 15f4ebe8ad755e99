"""Proportional budget allocation: the spec's table of shares per context slot.

Invariant: pure arithmetic. The shares of one column always sum to 100% of the
tokens being split; a slot with nothing to put in it gives its share to recent
history, so no token of the budget is left unassigned.
"""

from __future__ import annotations

from dataclasses import dataclass

# Zeph spec, "Proportional Budget Allocation": share of the available tokens
# (after the 20% response reserve) per slot, in three columns.
WITHOUT_CODE_INDEX = "without code index"
WITH_CODE_INDEX = "with code index"
WITH_GRAPH_MEMORY = "with graph memory"

ALLOCATION_TABLE: dict[str, dict[str, float]] = {
    WITHOUT_CODE_INDEX: {"summaries": 0.15, "semantic_recall": 0.25, "recent_history": 0.60},
    WITH_CODE_INDEX: {
        "summaries": 0.08,
        "semantic_recall": 0.08,
        "cross_session": 0.04,
        "code_context": 0.30,
        "recent_history": 0.50,
    },
    WITH_GRAPH_MEMORY: {
        "summaries": 0.07,
        "semantic_recall": 0.07,
        "cross_session": 0.03,
        "code_context": 0.29,
        "graph_facts": 0.04,
        "recent_history": 0.50,
    },
}

HISTORY = "recent_history"
CODE_SLOT = "code_context"  # the code index's slot: present, it switches the column to "with code index"


def column(code_index: bool, graph_memory: bool) -> str:
    """The spec's column for these features (its graph column assumes code indexing too)."""
    if graph_memory:
        return WITH_GRAPH_MEMORY
    return WITH_CODE_INDEX if code_index else WITHOUT_CODE_INDEX


@dataclass(frozen=True)
class Allocation:
    """The share of the prompt budget each slot may use, for one column of the table."""
    column: str
    shares: dict[str, float]  # the table's shares, before absent slots give theirs back
    tokens: dict[str, int]  # what each slot may use; absent slots have 0

    def for_slot(self, slot: str) -> int:
        return self.tokens.get(slot, 0)


def allocate(
    available: int, present: set[str] | frozenset[str], *, code_index: bool = False, graph_memory: bool = False,
    overrides: dict[str, float] | None = None,
) -> Allocation:
    """Split `available` tokens over the slots of the table.

    Slots not in `present` get nothing and their share goes to recent history,
    which is always present. Rounding leftovers also go to history. `overrides` sets
    some slots' shares (a configured share) in place of the column's; recent
    history takes what the others leave, so the column still sums to 100%.
    """
    name = column(code_index, graph_memory)
    shares = dict(ALLOCATION_TABLE[name])
    for slot, share in (overrides or {}).items():
        if slot in shares and slot != HISTORY:
            shares[slot] = share
    shares[HISTORY] = max(1.0 - sum(share for slot, share in shares.items() if slot != HISTORY), 0.0)
    tokens = {slot: int(available * share) if slot in present else 0 for slot, share in shares.items() if slot != HISTORY}
    tokens[HISTORY] = max(available - sum(tokens.values()), 0)
    return Allocation(name, shares, tokens)
