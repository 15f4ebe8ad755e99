"""The budget is an invariant: the running turn is pinned, every token sent is in the report,
and a request that cannot fit is never sent (pure assembly and check; the agent-level
cases are in tests/test_context_engine.py)."""

from __future__ import annotations

from zeph_cli.context.assembler import HistoryItem, PromptLayer, fit_history
from tests.assembly import assemble
from zeph_cli.context.budget import compute_budget
from zeph_cli.context.invariant import budget_problem
from zeph_cli.context.untrusted import delimit_tool_results
from zeph_cli.messages import Message, ToolCallPart, ToolResultPart
from zeph_cli.tokens import REQUEST_OVERHEAD, ApproximateCounter, Calibration, count_message

COUNTER = ApproximateCounter()


def item(message: Message, id_: int) -> HistoryItem:
    return HistoryItem(message, count_message(COUNTER, message), id_)


def turn_with_a_big_output(first_id: int, output_chars: int) -> list[HistoryItem]:
    call = Message("assistant", (ToolCallPart(f"c{first_id}", "read_file", {"path": "big.txt"}),))
    result = Message("tool", (ToolResultPart(f"c{first_id}", "z" * output_chars, name="read_file"),))
    return [item(Message.user(f"question {first_id}: what does big.txt say?"), first_id),
            item(call, first_id + 1), item(result, first_id + 2)]


def budget(tokens: int):
    """A configured budget; 0 = none at all (auto_budget off)."""
    return compute_budget(configured_tokens=tokens, auto_budget=False, window=64_000, soft_threshold=0.6, hard_threshold=0.9)


def test_the_pinned_user_message_travels_with_its_tool_chain():
    older = [item(Message.user(f"old {i} " + "x" * 400), i) for i in range(1, 6)]
    history = older + turn_with_a_big_output(10, 2000)
    allowance = sum(i.tokens for i in history[-2:]) + 5  # room for the tool chain, not for the question too
    unpinned, _ = fit_history(history, allowance)
    assert [i.message.role for i in unpinned] == ["assistant", "tool"]  # what used to happen: the question went missing
    pinned, dropped = fit_history(history, allowance, pinned_from=len(older))
    assert [i.id for i in pinned] == [10, 11, 12] and dropped == len(older)


def test_older_history_fills_what_the_pinned_turn_leaves():
    older = [item(Message.user(f"old {i} " + "x" * 40), i) for i in range(1, 6)]
    history = older + turn_with_a_big_output(10, 200)
    allowance = sum(i.tokens for i in history[-3:]) + older[-1].tokens + older[-2].tokens
    kept, dropped = fit_history(history, allowance, pinned_from=len(older))
    assert [i.id for i in kept] == [4, 5, 10, 11, 12] and dropped == 3


def test_assembly_counts_the_untrusted_wrapping_of_tool_results():
    history = turn_with_a_big_output(1, 300)
    messages, report = assemble([PromptLayer("base prompt", "B")], history, budget(0), COUNTER, window=64_000)
    assert messages == delimit_tool_results([Message.system("B")] + [i.message for i in history])
    sent = sum(count_message(COUNTER, m) for m in messages) + REQUEST_OVERHEAD
    assert report.used_tokens == sent  # every token of what is sent is in the report


def test_a_pinned_turn_larger_than_the_budget_is_reported_not_cut():
    history = [item(Message.user("old"), 1)] + turn_with_a_big_output(10, 8000)
    messages, report = assemble(
        [PromptLayer("base prompt", "B" * 400)], history, budget(2000), COUNTER, window=64_000, pinned_id=10
    )
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool"]
    assert report.over_budget and report.pinned_tokens > report.capacity
    problem = budget_problem(report)
    assert problem is not None and "\n" not in problem
    assert f"this turn's message and its tool results take {report.pinned_tokens:,}" in problem
    assert "more than the 1,600-token prompt budget (2,000 minus 400 kept for the reply)" in problem
    assert "shorten the message, start a new session" in problem


def test_a_prompt_alone_above_the_budget_names_the_system_prompt_and_tools():
    history = [item(Message.user("hi"), 1)]
    _, report = assemble(
        [PromptLayer("base prompt", "B" * 4000)], history, budget(1000), COUNTER, window=64_000, tools_tokens=300, pinned_id=1
    )
    problem = budget_problem(report)
    assert problem is not None and "the system prompt and tool schemas alone take" in problem
    assert "--mode ask" in problem


