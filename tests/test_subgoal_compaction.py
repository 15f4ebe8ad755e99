"""Subgoal-aware compaction end to end: the long-task scenario (benchmarks/long_task.py), shorter, through
the real agent and the real openai SDK against the wire-level fake server, a real SQLite store and a real
debug dump directory.

Forty turns at an 8k budget through four task items: every compaction keeps the active item's messages
(read back from the store: no summary's originals are ever among them), the completed and abandoned items
are summarized and named at the head of their summary, the `<todo>` block is in every chat request once
the list exists, no request is over the budget, and each compaction dumps its subgoal registry.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.long_task import BUDGET, run_session

TURNS = 40


async def test_the_long_task_keeps_active_items_and_compacts_closed_ones(tmp_path: Path):
    dump = tmp_path / "dump"
    result = await run_session(TURNS, BUDGET, tmp_path, dump_dir=dump)
    assert not result.failed
    assert len(result.compactions) >= 3
    # The active item's messages were never summarized, and some compaction did keep an active item.
    assert result.active_summarized == 0
    assert any(c.states[i] == "active" and c.outcome[i] == "kept" for c in result.compactions for i in c.states)
    # Completed and abandoned items were summarized, and each summary named the ones it closed.
    closed = result.closed_summarized()
    assert {"1", "2", "3"} <= set(closed) and all(closed.values())
    assert all(c.names_closed for c in result.compactions)
    # The <todo> block in every chat request since the first todo_write, and every request within budget.
    carrying, chats = result.todo_requests
    assert chats > 50 and carrying == chats
    assert result.over_budget == 0 and result.peak <= BUDGET
    # Each compaction dumped the registry beside its own numbered files.
    registries = sorted(dump.glob("*-subgoal-registry.txt"))
    assert len(registries) == len(result.compactions)
    for path in registries:
        assert (dump / path.name.replace("subgoal-registry.txt", "compaction.json")).exists()
    assert "\tabandoned\t" in registries[-1].read_text()
