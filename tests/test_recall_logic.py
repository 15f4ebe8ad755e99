"""Pure recall logic: the spec's routing heuristic, fusion arithmetic, MMR, the recall block and its budget."""

from __future__ import annotations

import pytest

from zeph_cli.context.assembler import HistoryItem, PromptLayer
from tests.assembly import assemble
from zeph_cli.context.budget import compute_budget
from zeph_cli.context.recall_block import RECALL_PREFIX, fit_recall, render_entry
from zeph_cli.features.memory.fusion import (
    decay_factor,
    keyword_coverage,
    mmr,
    normalized,
    reciprocal_rank_fusion,
    terms,
)
from zeph_cli.features.memory.routing import KEYWORD_FAVOUR, Route, leg_weights, route
from zeph_cli.messages import Message
from zeph_cli.tokens import default_counter


# The router only weighs the two legs: code, paths, identifiers and quoted text favour the keyword leg.
@pytest.mark.parametrize(
    "query, expected",
    [
        ("zeph_cli::agent", Route.KEYWORD),  # code pattern ::
        ("src/main.rs", Route.KEYWORD),  # a path
        ("load_history_filtered", Route.KEYWORD),  # a snake_case identifier
        ("why does `parse_invoice` fail on empty rows?", Route.KEYWORD),  # a backtick, an identifier inside a question
        ('what did we say about "blue-green deploys"', Route.KEYWORD),  # quoted text
        ("what is in deploy.sh", Route.KEYWORD),  # a file name
        ("что мы говорили про «синий-зелёный деплой»?", Route.KEYWORD),  # quoted in guillemets
        ("wie war „Blau-Grün“ gemeint?", Route.KEYWORD),  # German quotes
        ("「蓝绿部署」是什么？", Route.KEYWORD),  # CJK corner brackets
        ("Какой порт у базы данных?", Route.HYBRID),
        ("pgbouncer port", Route.HYBRID),  # short: both legs, the configured weights
        ("what port does the staging database use", Route.HYBRID),
        ("how is the cache related to the scheduler", Route.HYBRID),
    ],
)
def test_routes_weigh_the_keyword_leg_for_code_paths_and_quotes(query, expected):
    assert route(query) is expected
    vector, keyword = leg_weights(expected, 0.7, 0.3)
    assert vector == 0.7 and keyword == pytest.approx(0.3 * (KEYWORD_FAVOUR if expected is Route.KEYWORD else 1))


def test_reciprocal_rank_fusion_weights_each_ranking():
    fused = reciprocal_rank_fusion([([1, 2], 0.7), ([2, 3], 0.3)], k=60)
    assert fused[1] == pytest.approx(0.7 / 61)
    assert fused[2] == pytest.approx(0.7 / 62 + 0.3 / 61)
    assert fused[3] == pytest.approx(0.3 / 62)
    assert max(fused, key=fused.get) == 2  # found by both beats the vector top alone
    assert normalized(fused)[2] == 1.0


def test_temporal_decay_halves_per_half_life():
    assert decay_factor(0, 30) == 1.0
    assert decay_factor(30, 30) == pytest.approx(0.5)
    assert decay_factor(90, 30) == pytest.approx(0.125)
    assert decay_factor(-5, 30) == 1.0  # clock skew never boosts


def test_mmr_trades_relevance_for_diversity():
    scores = {1: 1.0, 2: 0.95, 3: 0.6}
    same = {(1, 2), (2, 1)}
    similarity = lambda a, b: 1.0 if (a, b) in same else 0.0  # noqa: E731
    assert mmr(scores, similarity, lam=1.0, limit=2) == [1, 2]  # λ = 1: relevance only
    assert mmr(scores, similarity, lam=0.5, limit=2) == [1, 3]  # the near-duplicate of 1 loses to 3


def test_keyword_coverage_ignores_stopwords():
    query = terms("what is the pgbouncer port?")
    assert query == {"pgbouncer", "port"}
    assert keyword_coverage(query, "pgbouncer listens on port 6432") == 1.0
    assert keyword_coverage(query, "the port is busy") == 0.5
    assert terms("hello there, thanks!") == set()


def test_recall_block_keeps_whole_entries_within_its_allowance():
    counter = default_counter()
    entries = [render_entry(i, "user", "2026-11-20T10:00:00+00:00", "db work", f"fact number {i} " * 20) for i in (1, 2, 3)]
    text, ids = fit_recall(entries, 10_000, counter.count)
    assert text.startswith(RECALL_PREFIX) and ids == (1, 2, 3)
    assert '[2026-11-20 · "db work" · user]' in text
    one = counter.count("\n".join(text.splitlines()[:2]))
    text, ids = fit_recall(entries, one, counter.count)
    assert ids == (1,) and counter.count(text) <= one
    assert fit_recall(entries, 5, counter.count) == ("", ())  # never a header alone


def _history(n: int, words: int = 40) -> list[HistoryItem]:
    counter = default_counter()
    items = []
    for i in range(n):
        message = Message.user(f"message {i} " + "word " * words) if i % 2 == 0 else Message.assistant("ok " * words)
        items.append(HistoryItem(message, counter.count(message.content) + 4, i + 1))
    return items


