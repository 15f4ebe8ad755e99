"""Search hits packed as `<code_context>`'s body, counted with the real cl100k tokenizer: whole chunks in rank
order, one that does not fit passed over for smaller ones after it, then the best one passed over cut at a
line boundary and said to be cut; never over the budget, whatever the budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from zeph_cli.features.code_index.chunks import chunk_file
from zeph_cli.features.code_index.pack import pack, render
from zeph_cli.features.code_index.search import Hit
from zeph_cli.tokens import TiktokenCounter

REPO = Path(__file__).resolve().parent.parent
count = TiktokenCounter().count


def hits_of(path: str) -> list[Hit]:
    chunks, _ = chunk_file(path, (REPO / path).read_text())
    return [Hit(c.path, c.start_line, c.end_line, c.symbol, c.kind, c.signature, c.text, 1.0 / (i + 1), i)
            for i, c in enumerate(chunks)]


@pytest.fixture(scope="module")
def hits() -> list[Hit]:
    return [h for h in hits_of("zeph_cli/features/code_index/chunks.py") if h.symbol]


def test_nothing_for_no_budget_or_no_hits(hits):
    for budget in (0, -5):
        assert pack(hits, budget, count).text == ""
        assert pack(hits, budget, count).hits == ()
    assert pack([], 1000, count).tokens == 0


def test_everything_fits_in_rank_order_with_headers_and_fenced_code(hits):
    chosen = hits[:4]
    packed = pack(chosen, 100_000, count)
    assert [h.chunk_id for h in packed.hits] == [h.chunk_id for h in chosen]
    assert packed.tokens == count(packed.text)
    positions = [packed.text.index(f"{h.path}:{h.start_line}-{h.end_line}  {h.kind} {h.symbol}\n```python\n")
                 for h in chosen]
    assert positions == sorted(positions)
    for hit in chosen:
        assert f"\n{hit.text}\n```" in packed.text


@pytest.mark.parametrize("budget", [1, 10, 40, 80, 150, 300, 600, 1000, 2000, 4000])
def test_never_over_the_budget(hits, budget):
    packed = pack(hits, budget, count)
    assert packed.tokens == count(packed.text) <= budget
    for hit in packed.hits:
        assert f"{hit.path}:{hit.start_line}-{hit.end_line}" in packed.text


def test_a_chunk_too_big_is_passed_over_for_smaller_ones_after_it(hits):
    small = sorted(hits, key=lambda h: len(h.text))
    big = max(hits, key=lambda h: len(h.text))
    first, second = small[0], small[1]
    budget = count(render(first)) + count(render(second)) + 4
    assert count(render(big)) > budget
    packed = pack([first, big, second], budget, count)
    assert packed.hits[:2] == (first, second)  # whole, in rank order; the big one at most cut after them
    assert all(h.end_line < big.end_line for h in packed.hits[2:])
    assert packed.tokens <= budget


def test_the_best_chunk_passed_over_goes_in_cut_at_a_line_boundary(hits):
    big = max(hits, key=lambda h: h.end_line - h.start_line)
    lines = big.text.split("\n")
    budget = count(render(big)) // 2
    packed = pack([big], budget, count)
    (cut,) = packed.hits
    shown = cut.end_line - cut.start_line + 1
    assert cut.chunk_id == big.chunk_id and cut.start_line == big.start_line
    assert 3 <= shown < len(lines)
    assert cut.text == "\n".join(lines[:shown])
    left_out = len(lines) - shown
    assert f"{big.path}:{big.start_line}-{cut.end_line}  {big.kind} {big.symbol}  (cut: {left_out} more lines to line {big.end_line})\n" in packed.text
    assert packed.text.endswith(f"{lines[shown - 1]}\n```")
    assert packed.tokens <= budget
    more = pack([big], budget + 40, count)
    assert more.hits[0].end_line > cut.end_line  # more room, more of it


def test_a_whole_chunk_comes_before_a_cut_one_ranked_below_it(hits):
    big = max(hits, key=lambda h: len(h.text))
    small = min(hits, key=lambda h: len(h.text))
    budget = count(render(small)) + count(render(big)) // 2
    packed = pack([small, big], budget, count)
    assert [h.chunk_id for h in packed.hits] == [small.chunk_id, big.chunk_id]
    assert packed.hits[0] == small and packed.hits[1].end_line < big.end_line
    assert packed.text.index(small.path + f":{small.start_line}-") < packed.text.index("(cut: ")


def test_a_text_chunk_and_code_with_a_fence_in_it():
    text = Hit("docs/notes.md", 1, 3, "", "text", "", "# Notes\n```sh\nls\n```", 1.0, 7)
    packed = pack([text], 500, count)
    assert packed.text == "docs/notes.md:1-3\n````\n# Notes\n```sh\nls\n```\n````"
