"""The status bar's context gauge and last-turn usage text."""

from __future__ import annotations

import pytest

from zeph_cli.context.report import ContextBlock, ContextReport
from zeph_cli.messages import Usage
from zeph_cli.frontends.tui.gauge import EMPTY, FILLED, HARD_MARK, MARK_FILLED, SOFT_MARK, gauge, gauge_for, usage_text

# Spec defaults: soft_compaction_threshold = 0.60, hard_compaction_threshold = 0.90.
SOFT, HARD = 0.60, 0.90


def test_empty_at_0_percent_with_the_soft_and_hard_marks_of_the_spec_defaults_060_090():
    view = gauge(0, 1000, SOFT, HARD)
    assert view.bar == "░░░░░░░░░░░░┊░░░░░│░"  # cell 12 = 60 %, cell 18 = 90 % of 20
    assert view.label == "0 / 1.0k · 0%"
    assert view.level == "ok"


def test_half_full_at_50_percent():
    view = gauge(500, 1000, SOFT, HARD)
    assert view.bar == "██████████░░┊░░░░░│░"
    assert view.label == "500 / 1.0k · 50%"
    assert view.level == "ok"


def test_exactly_at_the_soft_mark_060_is_not_past_it():
    view = gauge(600, 1000, SOFT, HARD)
    assert view.bar == "████████████┊░░░░░│░"  # the fill reaches the mark without covering it
    assert view.level == "ok"  # compaction fires when usage *exceeds* the threshold


def test_one_token_past_the_soft_mark_060_covers_it():
    view = gauge(601, 1000, SOFT, HARD)
    assert view.bar == "████████████▓░░░░░│░"
    assert view.label == "601 / 1.0k · 60%"
    assert view.level == "soft"


def test_exactly_at_the_hard_mark_090_is_still_soft():
    view = gauge(900, 1000, SOFT, HARD)
    assert view.bar == "████████████▓█████│░"
    assert view.level == "soft"


def test_one_token_past_the_hard_mark_090_is_hard():
    view = gauge(901, 1000, SOFT, HARD)
    assert view.bar == "████████████▓█████▓░"
    assert view.level == "hard"


def test_exactly_full_is_hard_not_over():
    view = gauge(1000, 1000, SOFT, HARD)
    assert view.bar == "████████████▓█████▓█"
    assert (view.label, view.level) == ("1.0k / 1.0k · 100%", "hard")


def test_over_100_percent_stays_width_cells_and_says_over():
    view = gauge(140_000, 100_000, SOFT, HARD)
    assert view.bar == "████████████▓█████▓█"
    assert view.label == "140k / 100k · 140%"
    assert view.level == "over"


def test_any_token_shows_one_cell_but_the_percentage_rounds_down():
    view = gauge(1, 128_000, SOFT, HARD)
    assert view.bar[0] == FILLED and view.bar[1:].count(FILLED) == 0
    assert view.label == "1 / 128k · 0%"
    assert gauge(599, 1000, SOFT, HARD).label == "599 / 1.0k · 59%"


def test_width_10_with_spec_defaults_060_090():
    assert gauge(0, 1000, SOFT, HARD, width=10).bar == "░░░░░░┊░░│"
    assert gauge(500, 1000, SOFT, HARD, width=10).bar == "█████░┊░░│"
    assert gauge(650, 1000, SOFT, HARD, width=10).bar == "██████▓░░│"
    assert gauge(950, 1000, SOFT, HARD, width=10).bar == "██████▓██▓"


def test_width_40_with_spec_defaults_060_090():
    empty = gauge(0, 1000, SOFT, HARD, width=40).bar
    assert len(empty) == 40
    assert (empty.index(SOFT_MARK), empty.index(HARD_MARK)) == (24, 36)
    half = gauge(500, 1000, SOFT, HARD, width=40).bar
    assert half == FILLED * 20 + EMPTY * 4 + SOFT_MARK + EMPTY * 11 + HARD_MARK + EMPTY * 3


@pytest.mark.parametrize("width", [1, 3, 10, 20, 40, 200])
@pytest.mark.parametrize("used", [0, 1, 333, 600, 601, 900, 901, 1000, 5000])
def test_the_bar_is_always_width_cells(width, used):
    assert len(gauge(used, 1000, SOFT, HARD, width).bar) == width