def test_recall_takes_only_room_below_the_hard_lines_margin_and_never_trims_history():
    counter = default_counter()
    budget = compute_budget(configured_tokens=2000, auto_budget=True, window=2000, soft_threshold=0.6, hard_threshold=0.9)
    entries = [render_entry(100 + i, "user", "2026-11-01T00:00:00+00:00", "", "remembered fact " * 30) for i in range(5)]
    layers = [PromptLayer("base prompt", "You are zeph.")]
    # A short history: recall fits, within its share, and the whole request stays under the soft line.
    messages, report = assemble(layers, _history(2), budget, counter, window=2000, recall=entries)
    recall_block = report.block("semantic recall")
    assert recall_block and report.recalled_ids
    assert recall_block.tokens <= report.allocation["semantic_recall"]
    assert report.used_tokens <= budget.available * budget.soft_threshold
    # no running turn yet (a preview): the recall block comes after the history, where the next message goes
    assert messages[-1].role == "context" and messages[-1].content.startswith(RECALL_PREFIX)
    # A history past the soft line (it grows there between compactions): recall takes what is left below
    # the hard line less 5% of the budget, and trims nothing.
    past_soft, plain = assemble(layers, _history(12, 80), budget, counter, window=2000)
    assert plain.used_tokens > budget.available * budget.soft_threshold
    with_recall, report = assemble(layers, _history(12, 80), budget, counter, window=2000, recall=entries)
    assert report.block("semantic recall") and report.recalled_ids
    assert report.used_tokens <= budget.available * (budget.hard_threshold - 0.05)
    assert report.trimmed_messages == plain.trimmed_messages
    # A history already within that margin: no recall at all, and nothing trimmed for it.
    without, plain = assemble(layers, _history(16, 80), budget, counter, window=2000)
    with_recall, report = assemble(layers, _history(16, 80), budget, counter, window=2000, recall=entries)
    assert report.block("semantic recall") is None and not report.recalled_ids
    assert with_recall == without and report.trimmed_messages == plain.trimmed_messages


def test_memory_layer_is_a_context_message_just_before_the_running_turn():
    counter = default_counter()
    budget = compute_budget(configured_tokens=8000, auto_budget=True, window=8000, soft_threshold=0.6, hard_threshold=0.9)
    messages, report = assemble(
        [PromptLayer("base prompt", "You are zeph.")], _history(3), budget, counter, window=8000,
        context_layers=[PromptLayer("memory", "<memory>\n- likes tabs\n</memory>")], pinned_id=3,
    )
    assert [m.role for m in messages] == ["system", "user", "assistant", "context", "user"]
    assert report.block("memory").tokens > 0
    assert report.fixed_tokens >= report.block("memory").tokens


def test_a_path_fragment_counts_as_found_in_a_longer_path():
    query = terms("staging.sqlite3")
    assert keyword_coverage(query, "the db lives at srv/data/orchid/staging.sqlite3") == 1.0
    assert keyword_coverage(query, "staging uses postgres") == 0.0


def test_a_reply_echoes_a_block_it_repeats_not_one_it_quotes_a_line_of():
    from zeph_cli.context.echo import echoed_blocks

    profile = ("I'm here to help you with whatever your needs are. The user likes concise answers and works on a "
               "Rust compiler in their spare time, mostly on weekends.")
    blocks = {"user profile": profile, "semantic recall": "- [2024-01-02 · user] the staging db is on port 6543"}
    assert echoed_blocks(profile + " </user_profile_memory>", blocks) == ("user profile",)
    own = ("You work on a Rust compiler in their spare time, mostly on weekends, so here is a plan: first read the "
           "borrow checker's tests, then pick an open issue labelled good-first-issue, then ask for a review early, "
           "and keep each change small enough to land within a week of evenings.")
    assert echoed_blocks(own, blocks) == ()  # one quoted run, then an answer of its own
    assert echoed_blocks("ok", blocks) == ()


def test_a_chinese_reply_echoes_a_block_it_repeats_not_one_sharing_a_few_characters():
    from zeph_cli.context.echo import echoed_blocks

    profile = "用户是一名数据工程师，主要使用Python开发新闻爬虫newsbot，把抓取的新闻存到PostgreSQL，喜欢简短的中文回答。"
    blocks = {"user profile": profile, "semantic recall": "- [2024-01-02 · user] 测试数据库的端口是6543"}
    assert echoed_blocks(profile + " </user_profile_memory>", blocks) == ("user profile",)
    assert echoed_blocks("好的。" + profile, blocks) == ("user profile",)
    own = ("你可以先用asyncio和aiohttp并发抓取各个新闻网站，再用SQLAlchemy把文章批量写入数据库，"
           "同时给URL建唯一索引来去重；另外建议记录每次抓取的耗时和失败原因，方便以后排查问题。")
    assert echoed_blocks(own, blocks) == ()  # shares "新闻", "Python", "数据" and no more


def test_a_reply_written_as_recall_entries_is_told_from_one_quoting_an_entry():
    from zeph_cli.context.echo import imitates_recall_entries

    seen = ('- [2026-11-28 · "How do I check tyre pressure?" · user] How do you check the air in your car?\n'
            '- [2026-11-29 · "I\'m a data engineer" · user] How do you debug a Docker container?\n\n'
            "How to check the air in your car:")
    assert imitates_recall_entries(seen)
    assert imitates_recall_entries('**[2026-11-28 · "Sourdough" · user]**\n1. **[2026-11-30 · "Bread"]** bake it')
    assert imitates_recall_entries('- [2026-11-28 · "Ports" · user] staging is on 6543')  # a reply that is one entry
    quoting = ('You said earlier:\n- [2026-11-28 · "Ports" · user] staging is on 6543\n'
               "So point the client at port 6543 and restart it.")
    assert not imitates_recall_entries(quoting)  # one entry quoted among lines of its own
    assert not imitates_recall_entries("- [x] done\n- [ ] 2026-11-28 · release")  # a task list, a date elsewhere
    assert not imitates_recall_entries("")
