"""What compaction tells the user (`CompactionResult.describe`) and the side-job provider pool."""

from __future__ import annotations

import pytest

from zeph_cli.context.compaction.result import CompactionResult
from zeph_cli.context.probe import REJECTED_MESSAGE
from zeph_cli.providers.base import ProviderSettings
from zeph_cli.providers.openai import OpenAIProvider
from zeph_cli.providers.pool import ProviderPool


def test_llm_compaction_says_how_many_messages_and_tokens():
    result = CompactionResult("hard", 12_000, 3_000, 30, "chunked", 7)
    assert result.describe() == "compacted 30 messages into a chunked summary: 12,000 → 3,000 tokens"
    assert result.tokens_saved == 9_000


def test_metadata_fallback_and_probe_verdict_are_named():
    assert "metadata summary (the summarizer failed)" in CompactionResult("hard", 10, 5, 4, "metadata").describe()
    probed = CompactionResult("manual", 10, 5, 4, "single", probe_verdict="SoftFail", probe_score=0.5)
    assert probed.describe().endswith("· probe SoftFail (0.50)")


def test_soft_tier_says_what_it_pruned_and_applied():
    assert CompactionResult("soft", 900, 400, outputs_pruned=1).describe() == "pruned 1 old tool output: 900 → 400 tokens"
    both = CompactionResult("soft", 900, 400, outputs_pruned=3, summaries_applied=2).describe()
    assert both == "applied 2 tool summaries and pruned 3 old tool outputs: 900 → 400 tokens"


def test_a_probe_hard_fail_uses_the_spec_wording_and_saves_nothing():
    rejected = CompactionResult("hard", 900, 900, method="single", probe_verdict="HardFail", probe_score=0.1)
    assert rejected.rejected and rejected.tokens_saved == 0
    assert rejected.describe() == REJECTED_MESSAGE == (
        "Compaction rejected: summary quality below threshold. Original context preserved."
    )


def test_nothing_to_compact_says_why():
    skipped = CompactionResult("manual", 500, 500, 1, skipped="fewer than 2 messages before the preserved tail")
    assert skipped.describe() == "nothing to compact: fewer than 2 messages before the preserved tail"


def settings(model: str) -> ProviderSettings:
    return ProviderSettings(kind="compatible", name="c", model=model, base_url="http://127.0.0.1:9/v1", api_key="k")


async def test_the_pool_reuses_the_main_provider_and_builds_each_other_one_once():
    main = OpenAIProvider(settings("main-model"))
    pool = ProviderPool(main, {"summary": settings("cheap"), "probe": settings("cheap"), "compress": None})
    try:
        assert pool.get("compress") is main
        summary = pool.get("summary")
        assert summary is not main and summary.model == "cheap"
        assert pool.get("probe") is summary  # same settings, one adapter
        assert pool.label("summary") == "cheap" and pool.label("compress") == "main-model"
        same_as_main = ProviderPool(main, {"summary": settings("main-model")})
        assert same_as_main.get("summary") is main
    finally:
        await pool.aclose()
        await main.aclose()
    assert pool._built == []


def test_the_pool_refuses_unknown_purposes():
    main = OpenAIProvider(settings("m"))
    with pytest.raises(ValueError, match="unknown provider purpose"):
        ProviderPool(main, {"sumary": None})
    with pytest.raises(ValueError, match="unknown provider purpose"):
        ProviderPool(main).get("summery")
