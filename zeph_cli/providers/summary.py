"""Choosing the providers for summaries, compress_context calls and probe calls.

Invariant: resolution is pure (config + environment + the main provider's
settings in, `ProviderSettings` or None out; None = use the main provider) and
every problem is one `ConfigError`/`AuthenticationError` line naming the key at
fault. No adapter or SDK is imported here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from ..config import PROVIDER_ALIASES, PROVIDER_TYPES, Config, ProviderEntry, parse_summary_model
from ..errors import AuthenticationError, ConfigError
from . import DEFAULT_MODELS, DEFAULT_URLS, KEY_ENV, URL_ENV, local_model_file
from .base import ProviderSettings

__all__ = ["compress_settings", "summary_settings", "with_model"]

SUMMARY_PROVIDER = "llm.summary_provider"
SUMMARY_MODEL = "llm.summary_model"
COMPRESS_PROVIDER = "memory.compression.compress_provider"
PROBE_MODEL = "memory.compression.probe.model"
SUBAGENT_PROVIDER = "agent.subagents.provider"
SUBAGENT_MODEL = "agent.subagents.model"


@dataclass(frozen=True)
class _Fallback:
    """Where the fields a provider spec omits come from."""

    name: str
    model: str = ""
    base_url: str = ""
    api_key_env: str = ""
    from_entry: bool = False


def summary_settings(config: Config, env: Mapping[str, str], main: ProviderSettings) -> ProviderSettings | None:
    """The summary provider: `[llm.summary_provider]`, else `[llm] summary_model`; None = the main provider."""
    llm = config.llm
    if llm.summary_provider is not None:
        spec, where = llm.summary_provider, SUMMARY_PROVIDER
    elif llm.summary_model.strip():
        spec, where = parse_summary_model(llm.summary_model), SUMMARY_MODEL
    else:
        return None
    kind = _backend(spec.type, where)
    if kind == "compatible" and spec.model:
        # For a compatible summary provider, `model` is the name of a [[llm.providers]] entry.
        named = _named_entry(config, spec.model, where)
        fallback = _fallback(config, main, named.backend, named.name)
        return _unless_main(_resolve(named.backend, "", spec, fallback, env, main, where), main)
    return _unless_main(_resolve(kind, spec.model, spec, _fallback(config, main, kind), env, main, where), main)


def compress_settings(config: Config, env: Mapping[str, str], main: ProviderSettings) -> ProviderSettings | None:
    """The provider for compress_context: a [[llm.providers]] name or a backend type; None = the main provider."""
    name = config.memory.compression.compress_provider.strip()
    if not name:
        return None
    return _unless_main(_named_provider(config, env, main, name, COMPRESS_PROVIDER), main)


def subagent_settings(config: Config, env: Mapping[str, str], main: ProviderSettings) -> ProviderSettings | None:
    """The provider sub-agents use: `[agent.subagents] provider` (a [[llm.providers]] name or a backend type)
    and `model`; None = the main provider."""
    subagents = config.agent.subagents
    name = subagents.provider.strip()
    settings = _named_provider(config, env, main, name, SUBAGENT_PROVIDER) if name else main
    return _unless_main(with_model(settings, subagents.model, SUBAGENT_MODEL), main)


def _named_provider(
    config: Config, env: Mapping[str, str], main: ProviderSettings, name: str, where: str
) -> ProviderSettings:
    """The provider `name` stands for: a [[llm.providers]] entry, else a backend type (`where` names the key)."""
    entry = config.find_provider_entry(name)
    if entry is not None:
        fallback = _fallback(config, main, entry.backend, entry.name)
        return _resolve(entry.backend, "", ProviderEntry(), fallback, env, main, where)
    kind = PROVIDER_ALIASES.get(name, name)
    if kind not in PROVIDER_TYPES:
        raise ConfigError(
            f"{where}: {name!r} is neither a [[llm.providers]] entry nor a provider type: "
            f"expected one of {', '.join(_choices(config))}"
        )
    return _resolve(kind, "", ProviderEntry(), _fallback(config, main, kind), env, main, where)


def with_model(settings: ProviderSettings, model: str, key: str = PROBE_MODEL) -> ProviderSettings:
    """`settings` with its model replaced by `model` (a .gguf path for local); empty = unchanged."""
    model = model.strip()
    if not model or model == settings.model:
        return settings
    if settings.kind == "local":
        model = local_model_file(model, key, ConfigError)
    return dataclasses.replace(settings, model=model)


def _backend(type_: str, where: str) -> str:
    kind = PROVIDER_ALIASES.get(type_, type_)
    if kind not in PROVIDER_TYPES:
        names = ", ".join([*PROVIDER_TYPES, *PROVIDER_ALIASES])
        raise ConfigError(f"{where}: unknown provider type {type_!r}: expected one of {names}")
    return kind


def _named_entry(config: Config, name: str, where: str) -> ProviderEntry:
    entry = config.find_provider_entry(name)
    if entry is None:
        names = ", ".join(p.name for p in config.llm.providers if p.name) or "none are configured"
        raise ConfigError(f"{where}: no [[llm.providers]] entry named {name!r} (entries: {names})")
    return entry


def _choices(config: Config) -> list[str]:
    return [*(p.name for p in config.llm.providers if p.name), *PROVIDER_TYPES, *PROVIDER_ALIASES]


def _fallback(config: Config, main: ProviderSettings, kind: str, name: str = "") -> _Fallback:
    """The main provider when it is this one, else the named (or first) [[llm.providers]] entry of `kind`."""
    if main.kind == kind and (not name or main.name == name):
        return _Fallback(main.name, main.model, main.base_url, main.api_key_env)
    if name:
        entry = config.find_provider_entry(name)
    else:
        entry = next((p for p in config.llm.providers if p.backend == kind), None)
    if entry is None:
        return _Fallback(kind)
    return _Fallback(entry.name or kind, entry.model, entry.base_url, entry.api_key_env, from_entry=True)


def _resolve(
    kind: str,
    model: str,
    spec: ProviderEntry,
    fallback: _Fallback,
    env: Mapping[str, str],
    main: ProviderSettings,
    where: str,
) -> ProviderSettings:
    """Fill what `model`/`spec` leave empty from `fallback`, then the environment and defaults; check the result."""
    name = fallback.name
    base_url = spec.base_url or fallback.base_url or env.get(URL_ENV.get(kind, ""), "") or DEFAULT_URLS.get(kind, "")
    key_env = spec.api_key_env or fallback.api_key_env or KEY_ENV.get(kind, "")
    api_key = env.get(key_env, "") if key_env else ""
    if kind == "compatible" and not base_url:
        if fallback.from_entry:
            raise ConfigError(
                f"{where}: provider {name!r} is OpenAI-compatible and needs an endpoint: "
                "set base_url in its [[llm.providers]] entry"
            )
        raise ConfigError(
            f"{where}: an OpenAI-compatible provider needs an endpoint: name a [[llm.providers]] entry with a base_url"
        )
    if kind in ("anthropic", "openai") and not api_key:
        raise AuthenticationError(f"{where}: no API key for {name}: set {key_env}", provider=name)
    chosen = model or fallback.model or DEFAULT_MODELS.get(kind, "")
    if kind == "local":
        chosen = local_model_file(chosen, _model_key(model, fallback, where), ConfigError)
    extra = {"device": spec.device} if spec.device else {}
    return ProviderSettings(
        kind=kind,
        name=name,
        model=chosen,
        base_url=base_url,
        api_key=api_key,
        api_key_env=key_env,
        timeout_secs=main.timeout_secs,
        max_retries=main.max_retries,
        extra=extra,
    )


def _model_key(model: str, fallback: _Fallback, where: str) -> str:
    """The setting a local model path came from, for the error when the file is missing."""
    if model:
        return where if where == SUMMARY_MODEL else f"{where}.model"
    return f"model of [[llm.providers]] entry {fallback.name!r}"


def _unless_main(settings: ProviderSettings, main: ProviderSettings) -> ProviderSettings | None:
    return None if settings == main else settings


def side_job_settings(config: Config, env: Mapping[str, str], main: ProviderSettings) -> dict[str, ProviderSettings | None]:
    """Settings per side job (summary, probe, compress, subagent) for `ProviderPool`; None = the main provider.

    The probe uses the summary provider, with `[memory.compression.probe] model` when set.
    """
    summary = summary_settings(config, env, main)
    probe_model = config.memory.compression.probe.model if config.memory.compression.probe.enabled else ""
    probe = with_model(summary or main, probe_model) if probe_model else summary
    return {"summary": summary, "probe": probe, "compress": compress_settings(config, env, main),
            "subagent": subagent_settings(config, env, main)}


def small_summarizer(config: Config, env: Mapping[str, str], sources: Mapping[str, str] | None = None) -> str:
    """The small embedded model's file name when it makes the summaries (no summary provider, and the main
    provider is the embedded model), else "" (also when the providers cannot be resolved: nothing runs then)."""
    from pathlib import Path

    from ..errors import ZephError
    from . import is_embedded_model, resolve_settings

    try:
        main = resolve_settings(config, env, sources)
        settings = summary_settings(config, env, main) or main
    except ZephError:
        return ""
    return Path(settings.model).name if settings.kind == "local" and is_embedded_model(settings.model) else ""
