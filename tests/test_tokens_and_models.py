"""Offline token counting, calibration, and model profiles (Zeus: unknown models get 64,000)."""

from __future__ import annotations

import socket

import pytest

from zeph_cli.messages import Message, ToolCallPart, ToolSpec
from zeph_cli.models import DEFAULT_CONTEXT_WINDOW, normalise, profile_for, reply_token_cap
from zeph_cli.tokens import (
    ApproximateCounter,
    Calibration,
    TiktokenCounter,
    bundled_bpe_path,
    count_message,
    count_tools,
    default_counter,
)


def test_tiktoken_counts_offline(monkeypatch, tmp_path):
    """Counting must never reach the network: sockets fail and no cache dir exists."""

    def refuse(*args, **kwargs):
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "no-cache"))
    from zeph_cli import tokens

    tokens._cl100k.cache_clear()
    counter = TiktokenCounter()
    # cl100k_base: "hello world" is two tokens ("hello", " world").
    assert counter.count("hello world") == 2
    assert counter.count("") == 0
    assert not (tmp_path / "no-cache").exists()


def test_bundled_bpe_file_comes_from_an_installed_package():
    path = bundled_bpe_path()
    assert "site-packages" in str(path) or "dist-packages" in str(path)
    assert path.name == "cl100k_base.tiktoken"


def test_default_counter_is_tiktoken_when_data_is_installed():
    assert default_counter().name == "cl100k_base"


def test_special_token_text_is_counted_as_text():
    assert TiktokenCounter().count("<|endoftext|>") > 1


def test_count_message_includes_tool_calls_and_overhead():
    counter = ApproximateCounter()
    plain = Message.assistant("x" * 40)
    with_call = Message("assistant", (*plain.parts, ToolCallPart("c1", "read_file", {"path": "a" * 40})))
    assert count_message(counter, plain) == 10 + 4
    assert count_message(counter, with_call) > count_message(counter, plain) + 10


def test_count_tools_grows_with_schema():
    counter = ApproximateCounter()
    small = ToolSpec("a", "b", {"type": "object"})
    big = ToolSpec("a", "b", {"type": "object", "properties": {"path": {"type": "string", "description": "x" * 100}}})
    assert count_tools(counter, [big]) > count_tools(counter, [small]) > 0


def test_calibration_learns_the_ratio_and_ignores_tiny_requests():
    c = Calibration()
    assert c.apply(1000) == 1000
    c = c.observe(1000, 1200)
    assert c.factor == pytest.approx(1.2) and c.samples == 1
    c2 = c.observe(1000, 1000)
    assert 1.0 < c2.factor < 1.2 and c2.samples == 2
    assert c2.observe(10, 500) is c2  # too small to learn from
    assert Calibration().observe(1000, 100_000).factor == Calibration.MAX_FACTOR


def test_calibration_from_a_server_that_under_reports_never_shrinks_the_estimate():
    """A server whose usage leaves out the tool schemas reports ~0.57 of zeph's count: the factor
    records it, but estimates stay at zeph's own count, so requests cannot grow past the budget."""
    c = Calibration()
    for _ in range(10):
        c = c.observe(1000, 570)
    assert c.factor == pytest.approx(0.57, abs=0.01)
    assert c.apply(1000) == 1000
    assert Calibration().observe(1000, 1500).apply(1000) == 1500  # over-reporting still makes them larger


@pytest.mark.parametrize(
    "name, window, output",
    [
        ("claude-sonnet-4-5-20250929", 200_000, 64_000),
        ("anthropic/claude-3-5-sonnet-latest", 200_000, 8_192),
        ("gpt-4o", 128_000, 16_384),  # Zeus: gpt-4o 128,000 / 16,384
        ("gpt-4o-mini", 128_000, 16_384),
        ("gpt-4-turbo", 128_000, 4_096),  # Zeus: gpt-4-turbo 128,000 / 4,096
        ("llama3.1:8b", 131_072, 8_192),
        ("llama3:70b", 8_192, 4_096),  # Octopus: llama3:70b 8,192
        ("/models/SmolLM2-135M-Instruct.Q4_1.gguf", 8_192, 1_024),
    ],
)
def test_known_profiles(name, window, output):
    profile = profile_for(name)
    assert (profile.context_window, profile.output_limit, profile.known) == (window, output, True)


def test_unknown_model_defaults_to_64000():
    # Zeus: "When a model is not in the predefined list, a default of 64,000 tokens is used."
    profile = profile_for("my-finetune-v3")
    assert profile.context_window == DEFAULT_CONTEXT_WINDOW == 64_000
    assert not profile.known


def test_normalise_strips_vendor_tags_and_dates():
    assert normalise("openai/GPT-4o-2024-08-06") == "gpt-4o"
    assert normalise("qwen2.5-coder:7b") == "qwen2.5-coder"


def test_reply_token_cap():
    known = profile_for("claude-3-5-haiku")
    assert reply_token_cap(0, known) == 8_192
    assert reply_token_cap(100_000, known) == 8_192  # never above the model's limit
    assert reply_token_cap(500, known) == 500
    assert reply_token_cap(0, profile_for("gpt-4-turbo")) == 4_096
