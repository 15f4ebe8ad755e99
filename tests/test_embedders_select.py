"""Which embedder a config selects, and that choosing it imports nothing heavy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from zeph_cli.config import load_config
from zeph_cli.features.memory.embedders.select import EMBEDDED, EmbeddingChoice, choose_embedding, describe_embedder, embedder_for
from zeph_cli.providers import resolve_settings

ROOT = Path(__file__).resolve().parents[1]


def chosen(tmp_path: Path, toml: str = "", env: dict[str, str] | None = None, overrides=None):
    path = tmp_path / "config.toml"
    path.write_text(toml)
    loaded = load_config(config_path=str(path), env=dict(env or {}), overrides=overrides)
    settings = resolve_settings(loaded.config, dict(env or {}), loaded.sources)
    return loaded, settings, choose_embedding(loaded.config, settings, sources=loaded.sources)


def test_embedding_model_on_an_openai_provider(tmp_path):
    loaded, settings, choice = chosen(
        tmp_path, '[llm]\nprovider = "openai"\nembedding_model = "text-embedding-3-small"\n', {"OPENAI_API_KEY": "sk-x"}
    )
    assert (choice.wire, choice.model, choice.base_url) == ("openai", "text-embedding-3-small", "https://api.openai.com/v1")
    assert choice.stored_model == "openai/text-embedding-3-small@api.openai.com"
    assert describe_embedder(loaded.config, settings, sources=loaded.sources) == (
        "openai text-embedding-3-small at https://api.openai.com/v1"
    )
    embedder = embedder_for(loaded.config, settings, sources=loaded.sources)
    assert type(embedder).__name__ == "OpenAIEmbedder" and embedder.model == choice.stored_model


def test_embedding_model_from_the_environment_on_ollama(tmp_path):
    env = {"ZEPH_LLM_PROVIDER": "ollama", "ZEPH_LLM_EMBEDDING_MODEL": "nomic-embed-text", "OLLAMA_HOST": "http://gpu:11434"}
    loaded, settings, choice = chosen(tmp_path, env=env)
    assert (choice.wire, choice.model, choice.base_url) == ("ollama", "nomic-embed-text", "http://gpu:11434")
    embedder = embedder_for(loaded.config, settings, sources=loaded.sources)
    assert type(embedder).__name__ == "OllamaEmbedder" and embedder.model == "ollama/nomic-embed-text@gpu:11434"


def test_no_embedding_model_means_the_embedded_embedder(tmp_path):
    loaded, settings, choice = chosen(tmp_path, '[llm]\nprovider = "openai"\n', {"OPENAI_API_KEY": "sk-x"})
    assert choice == EMBEDDED
    assert describe_embedder(loaded.config, settings) == "embedded minilm/all-MiniLM-L6-v2-int8 (offline)"
    embedder = embedder_for(loaded.config, settings)
    assert type(embedder).__name__ == "MiniLMEmbedder" and embedder.model == "minilm/all-MiniLM-L6-v2-int8"
    assert embedder is embedder_for(loaded.config, None)  # one instance per process: its files are read once


def test_memory_embedder_names_the_offline_embedder(tmp_path):
    toml = '[llm]\nprovider = "anthropic"\n[memory]\nembedder = "wordllama"\n'
    loaded, settings, choice = chosen(tmp_path, toml, {"ANTHROPIC_API_KEY": "sk-ant-x"})
    assert choice == EmbeddingChoice("embedded", "wordllama/l2_supercat_256")
    assert describe_embedder(loaded.config, settings) == "embedded wordllama/l2_supercat_256 (offline)"
    embedder = embedder_for(loaded.config, settings)
    assert type(embedder).__name__ == "EmbeddedEmbedder" and embedder.model == choice.stored_model
    # from the environment too, and for an openai provider without an embedding model
    loaded, settings, choice = chosen(tmp_path, '[llm]\nprovider = "openai"\n',
                                      {"OPENAI_API_KEY": "sk-x", "ZEPH_MEMORY_EMBEDDER": "wordllama"})
    assert choice.model == "wordllama/l2_supercat_256"
    # a provider's embedding model still wins: the offline embedder is what embeds when no endpoint does
    toml = '[llm]\nprovider = "openai"\nembedding_model = "text-embedding-3-small"\n[memory]\nembedder = "wordllama"\n'
    _, _, choice = chosen(tmp_path, toml, {"OPENAI_API_KEY": "sk-x"})
    assert (choice.wire, choice.model) == ("openai", "text-embedding-3-small")


def test_an_unknown_embedder_is_a_config_error_naming_the_choices(tmp_path):
    import pytest

    from zeph_cli.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        chosen(tmp_path, '[memory]\nembedder = "potion"\n')
    assert "memory.embedder" in str(caught.value) and "minilm" in str(caught.value) and "wordllama" in str(caught.value)


def test_anthropic_or_no_resolved_provider_means_the_embedded_embedder(tmp_path):
    toml = '[llm]\nprovider = "anthropic"\nembedding_model = "text-embedding-3-small"\n'
    loaded, settings, choice = chosen(tmp_path, toml, {"ANTHROPIC_API_KEY": "sk-ant-x"})
    assert choice == EMBEDDED
    assert choose_embedding(loaded.config, None) == EMBEDDED


def test_the_selected_entrys_embedding_model_applies(tmp_path):
    toml = (
        '[llm]\nprovider = "box"\nembedding_model = "text-embedding-3-small"\n'
        '[[llm.providers]]\nname = "box"\ntype = "compatible"\nbase_url = "http://box:8080/v1"\n'
        'embedding_model = "bge-small"\n'
        '[[llm.providers]]\nname = "other"\ntype = "ollama"\nembedding_model = "nomic-embed-text"\n'
    )
    loaded, settings, choice = chosen(tmp_path, toml)
    assert (choice.wire, choice.model, choice.base_url, choice.provider) == ("openai", "bge-small", "http://box:8080/v1", "box")
    assert describe_embedder(loaded.config, settings) == "box bge-small at http://box:8080/v1"


def test_an_entry_without_its_own_uses_the_llm_embedding_model(tmp_path):
    toml = (
        '[llm]\nprovider = "box"\nembedding_model = "bge-small"\n'
        '[[llm.providers]]\nname = "box"\ntype = "compatible"\nbase_url = "http://box:8080/v1"\n'
    )
    _, _, choice = chosen(tmp_path, toml)
    assert (choice.model, choice.base_url) == ("bge-small", "http://box:8080/v1")


def test_a_provider_picked_on_the_command_line_does_not_inherit_the_files_embedding_model(tmp_path):
    toml = '[llm]\nprovider = "openai"\nembedding_model = "text-embedding-3-small"\n'
    overrides = {"llm.provider": ("ollama", "--provider")}
    _, _, choice = chosen(tmp_path, toml, {"OPENAI_API_KEY": "sk-x"}, overrides)
    assert choice == EMBEDDED
    # ...but one given as strongly as the provider does apply
    _, _, choice = chosen(tmp_path, "", {"ZEPH_LLM_PROVIDER": "ollama", "ZEPH_LLM_EMBEDDING_MODEL": "nomic-embed-text"})
    assert choice.model == "nomic-embed-text"


def test_choosing_imports_no_numpy_sdk_onnxruntime_or_wordllama():
    code = (
        "import sys\n"
        "import zeph_cli.features.memory.embedders.base, zeph_cli.features.memory.embedders.select\n"
        "import zeph_cli.features.memory.embedders.embedded\n"
        "from zeph_cli.config import Config\n"
        "from zeph_cli.features.memory.embedders.select import describe_embedder, embedder_for\n"
        "print(describe_embedder(Config(), None), embedder_for(Config(), None).model)\n"
        "heavy = {'numpy', 'openai', 'ollama', 'wordllama', 'tokenizers', 'safetensors', 'httpx', 'onnxruntime'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 0, result.stderr
    described, imported = result.stdout.splitlines()
    assert described == "embedded minilm/all-MiniLM-L6-v2-int8 (offline) minilm/all-MiniLM-L6-v2-int8"
    assert imported == "[]"
