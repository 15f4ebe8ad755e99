"""Reading the window a provider's context-length error states, from the real wordings;
and the precedence of windows in a model profile."""

from __future__ import annotations

import json

import pytest

from zeph_cli.errors import ContextLengthExceeded, context_limit_from_message, is_context_length_message
from zeph_cli.models import prefer_learned_window, profile_for, served_profile, with_window

REAL_WORDINGS = [
    # OpenAI
    pytest.param(
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. "
        "Please reduce the length of the messages.",
        128000,
        id="openai",
    ),
    # vLLM
    pytest.param(
        "This model's maximum context length is 3000 tokens. However, you requested 3100 tokens (3036 in the "
        "messages, 64 in the completion). Please reduce the length of the messages or completion.",
        3000,
        id="vllm",
    ),
    pytest.param(
        "'max_tokens' or 'max_completion_tokens' is too large: 4096. This model's maximum context length is 8192 "
        "tokens and your request has 5000 input tokens (4096 > 8192 - 5000).",
        8192,
        id="vllm-max-tokens",
    ),
    pytest.param(
        "The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that "
        "`max_model_len` is no smaller than the number of text tokens.",
        8192,
        id="vllm-decoder-prompt",
    ),
    # llama-cpp-python: its server's 400, and the library's own text (in its log)
    pytest.param(
        "This model's maximum context length is 2048 tokens. However, you requested 8498 tokens (8434 in the "
        "messages, 64 in the completion). Please reduce the length of the messages or completion.",
        2048,
        id="llama-cpp-python-server",
    ),
    pytest.param("Requested tokens (2195) exceed context window of 2048", 2048, id="llama-cpp-python"),
    # llama.cpp's server
    pytest.param(
        "request (5000 tokens) exceeds the available context size (4096 tokens), try increasing it",
        4096,
        id="llama-server",
    ),
    pytest.param("the request exceeds the available context size, try increasing it", None, id="llama-server-old"),
    # Anthropic
    pytest.param("prompt is too long: 210000 tokens > 200000 maximum", 200000, id="anthropic"),
    pytest.param(
        "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000, decrease input length or "
        "`max_tokens` and try again",
        200000,
        id="anthropic-max-tokens",
    ),
    # Ollama: its own wording (no number), and llama-server's error wrapped as a string
    pytest.param("the input length exceeds the context length", None, id="ollama"),
    pytest.param(
        json.dumps(
            {"error": {"code": 400, "message": "request (8889 tokens) exceeds the available context size (4096 "
                       "tokens), try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 8889,
                       "n_ctx": 4096}},
            separators=(",", ":"),
        ),
        4096,
        id="ollama-wrapped",
    ),
    # LM Studio
    pytest.param(
        "Trying to keep the first 6269 tokens when context the overflows. However, the model is loaded with context "
        "length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or "
        "provide a shorter input",
        4096,
        id="lm-studio",
    ),
    # Mistral, Gemini
    pytest.param(
        "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
        32768,
        id="mistral",
    ),
    pytest.param(
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        1048576,
        id="gemini",
    ),
    pytest.param("This endpoint's maximum context length is 131,072 tokens. However, you requested about 140,000 "
                 "tokens", 131072, id="openrouter-thousands"),
]


@pytest.mark.parametrize("text, limit", REAL_WORDINGS)
def test_the_limit_is_read_never_the_request_size(text, limit):
    assert is_context_length_message(text)
    assert context_limit_from_message(text) == limit


@pytest.mark.parametrize(
    "text",
    ["Rate limit reached for gpt-4o: Limit 30000, Used 29554, Requested 1203.", "", "maximum context length"],
)
def test_no_limit_in_other_text(text):
    assert context_limit_from_message(text) is None


def test_context_length_exceeded_carries_an_optional_limit():
    plain = ContextLengthExceeded("too long", provider="p", status=400)
    stated = ContextLengthExceeded("too long", provider="p", status=400, limit=2048)
    assert (plain.limit, stated.limit, stated.status, stated.provider) == (None, 2048, 400, "p")


# ---- where a profile's window comes from --------------------------------------------


def test_table_and_default_sources():
    assert profile_for("gpt-4o").window_source == "model table"
    assert profile_for("my-finetune").window_source == "default guess (unknown model)"


def test_a_server_window_overrides_the_table_and_bounds_the_reply():
    profile = served_profile("smollm2-135m", 2048, "llama.cpp /props n_ctx")
    assert (profile.context_window, profile.output_limit) == (2048, 1024)
    assert profile.window_source == "server: llama.cpp /props n_ctx"
    assert not profile.window_is_guess
    assert profile_for("gpt-4o").window_is_guess and profile_for("my-finetune").window_is_guess
    assert served_profile("gpt-4o", None, "") == profile_for("gpt-4o")


def test_with_window_keeps_name_and_knowledge():
    grown = with_window(profile_for("llama3"), 32768, "x")
    assert (grown.name, grown.known, grown.context_window, grown.output_limit) == ("llama3", True, 32768, 4096)


def test_learned_window_beats_the_table_but_not_the_server():
    learned = (2048, "the server's context-length error")
    from_table = prefer_learned_window(profile_for("smollm2"), learned)
    assert (from_table.context_window, from_table.window_source) == (2048, "learned: the server's context-length error")

    from_server = served_profile("smollm2", 4096, "llama.cpp /props n_ctx")
    assert prefer_learned_window(from_server, learned) is from_server
    assert prefer_learned_window(profile_for("smollm2"), None) == profile_for("smollm2")


def test_a_capped_table_window_is_still_a_guess():
    capped = with_window(profile_for("llama3.1"), 8192, "model table, capped at 8192")
    assert prefer_learned_window(capped, (4096, "error")).context_window == 4096
    runtime = with_window(profile_for("smollm2"), 2048, "local model n_ctx")
    assert prefer_learned_window(runtime, (1024, "error")) is runtime
