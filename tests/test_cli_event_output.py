"""The pure pieces behind the front ends' output: event dispatch, usage estimates, usage and window lines,
and the reply printer's one-block rule."""

from __future__ import annotations

import dataclasses

import asyncio

import pytest

from zeph_cli.context.report import ContextBlock, ContextReport
from zeph_cli.errors import ZephError
from zeph_cli.frontends.event_handler import _METHODS, AgentEventHandler, dispatch
from zeph_cli.agent.events import (
    AgentWarning,
    CompactionStarted,
    CompactionStatus,
    ContextPrepared,
    ReplyDelta,
    TurnFailed,
    TurnFinished,
    UsageReported,
)
from zeph_cli.messages import Usage
from zeph_cli.frontends.render import context_head_lines, length_cut_notice, usage_line, window_text
from zeph_cli.frontends.cli.reply_printer import ReplyPrinter
from zeph_cli.frontends.usage_estimate import ShownUsage, reply_tokens, shown_usage, usage_dict


def report(window_source: str = "", tokens: int = 1_500, budget: int = 8_000) -> ContextReport:
    return ContextReport(
        blocks=(ContextBlock("base prompt", tokens),), window=2_048, budget=budget, reserved_for_response=1_000,
        soft_threshold=0.6, hard_threshold=0.9, window_source=window_source,
    )


# ---- dispatch --------------------------------------------------------------------------


class Recorder(AgentEventHandler):
    def __init__(self) -> None:
        self.seen: list[tuple[str, object]] = []

    def __getattribute__(self, name: str):
        if name.startswith("on_"):
            async def record(event, name=name):
                self.seen.append((name, event))
            return record
        return super().__getattribute__(name)


def test_dispatch_calls_the_one_method_of_each_event_kind():
    events = [ReplyDelta("hi"), AgentWarning("careful"), CompactionStarted("hard"), CompactionStatus("validating"),
              ContextPrepared(report()), UsageReported(Usage(1, 2), report()),
              TurnFailed(ZephError("boom")), TurnFinished(3, "hi", Usage(), "stop")]
    handler = Recorder()
    for event in events:
        asyncio.run(dispatch(event, handler))
    assert handler.seen == [
        ("on_reply_delta", events[0]), ("on_warning", events[1]), ("on_compaction_started", events[2]),
        ("on_compaction_status", events[3]), ("on_context_prepared", events[4]), ("on_usage_reported", events[5]),
        ("on_turn_failed", events[6]), ("on_turn_finished", events[7]),
    ]


def test_every_event_kind_has_a_do_nothing_default_and_anything_else_is_refused():
    from typing import get_args

    from zeph_cli.agent.events import AgentEvent

    assert set(_METHODS) == set(get_args(AgentEvent))
    assert all(callable(getattr(AgentEventHandler, name)) for name in _METHODS.values())
    asyncio.run(dispatch(ReplyDelta("x"), AgentEventHandler()))  # the base handler ignores it
    with pytest.raises(TypeError, match="not an agent event: str"):
        asyncio.run(dispatch("text", AgentEventHandler()))  # type: ignore[arg-type]


# ---- usage: reported, or estimated and marked ---------------------------------------------


def test_reported_figures_are_kept_and_missing_ones_are_estimated():
    assert shown_usage(Usage(100, 20), 900, 50) == ShownUsage(100, 20)
    both = shown_usage(Usage(), 900, 50)
    assert (both.input_tokens, both.output_tokens, both.input_estimated, both.output_estimated) == (900, 50, True, True)
    only_out = shown_usage(Usage(input_tokens=100), 900, 50)
    assert (only_out.input_tokens, only_out.input_estimated, only_out.output_tokens, only_out.output_estimated) == (
        100, False, 50, True)
    assert not shown_usage(Usage(), None, 0).estimated  # nothing to estimate from: nothing claimed


def test_reply_tokens_is_the_chars_per_four_estimate():
    assert reply_tokens("") == 0 and reply_tokens("abcd" * 10) == 10 and reply_tokens("abcde") == 2


def test_usage_dict_swaps_in_the_estimates_and_flags_them():
    reported = Usage()
    assert usage_dict(shown_usage(reported, 900, 50), reported) == {
        "input_tokens": 900, "output_tokens": 50, "cache_read_tokens": 0, "cache_write_tokens": 0, "estimated": True,
    }
    exact = Usage(100, 20, cache_read_tokens=300)
    assert usage_dict(shown_usage(exact, 900, 50), exact) == {**exact.to_dict(), "estimated": False}


def test_summed_usage_keeps_the_estimated_flags():
    total = shown_usage(Usage(100, 20), 900, 50) + shown_usage(Usage(), 1_000, 40)
    assert (total.input_tokens, total.output_tokens, total.input_estimated, total.output_estimated) == (
        1_100, 60, True, True)