def test_marks_sit_where_thresholds_fall_even_when_float_products_are_inexact():
    bar = gauge(0, 1000, 0.29, 0.57, width=100).bar  # 0.29 × 100 == 28.999… in floating point
    assert (bar.index(SOFT_MARK), bar.index(HARD_MARK)) == (29, 57)


def test_a_shared_cell_shows_the_hard_mark():
    bar = gauge(0, 1000, 0.6, 0.65, width=5).bar
    assert bar == "░░░│░"


def test_covered_marks_are_shaded_not_lines():
    bar = gauge(1000, 1000, SOFT, HARD).bar
    assert SOFT_MARK not in bar and HARD_MARK not in bar
    assert bar.count(MARK_FILLED) == 2


def test_no_budget_shows_an_empty_bar_and_says_so():
    view = gauge(12_345, 0, SOFT, HARD)
    assert view.bar == EMPTY * 20
    assert view.label == "12.3k · no budget"  # the issue writes "12.3k / 128k"
    assert view.level == "ok"
    assert gauge(1_234, 0, SOFT, HARD, width=10).label == "1.2k · no budget"


def test_negative_or_zero_width_input_does_not_crash():
    assert gauge(-5, 1000, SOFT, HARD, width=10).bar == "░░░░░░┊░░│"
    assert gauge(500, 1000, SOFT, HARD, width=0).bar == ""


def report(blocks: tuple[ContextBlock, ...], budget: int, reserved: int, unsent: int = 0) -> ContextReport:
    return ContextReport(
        blocks=blocks, window=200_000, budget=budget, reserved_for_response=reserved,
        soft_threshold=SOFT, hard_threshold=HARD, unsent_tokens=unsent,
    )


def test_gauge_for_compares_the_whole_context_with_the_capacity_as_compaction_does():
    # capacity = 12_000 - 2_000 = 10_000; context = 5_000 sent + 1_500 not sent = 6_500 (65 %, past soft 0.60)
    r = report((ContextBlock("system", 1_000), ContextBlock("history", 4_000)), budget=12_000, reserved=2_000, unsent=1_500)
    view = gauge_for(r)
    assert view.label == "6.5k / 10k · 65%"
    assert view.level == "soft"
    assert view.bar == "████████████▓░░░░░│░"
    assert gauge_for(r, width=10).bar == "██████▓░░│"


def test_gauge_for_without_a_budget():
    r = report((ContextBlock("history", 42_000),), budget=0, reserved=4_096)
    assert gauge_for(r) == gauge(42_000, 0, SOFT, HARD)
    assert gauge_for(r).label == "42k · no budget"


# ---- last turn's usage ---------------------------------------------------------------


def test_usage_without_cache():
    assert usage_text(Usage(input_tokens=1_234, output_tokens=340), request_tokens=1_100) == "in 1.2k · out 340"


def test_usage_with_cache_counts_every_prompt_token_as_in():
    usage = Usage(input_tokens=200, output_tokens=340, cache_read_tokens=900, cache_write_tokens=120)
    assert usage_text(usage, None) == "in 1.2k · out 340 · cache 900 read / 120 written"


def test_usage_with_only_cache_reads():
    usage = Usage(input_tokens=50, output_tokens=12, cache_read_tokens=15_000)
    assert usage_text(usage, None) == "in 15.1k · out 12 · cache 15k read / 0 written"


def test_the_local_estimate_stands_in_when_the_provider_reported_no_prompt_tokens():
    assert usage_text(Usage(output_tokens=80), request_tokens=2_345) == "in ~2.3k · out 80"
    assert usage_text(Usage(), request_tokens=2_345) == "in ~2.3k · out 0"
    assert usage_text(Usage(output_tokens=80), request_tokens=None) == "in ? · out 80"


def test_the_streamed_estimate_stands_in_only_when_no_output_tokens_were_reported():
    assert usage_text(Usage(), request_tokens=2_345, output_estimate=1_260) == "in ~2.3k · out ~1.3k"
    assert usage_text(Usage(output_tokens=80), request_tokens=None, output_estimate=1_260) == "in ? · out 80"
    assert usage_text(Usage(), None, output_estimate=40) == "in ? · out ~40"


def test_nothing_reported_and_nothing_estimated_is_empty():
    assert usage_text(Usage(), None) == ""
