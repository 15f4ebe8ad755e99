"""Summary, compress_context and probe provider resolution (spec: "Summary Provider Configuration")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes import openai_wire as wire
from zeph_cli.config import Config, load_config
from zeph_cli.errors import AuthenticationError, ConfigError
from zeph_cli.messages import Message, ReplyBuilder
from zeph_cli.providers import create_provider, resolve_settings
from zeph_cli.providers.base import ChatRequest, ProviderSettings
from zeph_cli.providers.summary import compress_settings, summary_settings, with_model

OLLAMA_MAIN = '[llm]\nprovider = "ollama"\nmodel = "llama3.2:3b"\nbase_url = "http://ollama.lan:11434"\n'
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-test", "OPENAI_API_KEY": "sk-openai-test"}


def load(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> tuple[Config, ProviderSettings, dict]:
    """The config in `text`, the main provider it resolves to, and the environment used."""
    env = dict(KEYS if env is None else env)
    path = tmp_path / "cfg" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    loaded = load_config(config_path=str(path), env=env)
    assert loaded.warnings == []
    return loaded.config, resolve_settings(loaded.config, env, loaded.sources), env


def summary(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> ProviderSettings | None:
    config, main, env = load(tmp_path, text, env)
    return summary_settings(config, env, main)


def summary_error(tmp_path: Path, text: str, env: dict[str, str] | None = None, error=ConfigError) -> str:
    config, main, env = load(tmp_path, text, env)
    with pytest.raises(error) as info:
        summary_settings(config, env, main)
    message = str(info.value)
    assert "\n" not in message
    return message


def gguf(tmp_path: Path, name: str = "tiny.gguf") -> Path:
    path = tmp_path / "models" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"GGUF\x03\x00\x00\x00")
    return path


# ---- nothing configured -------------------------------------------------------------------------


def test_by_default_summaries_use_the_primary_provider(tmp_path):
    # "By default, tool-pair summarization uses the primary LLM provider."
    assert summary(tmp_path, OLLAMA_MAIN) is None


# ---- [llm.summary_provider]: the spec's examples ---------------------------------------------------


def test_claude_with_explicit_model(tmp_path):
    # [llm.summary_provider] type = "claude", model = "claude-haiku-4-5-20251001"
    s = summary(tmp_path, OLLAMA_MAIN + '[llm.summary_provider]\ntype = "claude"\nmodel = "claude-haiku-4-5-20251001"\n')
    assert (s.kind, s.name, s.model) == ("anthropic", "anthropic", "claude-haiku-4-5-20251001")
    assert (s.api_key, s.api_key_env, s.base_url) == ("sk-ant-test", "ANTHROPIC_API_KEY", "https://api.anthropic.com")


def test_claude_model_falls_back_to_the_claude_provider_entry(tmp_path):
    # "# Claude — model falls back to the claude provider entry when omitted"
    text = (
        OLLAMA_MAIN
        + '[[llm.providers]]\nname = "fast-claude"\ntype = "claude"\nmodel = "claude-haiku-4-5"\napi_key_env = "MY_CLAUDE_KEY"\n'
        + '[llm.summary_provider]\ntype = "claude"\n'
    )
    s = summary(tmp_path, text, {"MY_CLAUDE_KEY": "sk-mine"})
    assert (s.kind, s.name, s.model) == ("anthropic", "fast-claude", "claude-haiku-4-5")
    assert (s.api_key, s.api_key_env) == ("sk-mine", "MY_CLAUDE_KEY")


def test_claude_without_any_entry_uses_the_default_model(tmp_path):
    s = summary(tmp_path, OLLAMA_MAIN + '[llm.summary_provider]\ntype = "claude"\n')
    assert (s.kind, s.model) == ("anthropic", "claude-sonnet-4-6")


def test_openai_with_explicit_model(tmp_path):
    # [llm.summary_provider] type = "openai", model = "gpt-4o-mini"
    s = summary(tmp_path, OLLAMA_MAIN + '[llm.summary_provider]\ntype = "openai"\nmodel = "gpt-4o-mini"\n')
    assert (s.kind, s.model, s.base_url, s.api_key) == ("openai", "gpt-4o-mini", "https://api.openai.com/v1", "sk-openai-test")


def test_openai_model_and_base_url_fall_back_to_the_openai_provider_entry(tmp_path):
    # "# OpenAI — model/base_url fall back to the openai provider entry when omitted"
    text = (
        OLLAMA_MAIN
        + '[[llm.providers]]\nname = "work-openai"\ntype = "openai"\nmodel = "gpt-4.1-nano"\nbase_url = "https://proxy.example/v1"\n'
        + '[llm.summary_provider]\ntype = "openai"\n'
    )
    s = summary(tmp_path, text)
    assert (s.name, s.model, s.base_url) == ("work-openai", "gpt-4.1-nano", "https://proxy.example/v1")


def test_openai_own_model_beats_the_entry_but_keeps_its_base_url(tmp_path):
    text = (
        OLLAMA_MAIN
        + '[[llm.providers]]\nname = "work-openai"\ntype = "openai"\nmodel = "gpt-4.1-nano"\nbase_url = "https://proxy.example/v1"\n'
        + '[llm.summary_provider]\ntype = "openai"\nmodel = "gpt-4o-mini"\n'
    )
    s = summary(tmp_path, text)
    assert (s.model, s.base_url) == ("gpt-4o-mini", "https://proxy.example/v1")


def test_ollama_with_explicit_model_and_base_url(tmp_path):
    # [llm.summary_provider] type = "ollama", model = "qwen3:1.7b", base_url = "http://localhost:11434"
    text = OLLAMA_MAIN + '[llm.summary_provider]\ntype = "ollama"\nmodel = "qwen3:1.7b"\nbase_url = "http://localhost:11434"\n'
    s = summary(tmp_path, text)
    assert (s.kind, s.model, s.base_url, s.api_key) == ("ollama", "qwen3:1.7b", "http://localhost:11434", "")


def test_ollama_model_and_base_url_fall_back_to_llm(tmp_path):
    # "# Ollama — model/base_url fall back to [llm] when omitted"
    s = summary(tmp_path, OLLAMA_MAIN + '[llm.summary_provider]\ntype = "ollama"\nmodel = "qwen3:1.7b"\n')
    assert (s.model, s.base_url) == ("qwen3:1.7b", "http://ollama.lan:11434")


def test_ollama_fully_omitted_is_the_main_provider(tmp_path):
    assert summary(tmp_path, OLLAMA_MAIN + '[llm.summary_provider]\ntype = "ollama"\n') is None


def test_ollama_when_main_is_hosted_uses_ollama_defaults(tmp_path):
    s = summary(tmp_path, '[llm]\nprovider = "anthropic"\n[llm.summary_provider]\ntype = "ollama"\n', {**KEYS, "OLLAMA_HOST": ""})
    assert (s.kind, s.model, s.base_url) == ("ollama", "llama3.2", "http://127.0.0.1:11434")


LM_STUDIO = '[[llm.providers]]\nname = "lm-studio"\ntype = "compatible"\nbase_url = "http://localhost:8080/v1"\nmodel = "llama-3.2-1b"\n'


def test_compatible_model_is_the_provider_entry_name(tmp_path):
    # [llm.summary_provider] type = "compatible", model = "lm-studio"   # matches [[llm.providers]] name field
    s = summary(tmp_path, OLLAMA_MAIN + LM_STUDIO + '[llm.summary_provider]\ntype = "compatible"\nmodel = "lm-studio"\n')
    assert (s.kind, s.name, s.model, s.base_url) == ("compatible", "lm-studio", "llama-3.2-1b", "http://localhost:8080/v1")
    assert s.api_key == "sk-openai-test"  # the compatible backend's key variable, OPENAI_API_KEY, when set


def test_candle_spec_example_names_the_key_when_the_model_is_not_a_gguf_file(tmp_path):
    # type = "candle", model = "mistral-7b-instruct" (a HuggingFace repo id): only local .gguf files load
    text = OLLAMA_MAIN + '[llm.summary_provider]\ntype = "candle"\nmodel = "mistral-7b-instruct"\ndevice = "metal"\n'
    message = summary_error(tmp_path, text)
    assert message == "local model file not found: mistral-7b-instruct (llm.summary_provider.model must be a .gguf path)"


def test_candle_with_a_gguf_path_and_device(tmp_path):
    model = gguf(tmp_path)
    s = summary(tmp_path, OLLAMA_MAIN + f'[llm.summary_provider]\ntype = "candle"\nmodel = "{model}"\ndevice = "metal"\n')
    assert (s.kind, s.name, s.model) == ("local", "local", str(model))
    assert s.extra == {"device": "metal"}


def test_candle_without_model_is_the_embedded_model(tmp_path):
    s = summary(tmp_path, OLLAMA_MAIN + '[llm.summary_provider]\ntype = "candle"\n')
    assert s.kind == "local" and s.model.endswith("SmolLM2-135M-Instruct.Q4_1.gguf")


def test_timeout_and_retries_follow_the_main_provider(tmp_path):
    text = OLLAMA_MAIN + 'timeout_secs = 33\nmax_retries = 5\n[llm.summary_provider]\ntype = "openai"\n'
    s = summary(tmp_path, text)
    assert (s.timeout_secs, s.max_retries) == (33.0, 5)


# ---- summary_model shorthand ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shorthand, kind, model",
    [
        ("claude", "anthropic", "claude-haiku-4-5"),  # "Claude with model from the claude provider entry"
        ("claude/claude-haiku-4-5-20251001", "anthropic", "claude-haiku-4-5-20251001"),  # "Claude with explicit model"
        ("openai", "openai", "gpt-4.1-nano"),  # "OpenAI with model from the openai provider entry"
        ("openai/gpt-4o-mini", "openai", "gpt-4o-mini"),  # "OpenAI with explicit model"
        ("compatible/my-server", "compatible", "served-model"),  # "OpenAI-compatible using [[llm.providers]] name"
        ("ollama/qwen3:1.7b", "ollama", "qwen3:1.7b"),  # "Ollama with explicit model"
    ],
)
def test_summary_model_shorthand(tmp_path, shorthand, kind, model):
    entries = (
        '[[llm.providers]]\nname = "c"\ntype = "claude"\nmodel = "claude-haiku-4-5"\n'
        '[[llm.providers]]\nname = "o"\ntype = "openai"\nmodel = "gpt-4.1-nano"\n'
        '[[llm.providers]]\nname = "my-server"\ntype = "compatible"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "served-model"\n'
    )
    s = summary(tmp_path, OLLAMA_MAIN + f'summary_model = "{shorthand}"\n' + entries)
    assert (s.kind, s.model) == (kind, model)


def test_summary_model_candle_is_local_inference(tmp_path):
    # summary_model = "candle"   # Local candle inference
    s = summary(tmp_path, OLLAMA_MAIN + 'summary_model = "candle"\n')
    assert s.kind == "local" and s.model.endswith(".gguf")


def test_summary_provider_takes_precedence_over_summary_model(tmp_path):
    # "[llm.summary_provider] takes precedence when both are set."
    text = OLLAMA_MAIN + 'summary_model = "openai/gpt-4o-mini"\n[llm.summary_provider]\ntype = "ollama"\nmodel = "qwen3:1.7b"\n'
    s = summary(tmp_path, text)
    assert (s.kind, s.model) == ("ollama", "qwen3:1.7b")


# ---- errors: one line naming the key --------------------------------------------------------------


def test_missing_api_key_names_the_variable(tmp_path):
    message = summary_error(
        tmp_path, OLLAMA_MAIN + '[llm.summary_provider]\ntype = "claude"\n', env={}, error=AuthenticationError
    )
    assert message == "llm.summary_provider: no API key for anthropic: set ANTHROPIC_API_KEY"


def test_missing_api_key_from_shorthand_names_summary_model_and_custom_variable(tmp_path):
    text = OLLAMA_MAIN + 'summary_model = "openai"\n[[llm.providers]]\nname = "o"\ntype = "openai"\napi_key_env = "WORK_KEY"\n'
    message = summary_error(tmp_path, text, env={}, error=AuthenticationError)
    assert message == "llm.summary_model: no API key for o: set WORK_KEY"


def test_unknown_compatible_entry_name(tmp_path):
    message = summary_error(tmp_path, OLLAMA_MAIN + 'summary_model = "compatible/lm-studoi"\n' + LM_STUDIO)
    assert message == "llm.summary_model: no [[llm.providers]] entry named 'lm-studoi' (entries: lm-studio)"


def test_unknown_compatible_entry_name_without_any_entries(tmp_path):
    message = summary_error(tmp_path, OLLAMA_MAIN + '[llm.summary_provider]\ntype = "compatible"\nmodel = "x"\n')
    assert message == "llm.summary_provider: no [[llm.providers]] entry named 'x' (entries: none are configured)"


def test_compatible_entry_without_base_url(tmp_path):
    text = OLLAMA_MAIN + 'summary_model = "compatible/box"\n[[llm.providers]]\nname = "box"\ntype = "compatible"\nmodel = "m"\n'
    message = summary_error(tmp_path, text)
    assert message == (
        "llm.summary_model: provider 'box' is OpenAI-compatible and needs an endpoint: "
        "set base_url in its [[llm.providers]] entry"
    )


def test_compatible_without_entry_name(tmp_path):
    message = summary_error(tmp_path, OLLAMA_MAIN + 'summary_model = "compatible"\n')
    assert message.startswith("llm.summary_model: an OpenAI-compatible provider needs an endpoint")


def test_missing_gguf_from_shorthand(tmp_path):
    missing = tmp_path / "nope.gguf"
    message = summary_error(tmp_path, OLLAMA_MAIN + f'summary_model = "candle/{missing}"\n')
    assert message == f"local model file not found: {missing} (llm.summary_model must be a .gguf path)"


# ---- compress_provider --------------------------------------------------------------------------


def compress(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> ProviderSettings | None:
    config, main, env = load(tmp_path, text, env)
    return compress_settings(config, env, main)


def test_compress_provider_empty_is_the_main_provider(tmp_path):
    # "When compress_provider is unset, the default LLM provider is used."
    assert compress(tmp_path, OLLAMA_MAIN) is None


def test_compress_provider_names_a_provider_entry(tmp_path):
    s = compress(tmp_path, OLLAMA_MAIN + LM_STUDIO + '[memory.compression]\ncompress_provider = "lm-studio"\n')
    assert (s.kind, s.name, s.model, s.base_url) == ("compatible", "lm-studio", "llama-3.2-1b", "http://localhost:8080/v1")


def test_compress_provider_names_a_backend_type(tmp_path):
    s = compress(tmp_path, OLLAMA_MAIN + '[memory.compression]\ncompress_provider = "claude"\n')
    assert (s.kind, s.model, s.api_key) == ("anthropic", "claude-sonnet-4-6", "sk-ant-test")


def test_compress_provider_naming_the_main_provider_is_the_main_provider(tmp_path):
    text = '[llm]\nprovider = "lm-studio"\n' + LM_STUDIO + '[memory.compression]\ncompress_provider = "lm-studio"\n'
    assert compress(tmp_path, text) is None


def test_compress_provider_unknown_name(tmp_path):
    config, main, env = load(tmp_path, OLLAMA_MAIN + LM_STUDIO + '[memory.compression]\ncompress_provider = "lmstudio"\n')
    with pytest.raises(ConfigError) as info:
        compress_settings(config, env, main)
    assert str(info.value).startswith(
        "memory.compression.compress_provider: 'lmstudio' is neither a [[llm.providers]] entry nor a provider type: "
        "expected one of lm-studio, anthropic,"
    )


def test_compress_provider_missing_key(tmp_path):
    config, main, env = load(tmp_path, OLLAMA_MAIN + '[memory.compression]\ncompress_provider = "openai"\n', env={})
    with pytest.raises(AuthenticationError) as info:
        compress_settings(config, env, main)
    assert str(info.value) == "memory.compression.compress_provider: no API key for openai: set OPENAI_API_KEY"


# ---- probe model override ---------------------------------------------------------------------------


def test_probe_model_empty_leaves_the_provider_unchanged(tmp_path):
    # 'model | string | "" | Model override for probe LLM calls. Empty = use summary provider.'
    s = summary(tmp_path, OLLAMA_MAIN + 'summary_model = "openai/gpt-4o-mini"\n')
    assert with_model(s, "") is s
    assert with_model(s, "  ") is s


def test_probe_model_overrides_only_the_model(tmp_path):
    s = summary(tmp_path, OLLAMA_MAIN + 'summary_model = "openai/gpt-4o-mini"\n')
    probe = with_model(s, "gpt-4.1-nano")
    assert probe.model == "gpt-4.1-nano"
    assert (probe.kind, probe.base_url, probe.api_key) == (s.kind, s.base_url, s.api_key)
    assert s.model == "gpt-4o-mini"


def test_probe_model_for_local_must_be_a_gguf_file(tmp_path):
    s = summary(tmp_path, OLLAMA_MAIN + 'summary_model = "candle"\n')
    with pytest.raises(ConfigError) as info:
        with_model(s, str(tmp_path / "missing.gguf"))
    assert str(info.value) == (
        f"local model file not found: {tmp_path / 'missing.gguf'} (memory.compression.probe.model must be a .gguf path)"
    )
    assert with_model(s, str(gguf(tmp_path))).model == str(tmp_path / "models" / "tiny.gguf")


# ---- end to end: a compatible summary provider over the wire -----------------------------------------


async def test_compatible_summary_provider_sends_its_model_to_the_entry_endpoint(tmp_path, fake_server):
    text = (
        OLLAMA_MAIN
        + 'summary_model = "compatible/lm-studio"\n'
        + f'[[llm.providers]]\nname = "lm-studio"\ntype = "compatible"\nbase_url = "{fake_server.url}/v1"\nmodel = "llama-3.2-1b"\n'
    )
    settings = summary(tmp_path, text, env={"OPENAI_API_KEY": "sk-local"})
    fake_server.queue(wire.json_response(wire.completion(content="Summary: edited a.py.")), path="/v1/chat/completions")
    provider = create_provider(settings)
    try:
        request = ChatRequest(messages=(Message.user("Summarize the tool call."),), max_tokens=200, stream=False)
        reply = ReplyBuilder.from_events([event async for event in provider.stream(request)])
    finally:
        await provider.aclose()

    assert reply.content == "Summary: edited a.py."
    [sent] = fake_server.requests_to("/v1/chat/completions")
    assert sent.json["model"] == "llama-3.2-1b"
    assert sent.json["messages"][-1] == {"role": "user", "content": "Summarize the tool call."}
    assert sent.headers["authorization"] == "Bearer sk-local"