def test_a_request_that_fits_has_no_problem_and_none_without_a_budget():
    history = turn_with_a_big_output(1, 300)
    _, fits = assemble([PromptLayer("base prompt", "B")], history, budget(4000), COUNTER, window=64_000, pinned_id=1)
    assert not fits.over_budget and budget_problem(fits) is None
    _, unlimited = assemble([PromptLayer("base prompt", "B" * 90_000)], history, budget(0), COUNTER, window=0)
    assert budget_problem(unlimited) is None


def test_an_under_reporting_calibration_cannot_let_more_history_in():
    history = [item(Message.user(f"m{i} " + "x" * 400), i) for i in range(1, 30)]
    own = assemble([PromptLayer("base prompt", "B")], history, budget(2000), COUNTER, window=64_000)[1]
    low = assemble([PromptLayer("base prompt", "B")], history, budget(2000), COUNTER, window=64_000,
                   calibration=Calibration(0.57, 10))[1]
    assert low.history_messages == own.history_messages and low.used_tokens == own.used_tokens <= own.capacity


def test_a_tool_output_may_take_half_of_what_the_budget_has_left():
    from zeph_cli.context.invariant import MIN_TOOL_OUTPUT_TOKENS, tool_output_allowance

    history = [item(Message.user("q"), 1)]
    _, report = assemble([PromptLayer("base prompt", "B" * 400)], history, budget(2000), COUNTER, window=64_000, pinned_id=1)
    left = report.capacity - report.fixed_tokens - report.pinned_tokens
    assert tool_output_allowance(report) == left // 2
    _, full = assemble([PromptLayer("base prompt", "B" * 6400)], history, budget(2000), COUNTER, window=64_000, pinned_id=1)
    assert tool_output_allowance(full) == MIN_TOOL_OUTPUT_TOKENS
    _, unlimited = assemble([PromptLayer("base prompt", "B")], history, budget(0), COUNTER, window=0)
    assert tool_output_allowance(unlimited) is None


def test_tool_schemas_go_compact_then_away_as_the_budget_shrinks():
    from zeph_cli.context.tool_fit import tool_form
    from zeph_cli.tokens import count_tools, default_counter
    from zeph_cli.tools.registry import tools_for_mode

    counter = default_counter()
    full_set = tools_for_mode("agent", compression=True)
    compact_set = tools_for_mode("agent", compression=True)
    compact_set.compact = True
    full, compact = count_tools(counter, list(full_set.specs())), count_tools(counter, list(compact_set.specs()))
    assert compact < full / 2
    # 10k, 4k and 2k budgets: the prompt's share is 80% of each (the memory tools took 8k to compact).
    assert [tool_form(int(b * 0.8), full, compact) for b in (10_000, 4000, 2048)] == ["full", "compact", "none"]
    assert tool_form(0, full, compact) == "full"  # no budget


def test_a_compact_schema_keeps_names_types_and_required_fields():
    from zeph_cli.messages import ToolSpec
    from zeph_cli.tools.base import compact_spec

    spec = ToolSpec("note", "Write a note. It is kept forever.", {
        "type": "object",
        "properties": {"description": {"type": "string", "description": "What the note says."},
                       "tags": {"type": "array", "items": {"type": "string", "description": "a tag"}}},
        "required": ["description"],
    })
    compact = compact_spec(spec)
    assert compact.description == "Write a note."
    assert compact.parameters == {"type": "object", "properties": {"description": {"type": "string"},
                                  "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["description"]}


def test_many_small_messages_under_a_calibration_above_1_still_fit_exactly():
    history = [item(Message.user(f"m{i} " + "w" * 22), i) for i in range(1, 600)]
    _, report = assemble([PromptLayer("base prompt", "B" * 400)], history, budget(4000), COUNTER, window=64_000,
                         calibration=Calibration(1.1, 5))
    assert report.trimmed_messages > 0 and not report.over_budget


def test_the_fewest_tools_left_out_that_make_the_rest_fit():
    from zeph_cli.context.tool_fit import fewest_left_out

    tokens = [400, 300, 200, 100, 50]  # least wanted first; the built-in tools take 1,000 more

    def fits(capacity):
        return lambda left_out: 1000 + sum(tokens[left_out:]) <= capacity
    assert fewest_left_out(len(tokens), fits(2100)) == 0
    assert fewest_left_out(len(tokens), fits(1400)) == 2
    assert fewest_left_out(len(tokens), fits(1000)) == 5
    assert fewest_left_out(len(tokens), fits(999)) is None
    assert fewest_left_out(0, lambda left_out: True) == 0 and fewest_left_out(0, lambda left_out: False) is None