def test_the_usage_line_marks_estimates_and_never_says_zero_for_an_unreported_figure():
    line = usage_line(shown_usage(Usage(), 1_500, 250), report())
    assert line.startswith("tokens: ~1,500 in · ~250 out · context: 1.5k / 7.0k prompt budget (21%)")
    assert line.endswith("(~ estimated: the provider reported no usage)")
    exact = usage_line(shown_usage(Usage(1_234, 5), 1_500, 250), report())
    assert exact == "tokens: 1,234 in · 5 out · context: 1.5k / 7.0k prompt budget (21%)"


def test_every_front_end_gives_the_context_fill_on_one_basis():
    """`zeph ask -u`, `zeph context`, the gauge and /context: the context over the prompt budget, one figure."""
    from zeph_cli.frontends.tui.gauge import gauge_for
    from zeph_cli.frontends.tui.screens import context_table_rows

    state = dataclasses.replace(report(tokens=1_337), unsent_tokens=200)  # 1,537 of a 7,000-token prompt budget
    assert state.usage_percent == 21
    assert usage_line(shown_usage(Usage(1_900, 5), 1_500, 250), state).endswith("context: 1.5k / 7.0k prompt budget (21%)")
    assert context_head_lines(state, 1, "compatible", "m", "reactive")[1].startswith("context 1.5k / 7.0k prompt budget (21%)")
    assert gauge_for(state).label == "1.5k / 7.0k · 21%"
    shares = {row[0]: row[3] for row in context_table_rows(state, None)}
    assert shares["base prompt"] == "19.1%" and shares["not sent (trimmed)"] == "2.9%"  # of 7,000, not of 8,000
    assert shares["reserved for the reply"] == ""


# ---- the window and the length limit ---------------------------------------------------


def test_the_window_says_where_it_came_from_when_known():
    assert window_text(report("server: llama.cpp /props")) == "window 2.0k (server: llama.cpp /props)"
    assert window_text(report()) == "window 2.0k"
    head = context_head_lines(report("server: llama.cpp /props"), 3, "compatible", "smollm2", "reactive")
    assert head[0] == "session 3 · compatible smollm2 · window 2.0k (server: llama.cpp /props) · 8.0k budget"
    assert report("learned: context-length error").to_dict()["window_source"] == "learned: context-length error"


def test_the_length_cut_notice_names_the_limit_and_the_key():
    assert length_cut_notice(512) == "the reply stopped at the length limit of 512 tokens: raise llm.max_tokens for longer replies"
    assert length_cut_notice(0) == "the reply stopped at the length limit: raise llm.max_tokens for longer replies"


# ---- the printer -----------------------------------------------------------------------


def test_a_finished_reply_block_takes_no_more_text(capsys):
    printer = ReplyPrinter(markdown=False, live=False)
    printer.feed("held until the end")
    assert capsys.readouterr().out == ""
    printer.finish()
    assert capsys.readouterr().out == "held until the end\n"
    with pytest.raises(RuntimeError, match="finished"):
        printer.feed("lost text")


# ---- a running tool's progress in `zeph ask` -------------------------------------------------------


def ask_output(terminal: bool):
    from zeph_cli.frontends.cli.ask_output import AskOutput

    return AskOutput(session_id=1, provider="fake", model="m", reply_limit=100, stream=True, markdown=False,
                     show_usage=False, json_output=False, terminal=terminal)


async def progress_turn(output) -> None:
    from zeph_cli.agent.events import ToolCallFinished, ToolCallProgress, ToolCallStarted
    from zeph_cli.messages import ToolCallPart, ToolResultPart

    call = ToolCallPart("c1", "slow__work", {})
    for event in (ToolCallStarted(call, "read", ""), ToolCallProgress("c1", "Step 1 of 4", 1, 4),
                  ToolCallProgress("c1", "Step 2 of 4", 2, 4),
                  ToolCallFinished(call, ToolResultPart("c1", "ok"), "auto", "done"), ReplyDelta("Done.")):
        await dispatch(event, output)
    output.close()


async def test_zeph_ask_rewrites_one_progress_line_on_a_terminal_and_clears_it_before_the_next_line(capsys):
    await progress_turn(ask_output(terminal=True))
    captured = capsys.readouterr()
    assert captured.err == ("⏺ slow__work\n"
                            "\r\x1b[K  ⎿  Step 1 of 4 · 25%" "\r\x1b[K  ⎿  Step 2 of 4 · 50%" "\r\x1b[K"
                            "  ⎿ done\n")
    assert captured.out == "Done.\n"


async def test_zeph_ask_shows_no_progress_off_a_terminal(capsys):
    await progress_turn(ask_output(terminal=False))
    captured = capsys.readouterr()
    assert captured.err == "⏺ slow__work\n  ⎿ done\n"
    assert captured.out == "Done.\n"
