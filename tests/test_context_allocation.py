"""The spec's proportional allocation table, and absent slots giving their share to history."""

from __future__ import annotations

import pytest

from zeph_cli.context.allocation import (
    ALLOCATION_TABLE,
    HISTORY,
    WITH_CODE_INDEX,
    WITH_GRAPH_MEMORY,
    WITHOUT_CODE_INDEX,
    allocate,
    column,
)


def test_the_table_is_the_specs():
    # "Summaries 15% 8% 7% · Semantic recall 25% 8% 7% · Cross-session 4% 3% ·
    #  Code context 30% 29% · Graph facts 4% · Recent history 60% 50% 50%"
    assert ALLOCATION_TABLE[WITHOUT_CODE_INDEX] == {"summaries": 0.15, "semantic_recall": 0.25, "recent_history": 0.60}
    assert ALLOCATION_TABLE[WITH_CODE_INDEX] == {
        "summaries": 0.08, "semantic_recall": 0.08, "cross_session": 0.04, "code_context": 0.30, "recent_history": 0.50}
    assert ALLOCATION_TABLE[WITH_GRAPH_MEMORY] == {
        "summaries": 0.07, "semantic_recall": 0.07, "cross_session": 0.03, "code_context": 0.29,
        "graph_facts": 0.04, "recent_history": 0.50}


@pytest.mark.parametrize("name", [WITHOUT_CODE_INDEX, WITH_CODE_INDEX, WITH_GRAPH_MEMORY])
def test_each_column_sums_to_the_whole(name):
    assert sum(ALLOCATION_TABLE[name].values()) == pytest.approx(1.0)


def test_graph_memory_uses_the_graph_column_which_assumes_code_indexing():
    assert column(False, False) == WITHOUT_CODE_INDEX
    assert column(True, False) == WITH_CODE_INDEX
    assert column(True, True) == WITH_GRAPH_MEMORY
    assert column(False, True) == WITH_GRAPH_MEMORY


def test_every_slot_present_gets_its_share():
    allocation = allocate(100_000, {"summaries", "semantic_recall"})
    assert allocation.tokens == {"summaries": 15_000, "semantic_recall": 25_000, HISTORY: 60_000}


def test_absent_slots_give_their_share_back_to_history():
    only_history = allocate(100_000, set())
    assert only_history.tokens == {"summaries": 0, "semantic_recall": 0, HISTORY: 100_000}
    with_summary = allocate(100_000, {"summaries"})
    assert with_summary.for_slot("summaries") == 15_000 and with_summary.for_slot(HISTORY) == 85_000
    code = allocate(100_000, {"code_context", "summaries"}, code_index=True)
    assert code.for_slot("code_context") == 30_000 and code.for_slot(HISTORY) == 62_000


def test_no_token_is_left_unassigned_by_rounding():
    allocation = allocate(99_999, {"summaries", "semantic_recall", "cross_session", "code_context", "graph_facts"},
                          code_index=True, graph_memory=True)
    assert sum(allocation.tokens.values()) == 99_999
    assert allocate(0, {"summaries"}).tokens[HISTORY] == 0


def test_a_configured_code_share_replaces_the_columns_and_history_takes_the_rest():
    allocation = allocate(10_000, {"code_context", "semantic_recall"}, code_index=True, overrides={"code_context": 0.2})
    assert allocation.column == "with code index"
    assert allocation.shares["code_context"] == 0.2
    assert abs(sum(allocation.shares.values()) - 1.0) < 1e-9
    assert allocation.for_slot("code_context") == 2_000
    assert allocation.for_slot("semantic_recall") == 800
    assert sum(allocation.tokens.values()) == 10_000


def test_an_override_of_a_slot_the_column_lacks_changes_nothing():
    plain = allocate(10_000, {"semantic_recall"})
    assert allocate(10_000, {"semantic_recall"}, overrides={"code_context": 0.4}) == plain
