"""zeph_cli.config: defaults from the spec, env variables, precedence, validation, the example file, the CLI."""

from __future__ import annotations

import os
import json
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
import tomli_w

from tests.cli_helpers import ZEPH
from zeph_cli.config import (
    KEYS,
    Config,
    ProviderEntry,
    load_config,
    parse_summary_model,
    resolve_config_path,
    to_toml_dict,
)
from zeph_cli.errors import ConfigError

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "config.example.toml"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def load_text(tmp_path: Path, text: str, env: dict[str, str] | None = None, **kw):
    """Load a config file holding `text`, with an environment holding only `env`."""
    path = write(tmp_path / "cfg" / "config.toml", text)
    return load_config(config_path=str(path), env=dict(env or {}), **kw)


def load_error(tmp_path: Path, text: str, env: dict[str, str] | None = None, **kw) -> str:
    with pytest.raises(ConfigError) as info:
        load_text(tmp_path, text, env, **kw)
    return str(info.value)


# ---- defaults (spec: "Context Engineering" configuration and env tables) ------------------------

SPEC_DEFAULTS = [
    # "All context engineering features are disabled by default (context_budget_tokens = 0)."
    # Env table: "ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS | Context budget in tokens | 0 (unlimited)"
    ("memory.context_budget_tokens", 0),
    # "soft_compaction_threshold = 0.60  # Soft tier: prune tool outputs + apply deferred summaries (no LLM)"
    ("memory.soft_compaction_threshold", 0.60),
    # "hard_compaction_threshold = 0.90  # Hard tier: full LLM summarization when usage exceeds this fraction"
    ("memory.hard_compaction_threshold", 0.90),
    # "compaction_preserve_tail = 4      # Keep last N messages during compaction"
    ("memory.compaction_preserve_tail", 4),
    # "prune_protect_tokens = 40000      # Protect recent N tokens from Tier 1 tool output pruning"
    ("memory.prune_protect_tokens", 40000),
    # "cross_session_score_threshold = 0.35  # Minimum relevance for cross-session results (0.0-1.0)"
    ("memory.cross_session_score_threshold", 0.35),
    # "tool_call_cutoff = 6              # Summarize oldest tool pair when visible pairs exceed this"
    ("memory.tool_call_cutoff", 6),
    # "recall_limit = 5                  # Max semantically relevant messages to inject"
    ("memory.semantic.recall_limit", 5),
    # Env table: "ZEPH_MEMORY_SEMANTIC_TEMPORAL_DECAY_ENABLED | Enable temporal decay scoring | false"
    ("memory.semantic.temporal_decay_enabled", False),
    # "Configure via memory.semantic.temporal_decay_enabled and temporal_decay_half_life_days (default: 30)."
    ("memory.semantic.temporal_decay_half_life_days", 30),
    # Env table: "ZEPH_MEMORY_SEMANTIC_MMR_ENABLED | Enable MMR re-ranking | false"
    ("memory.semantic.mmr_enabled", False),
    # "Configure via memory.semantic.mmr_enabled and mmr_lambda (default: 0.7, range 0.0-1.0)."
    ("memory.semantic.mmr_lambda", 0.7),
    # 'strategy = "heuristic"   # Only option currently; selected by default'
    ("memory.routing.strategy", "heuristic"),
    # 'strategy = "proactive"            # "reactive" (default) or "proactive"'
    ("memory.compression.strategy", "reactive"),
    # "threshold_tokens = 80000          # Proactive: fire when context exceeds this (>= 1000)"
    ("memory.compression.threshold_tokens", 80000),
    # "max_summary_tokens = 4000         # Proactive: summary cap (>= 128)"
    ("memory.compression.max_summary_tokens", 4000),
    # "When compress_provider is unset, the default LLM provider is used."
    ("memory.compression.compress_provider", ""),
    # Probe table: "enabled | boolean | false | Enable probe validation after each hard compaction"
    ("memory.compression.probe.enabled", False),
    # Probe table: 'model | string | "" | Model override for probe LLM calls. Empty = use summary provider.'
    ("memory.compression.probe.model", ""),
    # Probe table: "threshold | float | 0.6 | Minimum average score for Pass verdict"
    ("memory.compression.probe.threshold", 0.6),
    # Probe table: "hard_fail_threshold | float | 0.35 | Score below this triggers HardFail (blocks compaction)"
    ("memory.compression.probe.hard_fail_threshold", 0.35),
    # Probe table: "max_questions | integer | 3 | Number of factual questions generated per probe"
    ("memory.compression.probe.max_questions", 3),
    # Probe table: "timeout_secs | integer | 15 | Timeout for both LLM calls combined"
    ("memory.compression.probe.timeout_secs", 15),
    # "The feature is opt-in (enabled = false by default)."  ([memory.compression_guidelines])
    ("memory.compression_guidelines.enabled", False),
    # "update_threshold = 5             # Failure pairs needed to trigger a guidelines update (default: 5)"
    ("memory.compression_guidelines.update_threshold", 5),
    # "max_guidelines_tokens = 500      # Token budget for the synthesized guidelines (default: 500)"
    ("memory.compression_guidelines.max_guidelines_tokens", 500),
    # "max_pairs_per_update = 10        # Pairs consumed per update cycle (default: 10)"
    ("memory.compression_guidelines.max_pairs_per_update", 10),
    # "detection_window_turns = 10      # Turns to watch for context loss after hard compaction (default: 10)"
    ("memory.compression_guidelines.detection_window_turns", 10),
    # "update_interval_secs = 300       # Background updater interval in seconds (default: 300)"
    ("memory.compression_guidelines.update_interval_secs", 300),
    # "max_stored_pairs = 100           # Cleanup threshold for stored failure pairs (default: 100)"
    ("memory.compression_guidelines.max_stored_pairs", 100),
    # "summarize_output = false          # Enable LLM-based tool output summarization"
    ("tools.summarize_output", False),
    # "auto (default) | Selects compact when the remaining context budget is below 8192 tokens, full otherwise"
    ("skills.prompt_mode", "auto"),
]


@pytest.mark.parametrize(("path", "expected"), SPEC_DEFAULTS, ids=[p for p, _ in SPEC_DEFAULTS])
def test_default_matches_spec(path, expected):
    loaded = load_config(env={})  # no file at the isolated XDG path, no variables
    value = loaded.config.get(path)
    assert value == expected
    if isinstance(expected, bool):
        assert value is expected
    assert KEYS[path].default == expected
    assert loaded.source(path) == "default"


def test_defaults_without_file_or_env(tmp_path):
    loaded = load_config(env={"XDG_CONFIG_HOME": str(tmp_path / "nowhere")})
    assert loaded.config == Config()
    assert loaded.sources == {}
    assert loaded.warnings == []
    assert loaded.path is None
    # the spec's example values for the summary provider are not defaults: nothing is set
    assert loaded.config.llm.providers == []
    assert loaded.config.llm.summary_provider is None


# ---- environment variables (spec: "Environment Variables" table) ------------------------------

ENV_CASES = [
    # (variable, key path, raw value, expected value)
    ("ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS", "memory.context_budget_tokens", "128000", 128000),
    ("ZEPH_MEMORY_SOFT_COMPACTION_THRESHOLD", "memory.soft_compaction_threshold", "0.5", 0.5),
    # "ZEPH_MEMORY_COMPACTION_THRESHOLD | Hard compaction threshold (backward compat alias for hard_compaction_threshold)"
    ("ZEPH_MEMORY_COMPACTION_THRESHOLD", "memory.hard_compaction_threshold", "0.8", 0.8),
    ("ZEPH_MEMORY_HARD_COMPACTION_THRESHOLD", "memory.hard_compaction_threshold", "0.85", 0.85),
    ("ZEPH_MEMORY_COMPACTION_PRESERVE_TAIL", "memory.compaction_preserve_tail", "9", 9),
    ("ZEPH_MEMORY_PRUNE_PROTECT_TOKENS", "memory.prune_protect_tokens", "1234", 1234),
    ("ZEPH_MEMORY_CROSS_SESSION_SCORE_THRESHOLD", "memory.cross_session_score_threshold", "0.5", 0.5),
    ("ZEPH_MEMORY_TOOL_CALL_CUTOFF", "memory.tool_call_cutoff", "11", 11),
    ("ZEPH_MEMORY_SEMANTIC_TEMPORAL_DECAY_ENABLED", "memory.semantic.temporal_decay_enabled", "true", True),
    ("ZEPH_MEMORY_SEMANTIC_TEMPORAL_DECAY_HALF_LIFE_DAYS", "memory.semantic.temporal_decay_half_life_days", "7.5", 7.5),
    ("ZEPH_MEMORY_SEMANTIC_MMR_ENABLED", "memory.semantic.mmr_enabled", "1", True),
    ("ZEPH_MEMORY_SEMANTIC_MMR_LAMBDA", "memory.semantic.mmr_lambda", "0.25", 0.25),
    # "export ZEPH_TOOLS_SUMMARIZE_OUTPUT=true"
    ("ZEPH_TOOLS_SUMMARIZE_OUTPUT", "tools.summarize_output", "true", True),
    ("ZEPH_LLM_PROVIDER", "llm.provider", "ollama", "ollama"),
    ("ZEPH_LLM_MODEL", "llm.model", "qwen3:1.7b", "qwen3:1.7b"),
    ("ZEPH_LLM_BASE_URL", "llm.base_url", "http://localhost:11434", "http://localhost:11434"),
]


@pytest.mark.parametrize(("var", "path", "raw", "expected"), ENV_CASES, ids=[c[0] for c in ENV_CASES])
def test_env_variable_is_honoured(var, path, raw, expected):
    loaded = load_config(env={var: raw})
    assert loaded.config.get(path) == expected
    assert loaded.config.get(path) != KEYS[path].default
    assert loaded.source(path) == f"env {var}"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("true", True), ("TRUE", True), ("yes", True), ("on", True), ("1", True),
     ("false", False), ("no", False), ("off", False), ("0", False)],
)
def test_env_booleans(raw, expected):
    loaded = load_config(env={"ZEPH_TOOLS_SUMMARIZE_OUTPUT": raw}, overrides={})
    assert loaded.config.tools.summarize_output is expected
    assert loaded.source("tools.summarize_output") == "env ZEPH_TOOLS_SUMMARIZE_OUTPUT"


def test_env_disabling_a_bool_overrides_file(tmp_path):
    loaded = load_text(tmp_path, "[tools]\nsummarize_output = true\n", {"ZEPH_TOOLS_SUMMARIZE_OUTPUT": "false"})
    assert loaded.config.tools.summarize_output is False
    assert loaded.source("tools.summarize_output") == "env ZEPH_TOOLS_SUMMARIZE_OUTPUT"


def test_canonical_hard_threshold_variable_wins_over_alias():
    env = {"ZEPH_MEMORY_COMPACTION_THRESHOLD": "0.7", "ZEPH_MEMORY_HARD_COMPACTION_THRESHOLD": "0.95"}
    loaded = load_config(env=env)
    assert loaded.config.memory.hard_compaction_threshold == 0.95
    assert loaded.source("memory.hard_compaction_threshold") == "env ZEPH_MEMORY_HARD_COMPACTION_THRESHOLD"


def test_empty_env_value_is_ignored():
    loaded = load_config(env={"ZEPH_MEMORY_TOOL_CALL_CUTOFF": ""})
    assert loaded.config.memory.tool_call_cutoff == 6
    assert loaded.source("memory.tool_call_cutoff") == "default"


def test_env_value_is_stripped():
    loaded = load_config(env={"ZEPH_MEMORY_TOOL_CALL_CUTOFF": " 8 \n"})
    assert loaded.config.memory.tool_call_cutoff == 8


@pytest.mark.parametrize(
    ("var", "raw", "words"),
    [
        ("ZEPH_MEMORY_TOOL_CALL_CUTOFF", "abc", ["'abc'", "memory.tool_call_cutoff", "an integer between 1 and 10,000"]),
        ("ZEPH_MEMORY_TOOL_CALL_CUTOFF", "0", ["memory.tool_call_cutoff", "0", "out of range", "1 and 10,000"]),
        ("ZEPH_MEMORY_TOOL_CALL_CUTOFF", "2.5", ["'2.5'", "memory.tool_call_cutoff"]),
        ("ZEPH_TOOLS_SUMMARIZE_OUTPUT", "maybe", ["'maybe'", "tools.summarize_output", "true or false"]),
        ("ZEPH_MEMORY_SOFT_COMPACTION_THRESHOLD", "lots", ["'lots'", "memory.soft_compaction_threshold"]),
        ("ZEPH_MEMORY_SEMANTIC_MMR_LAMBDA", "1.5", ["memory.semantic.mmr_lambda", "1.5", "between 0 and 1"]),
        ("ZEPH_MEMORY_COMPACTION_THRESHOLD", "2", ["memory.hard_compaction_threshold", "between 0 and 1"]),
    ],
)
def test_bad_env_value_names_the_variable(var, raw, words):
    with pytest.raises(ConfigError) as info:
        load_config(env={var: raw})
    message = str(info.value)
    assert var in message
    for word in words:
        assert word in message


def test_bad_summary_model_from_env_names_the_variable(tmp_path):
    # The value came from the environment, not from a file: the error must say so.
    env = {"XDG_CONFIG_HOME": str(tmp_path / "nowhere"), "ZEPH_LLM_SUMMARY_MODEL": "bogus/x"}
    with pytest.raises(ConfigError) as info:
        load_config(env=env)
    message = str(info.value)
    assert "ZEPH_LLM_SUMMARY_MODEL" in message
    assert "'bogus/x'" in message


# ---- precedence: flag > env > file > default -------------------------------------------------


def test_precedence_flag_env_file_default(tmp_path):
    text = """
[memory]
soft_compaction_threshold = 0.5
compaction_preserve_tail = 7
prune_protect_tokens = 100
"""
    env = {"ZEPH_MEMORY_SOFT_COMPACTION_THRESHOLD": "0.55", "ZEPH_MEMORY_COMPACTION_PRESERVE_TAIL": "8"}
    overrides = {
        "memory.soft_compaction_threshold": (0.4, "--soft-threshold"),
        "memory.tool_call_cutoff": (None, "--tool-call-cutoff"),  # flag not given
    }
    loaded = load_text(tmp_path, text, env, overrides=overrides)
    m = loaded.config.memory
    assert (m.soft_compaction_threshold, loaded.source("memory.soft_compaction_threshold")) == (
        0.4,
        "flag --soft-threshold",
    )
    assert (m.compaction_preserve_tail, loaded.source("memory.compaction_preserve_tail")) == (
        8,
        "env ZEPH_MEMORY_COMPACTION_PRESERVE_TAIL",
    )
    assert (m.prune_protect_tokens, loaded.source("memory.prune_protect_tokens")) == (100, "file")
    assert (m.tool_call_cutoff, loaded.source("memory.tool_call_cutoff")) == (6, "default")
    assert (m.cross_session_score_threshold, loaded.source("memory.cross_session_score_threshold")) == (
        0.35,
        "default",
    )
    assert loaded.path == tmp_path / "cfg" / "config.toml"


def test_flag_value_is_validated():
    with pytest.raises(ConfigError) as info:
        load_config(env={}, overrides={"memory.tool_call_cutoff": (0, "--tool-call-cutoff")})
    message = str(info.value)
    assert "--tool-call-cutoff" in message
    assert "memory.tool_call_cutoff" in message


def test_relation_error_names_sources():
    env = {"ZEPH_MEMORY_SOFT_COMPACTION_THRESHOLD": "0.95"}
    with pytest.raises(ConfigError) as info:
        load_config(env=env)
    message = str(info.value)
    assert "memory.soft_compaction_threshold" in message
    assert "memory.hard_compaction_threshold" in message
    assert "ZEPH_MEMORY_SOFT_COMPACTION_THRESHOLD" in message


# ---- which file ------------------------------------------------------------------------------


def test_config_path_resolution_order(tmp_path):
    flag_file = write(tmp_path / "flag.toml", "[memory]\ntool_call_cutoff = 11\n")
    env_file = write(tmp_path / "env.toml", "[memory]\ntool_call_cutoff = 12\n")
    xdg = tmp_path / "xdg"
    default_file = write(xdg / "zeph" / "config.toml", "[memory]\ntool_call_cutoff = 13\n")
    env = {"ZEPH_CONFIG": str(env_file), "XDG_CONFIG_HOME": str(xdg)}

    assert resolve_config_path(str(flag_file), env) == (flag_file, True)
    assert resolve_config_path(None, env) == (env_file, True)
    assert resolve_config_path(None, {"XDG_CONFIG_HOME": str(xdg)}) == (default_file, False)

    assert load_config(config_path=str(flag_file), env=env).config.memory.tool_call_cutoff == 11
    assert load_config(env=env).config.memory.tool_call_cutoff == 12
    loaded = load_config(env={"XDG_CONFIG_HOME": str(xdg)})
    assert loaded.config.memory.tool_call_cutoff == 13
    assert loaded.path == default_file
    assert loaded.source("memory.tool_call_cutoff") == "file"


def test_default_path_follows_isolated_xdg(isolated_env):
    path, explicit = resolve_config_path(None, os.environ)
    assert path == isolated_env / "xdg-config" / "zeph" / "config.toml"
    assert explicit is False


def test_explicit_missing_file_from_flag(tmp_path):
    missing = tmp_path / "nope" / "config.toml"
    with pytest.raises(ConfigError) as info:
        load_config(config_path=str(missing), env={})
    assert str(missing) in str(info.value)
    assert "--config" in str(info.value)


def test_explicit_missing_file_from_env(tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError) as info:
        load_config(env={"ZEPH_CONFIG": str(missing)})
    assert str(missing) in str(info.value)
    assert "ZEPH_CONFIG" in str(info.value)


def test_missing_default_file_is_not_an_error(tmp_path):
    xdg = tmp_path / "empty-xdg"
    loaded = load_config(env={"XDG_CONFIG_HOME": str(xdg), "ZEPH_MEMORY_TOOL_CALL_CUTOFF": "9"})
    assert loaded.path is None
    assert loaded.config.memory.tool_call_cutoff == 9
    assert loaded.config.memory.soft_compaction_threshold == 0.60


def test_config_path_that_is_a_directory(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_config(config_path=str(tmp_path), env={})
    assert str(tmp_path) in str(info.value)


# ---- bad files -------------------------------------------------------------------------------


def test_toml_syntax_error_names_file_and_line(tmp_path):
    message = load_error(tmp_path, "[memory]\ncontext_budget_tokens = 0\nsoft_compaction_threshold = \n")
    assert str(tmp_path / "cfg" / "config.toml") in message
    assert "line 3" in message
    assert "(at line" not in message  # tomllib's own suffix is rewritten, not repeated


def test_toml_syntax_error_on_first_line(tmp_path):
    message = load_error(tmp_path, "[memory\n")
    assert "line 1" in message
    assert "config.toml" in message


def test_non_utf8_file(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes("[llm]\nmodel = \"caf\xe9\"\n".encode("latin-1"))
    with pytest.raises(ConfigError) as info:
        load_config(config_path=str(path), env={})
    assert str(path) in str(info.value)
    assert "UTF-8" in str(info.value)


@pytest.mark.parametrize(
    ("text", "key", "value", "allowed"),
    [
        ('[memory]\ncontext_budget_tokens = "big"\n', "memory.context_budget_tokens", "'big'", "an integer between 0 and 100,000,000"),
        ("[memory]\ncompaction_preserve_tail = 4.0\n", "memory.compaction_preserve_tail", "4.0", "an integer"),
        ("[tools]\nsummarize_output = 1\n", "tools.summarize_output", "1", "true or false"),
        ('[memory.semantic]\nmmr_enabled = "yes"\n', "memory.semantic.mmr_enabled", "'yes'", "true or false"),
        ("[memory]\nsoft_compaction_threshold = true\n", "memory.soft_compaction_threshold", "True", "a number between 0 and 1"),
        ('[skills]\nprompt_mode = "tiny"\n', "skills.prompt_mode", "'tiny'", "'full', 'compact', 'auto'"),
        ('[memory.compression]\nstrategy = "eager"\n', "memory.compression.strategy", "'eager'", "'reactive', 'proactive'"),
    ],
)
def test_wrong_type_names_key_value_and_range(tmp_path, text, key, value, allowed):
    message = load_error(tmp_path, text)
    assert key in message
    assert f"= {value} " in message
    assert allowed in message
    assert "config.toml" in message


@pytest.mark.parametrize(
    ("text", "key", "value", "allowed"),
    [
        ("[memory]\nsoft_compaction_threshold = 1.5\n", "memory.soft_compaction_threshold", "1.5", "between 0 and 1"),
        ("[memory.compression]\nthreshold_tokens = 10\n", "memory.compression.threshold_tokens", "10", "between 1,000 and 10,000,000"),
        ("[memory.compression]\nmax_summary_tokens = 100\n", "memory.compression.max_summary_tokens", "100", "between 128 and"),
        ("[memory]\ntool_call_cutoff = 0\n", "memory.tool_call_cutoff", "0", "between 1 and 10,000"),
        ("[memory]\ncontext_budget_tokens = -1\n", "memory.context_budget_tokens", "-1", "between 0 and"),
        ("[memory.semantic]\nmmr_lambda = -0.1\n", "memory.semantic.mmr_lambda", "-0.1", "between 0 and 1"),
        ("[memory.compression.probe]\nmax_questions = 0\n", "memory.compression.probe.max_questions", "0", "between 1 and 20"),
    ],
)
def test_out_of_range_names_key_value_and_range(tmp_path, text, key, value, allowed):
    message = load_error(tmp_path, text)
    assert key in message
    assert f"= {value} " in message
    assert "out of range" in message
    assert allowed in message


@pytest.mark.parametrize(
    "text",
    [
        "[memory]\nsoft_compaction_threshold = nan\n",
        "[memory.semantic]\nmmr_lambda = nan\n",
        "[llm]\ntemperature = nan\n",
    ],
)
def test_nan_is_out_of_range(tmp_path, text):
    # TOML allows `nan`; NaN lies in no range, so it must be refused like 1.5 is.
    message = load_error(tmp_path, text)
    assert "nan" in message


def test_nan_threshold_from_env_is_refused():
    with pytest.raises(ConfigError) as info:
        load_config(env={"ZEPH_MEMORY_SOFT_COMPACTION_THRESHOLD": "nan"})
    assert "ZEPH_MEMORY_SOFT_COMPACTION_THRESHOLD" in str(info.value)


def test_int_accepted_for_float_key(tmp_path):
    loaded = load_text(tmp_path, "[memory.semantic]\ntemporal_decay_half_life_days = 7\nmmr_lambda = 1\n")
    assert loaded.config.memory.semantic.temporal_decay_half_life_days == 7.0
    assert isinstance(loaded.config.memory.semantic.temporal_decay_half_life_days, float)
    assert loaded.config.memory.semantic.mmr_lambda == 1.0


@pytest.mark.parametrize(
    ("text", "unknown", "suggestion"),
    [
        ("[memory]\ncontext_budget = 5\n", "memory.context_budget", "memory.context_budget_tokens"),
        ("[memroy]\ncontext_budget_tokens = 5\n", "memroy.context_budget_tokens", "memory.context_budget_tokens"),
        ("[memory.semantik]\nenabled = true\n", "memory.semantik.enabled", "memory.semantic.enabled"),
        ("[tools]\nsummarise_output = true\n", "tools.summarise_output", "tools.summarize_output"),
        ("[memory]\ncompaction_preserv_tail = 5\n", "memory.compaction_preserv_tail", "memory.compaction_preserve_tail"),
    ],
)
def test_unknown_key_warns_with_nearest(tmp_path, text, unknown, suggestion):
    loaded = load_text(tmp_path, text)
    assert len(loaded.warnings) == 1
    warning = loaded.warnings[0]
    assert unknown in warning
    assert f"did you mean {suggestion}" in warning
    assert "config.toml" in warning
    # the unknown key changed nothing
    assert loaded.config == Config()


def test_unknown_key_without_near_match(tmp_path):
    loaded = load_text(tmp_path, "[memory]\ntool_call_cutoff = 9\n[zzz]\nqqq = 1\n")
    assert loaded.config.memory.tool_call_cutoff == 9
    assert len(loaded.warnings) == 1
    assert "zzz.qqq" in loaded.warnings[0]
    assert "did you mean" not in loaded.warnings[0]


def test_soft_not_below_hard_is_an_error(tmp_path):
    message = load_error(tmp_path, "[memory]\nsoft_compaction_threshold = 0.9\nhard_compaction_threshold = 0.8\n")
    assert "memory.soft_compaction_threshold" in message
    assert "memory.hard_compaction_threshold" in message
    # equal is not "below" either
    message = load_error(tmp_path, "[memory]\nsoft_compaction_threshold = 0.9\n")
    assert "memory.soft_compaction_threshold" in message and "memory.hard_compaction_threshold" in message


def test_probe_hard_fail_not_below_threshold_is_an_error(tmp_path):
    message = load_error(tmp_path, "[memory.compression.probe]\nthreshold = 0.5\nhard_fail_threshold = 0.5\n")
    assert "memory.compression.probe.hard_fail_threshold" in message
    assert "memory.compression.probe.threshold" in message
    ok = load_text(tmp_path, "[memory.compression.probe]\nthreshold = 0.5\nhard_fail_threshold = 0.2\n")
    assert ok.config.memory.compression.probe.hard_fail_threshold == 0.2


@pytest.mark.parametrize(
    ("text", "section"),
    [("memory = 3\n", "memory"), ("[memory]\nsemantic = 3\n", "memory.semantic"), ('llm = "x"\n', "llm")],
)
def test_scalar_where_a_section_is_expected(tmp_path, text, section):
    message = load_error(tmp_path, text)
    assert section in message
    assert "table" in message


# ---- provider entries and summary providers ----------------------------------------------------


def test_provider_entries_parsed(tmp_path):
    text = """
[llm]
provider = "lm-studio"

[[llm.providers]]
name = "lm-studio"
type = "compatible"
base_url = "http://localhost:8080/v1"
model = "llama-3.2-1b"

[[llm.providers]]
name = "fast"
type = "claude"
model = "claude-haiku-4-5"
api_key_env = "MY_KEY"
"""
    loaded = load_text(tmp_path, text)
    assert loaded.warnings == []
    entries = loaded.config.llm.providers
    assert entries == [
        ProviderEntry(name="lm-studio", type="compatible", model="llama-3.2-1b", base_url="http://localhost:8080/v1"),
        ProviderEntry(name="fast", type="claude", model="claude-haiku-4-5", api_key_env="MY_KEY"),
    ]
    assert entries[1].backend == "anthropic"
    assert loaded.config.find_provider_entry("lm-studio") is entries[0]
    assert loaded.config.find_provider_entry("nope") is None
    assert loaded.source("llm.providers") == "file"


@pytest.mark.parametrize(
    ("entry", "missing"),
    [('name = "a"\n', "llm.providers[0].type"), ('type = "openai"\n', "llm.providers[0].name")],
)
def test_provider_entry_missing_required(tmp_path, entry, missing):
    message = load_error(tmp_path, "[[llm.providers]]\n" + entry)
    assert missing in message
    assert "required" in message


def test_provider_entry_duplicate_names(tmp_path):
    text = '[[llm.providers]]\nname = "a"\ntype = "openai"\n[[llm.providers]]\nname = "a"\ntype = "ollama"\n'
    message = load_error(tmp_path, text)
    assert "'a'" in message
    assert "llm.providers" in message


def test_provider_entry_bad_type(tmp_path):
    message = load_error(tmp_path, '[[llm.providers]]\nname = "a"\ntype = "bogus"\n')
    assert "llm.providers[0].type" in message
    assert "'bogus'" in message


def test_provider_entry_unknown_key_warns(tmp_path):
    text = '[[llm.providers]]\nname = "a"\ntype = "compatible"\nbase_url = "http://x"\nmdoel = "m"\n'
    loaded = load_text(tmp_path, text)
    assert len(loaded.config.llm.providers) == 1
    assert loaded.config.llm.providers[0].model == ""
    assert len(loaded.warnings) == 1
    assert "llm.providers[0].mdoel" in loaded.warnings[0]
    assert "did you mean model" in loaded.warnings[0]


def test_providers_as_single_table_is_an_error(tmp_path):
    message = load_error(tmp_path, '[llm.providers]\nname = "a"\ntype = "openai"\n')
    assert "llm.providers" in message
    assert "[[llm.providers]]" in message


def test_summary_provider_parsed(tmp_path):
    # Spec example: [llm.summary_provider] type = "candle", model = "mistral-7b-instruct", device = "metal"
    text = '[llm.summary_provider]\ntype = "candle"\nmodel = "mistral-7b-instruct"\ndevice = "metal"\n'
    loaded = load_text(tmp_path, text)
    sp = loaded.config.llm.summary_provider
    assert sp == ProviderEntry(type="candle", model="mistral-7b-instruct", device="metal")
    assert sp.backend == "local"
    assert loaded.source("llm.summary_provider") == "file"


def test_summary_provider_requires_type_and_valid_device(tmp_path):
    assert "llm.summary_provider.type" in load_error(tmp_path, '[llm.summary_provider]\nmodel = "x"\n')
    message = load_error(tmp_path, '[llm.summary_provider]\ntype = "candle"\ndevice = "tpu"\n')
    assert "llm.summary_provider.device" in message and "'tpu'" in message


@pytest.mark.parametrize(
    ("text", "kind", "model"),
    [
        ("claude/claude-haiku-4-5", "claude", "claude-haiku-4-5"),
        ("claude", "claude", ""),
        ("openai/gpt-4o-mini", "openai", "gpt-4o-mini"),
        ("compatible/my-server", "compatible", "my-server"),
        ("ollama/qwen3:1.7b", "ollama", "qwen3:1.7b"),
        ("candle", "candle", ""),
    ],
)
def test_parse_summary_model_accepts_spec_forms(text, kind, model):
    entry = parse_summary_model(text)
    assert (entry.type, entry.model) == (kind, model)


@pytest.mark.parametrize("text", ["bogus/x", "bogus", "", "/model"])
def test_parse_summary_model_rejects(text):
    with pytest.raises(ConfigError) as info:
        parse_summary_model(text, "somewhere.toml")
    assert "llm.summary_model" in str(info.value)
    assert "somewhere.toml" in str(info.value)


def test_summary_model_validated_on_load(tmp_path):
    ok = load_text(tmp_path, '[llm]\nsummary_model = "claude/claude-haiku-4-5"\n')
    assert ok.config.llm.summary_model == "claude/claude-haiku-4-5"
    message = load_error(tmp_path, '[llm]\nsummary_model = "bogus/x"\n')
    assert "'bogus/x'" in message
    assert "config.toml" in message


# ---- config.example.toml -----------------------------------------------------------------------


def test_example_file_loads_cleanly_with_default_values():
    loaded = load_config(config_path=str(EXAMPLE), env={})
    assert loaded.warnings == []
    assert loaded.config == Config()
    for path, key in KEYS.items():
        assert loaded.config.get(path) == key.default, path


def _example_sections() -> dict[str, list[str]]:
    """Each [section] of the example file with its lines."""
    sections: dict[str, list[str]] = {"": []}
    current = ""
    for line in EXAMPLE.read_text(encoding="utf-8").splitlines():
        header = re.fullmatch(r"\[([a-z_.]+)\]", line.strip())
        if header:
            current = header.group(1)
            sections.setdefault(current, [])
        else:
            sections[current].append(line)
    return sections


def test_example_file_documents_every_key():
    sections = _example_sections()
    for path, key in KEYS.items():
        section, _, leaf = path.rpartition(".")
        assert section in sections, f"[{section}] missing from config.example.toml"
        lines = sections[section]
        if key.default is None:
            pattern = rf"#\s*{leaf}\s*="
        else:
            pattern = rf"{leaf}\s*="
        assert any(re.match(pattern, line) for line in lines), f"{path} not in config.example.toml"
        # the variable is documented next to it
        assert any(key.env in line for line in lines), f"{key.env} not documented for {path}"


# ---- writing -----------------------------------------------------------------------------------


def test_to_toml_dict_round_trip(tmp_path):
    config = Config()
    config.llm.provider = "lm-studio"
    config.llm.temperature = 0.3
    config.llm.summary_model = "openai/gpt-4o-mini"
    config.llm.providers = [ProviderEntry(name="lm-studio", type="compatible", base_url="http://h/v1", model="m")]
    config.llm.summary_provider = ProviderEntry(type="ollama", model="qwen3:1.7b")
    config.memory.context_budget_tokens = 128000
    config.memory.soft_compaction_threshold = 0.5
    config.memory.semantic.mmr_enabled = True
    config.memory.compression.strategy = "proactive"
    config.memory.compression.probe.enabled = True
    config.skills.prompt_mode = "compact"

    data = to_toml_dict(config)
    text = tomli_w.dumps(data)
    assert tomllib.loads(text) == data
    path = write(tmp_path / "round.toml", text)
    loaded = load_config(config_path=str(path), env={})
    assert loaded.warnings == []
    assert loaded.config == config


def test_to_toml_dict_leaves_out_unset_optionals():
    data = to_toml_dict(Config())
    assert "temperature" not in data["llm"]
    assert "summary_provider" not in data["llm"]
    assert data["memory"]["compression"]["probe"]["threshold"] == 0.6
    assert data["llm"]["providers"] == []


# ---- the real CLI ------------------------------------------------------------------------------


def zeph(*args: str, env_extra: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run(
        [ZEPH, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )


def test_cli_bad_config_is_one_line_error(tmp_path):
    bad = write(tmp_path / "bad.toml", "[memory]\ncontext_budget_tokens = 0\nsoft_compaction_threshold = \n")
    result = zeph("--config", str(bad), "config", "show")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("zeph: error:")
    assert str(bad) in lines[0]
    assert "line 3" in lines[0]
    assert "Traceback" not in result.stderr + result.stdout


def test_cli_config_show_reports_env_source():
    result = zeph("config", "show", env_extra={"ZEPH_MEMORY_SOFT_COMPACTION_THRESHOLD": "0.5"})
    assert result.returncode == 0, result.stderr
    line = next(l for l in result.stdout.splitlines() if l.startswith("memory.soft_compaction_threshold "))
    assert re.search(r"=\s*0\.5\s+# env ZEPH_MEMORY_SOFT_COMPACTION_THRESHOLD$", line), line
    hard = next(l for l in result.stdout.splitlines() if l.startswith("memory.hard_compaction_threshold "))
    assert hard.endswith("# default")


def test_cli_config_show_lists_mcp_servers_without_literal_secrets(tmp_path):
    cfg = write(tmp_path / "c.toml", '[[mcp.servers]]\nid = "web"\nurl = "https://mcp.example/mcp"\n'
                                    'headers = { Authorization = "Bearer ${TOKEN}", X-Key = "literal-s3cret" }\n')
    result = zeph("--config", str(cfg), "config", "show", "--json")
    assert result.returncode == 0, result.stderr
    server = json.loads(result.stdout)["settings"]["mcp.servers[0]"]
    assert server["source"] == "file" and server["value"]["url"] == "https://mcp.example/mcp"
    assert server["value"]["headers"] == {"Authorization": "Bearer ${TOKEN}", "X-Key": "(set)"}
    assert "literal-s3cret" not in zeph("--config", str(cfg), "config", "show").stdout


def test_cli_unknown_key_warns_but_succeeds(tmp_path):
    cfg = write(tmp_path / "c.toml", "[memory]\ncontext_budget = 5\ntool_call_cutoff = 9\n")
    result = zeph("--config", str(cfg), "config", "show")
    assert result.returncode == 0
    warnings = [l for l in result.stderr.splitlines() if l.startswith("zeph: warning:")]
    assert len(warnings) == 1
    assert "memory.context_budget" in warnings[0]
    assert "did you mean memory.context_budget_tokens" in warnings[0]
    line = next(l for l in result.stdout.splitlines() if l.startswith("memory.tool_call_cutoff "))
    assert line.endswith("# file") and "= 9" in line


def test_cli_init_then_refuse_then_force(isolated_env):
    expected = isolated_env / "xdg-config" / "zeph" / "config.toml"
    assert not expected.exists()

    first = zeph("init")
    assert first.returncode == 0, first.stderr
    assert expected.is_file()
    loaded = load_config(config_path=str(expected), env={})
    assert loaded.warnings == []
    assert loaded.config.memory.soft_compaction_threshold == 0.6
    assert loaded.config.memory.hard_compaction_threshold == 0.9
    assert loaded.source("memory.compaction_preserve_tail") == "file"

    expected.write_text(expected.read_text(encoding="utf-8") + "\n# user edit\n", encoding="utf-8")
    second = zeph("init")
    assert second.returncode == 1
    assert "--force" in second.stderr
    assert second.stderr.startswith("zeph: error:")
    assert "# user edit" in expected.read_text(encoding="utf-8")  # untouched

    forced = zeph("init", "--force")
    assert forced.returncode == 0, forced.stderr
    assert "# user edit" not in expected.read_text(encoding="utf-8")
    assert load_config(config_path=str(expected), env={}).warnings == []


def test_cli_init_honours_config_flag(tmp_path):
    target = tmp_path / "elsewhere" / "zeph.toml"
    result = zeph("--config", str(target), "init")
    assert result.returncode == 0, result.stderr
    assert target.is_file()
    assert load_config(config_path=str(target), env={}).warnings == []


def test_keys_that_do_nothing_yet_warn_instead_of_pretending(tmp_path):
    text = (
        "[memory.graph]\nenabled = true\n"
        '[[llm.providers]]\nname = "api"\ntype = "anthropic"\ndevice = "cuda"\nembedding_model = "text-embedding-3-small"\n'
    )
    loaded = load_text(tmp_path, text)
    assert len(loaded.warnings) == 3, loaded.warnings
    graph, embedding, device = loaded.warnings
    assert "memory.graph.enabled does nothing (knowledge-graph memory is not part of zeph yet)" in graph
    assert "llm.providers[0].embedding_model applies to openai, ollama and compatible entries" in embedding
    assert "llm.providers[0].device applies to local models only" in device
    assert not hasattr(loaded.config.memory, "graph")
    assert load_text(tmp_path, '[[llm.providers]]\nname = "here"\ntype = "local"\ndevice = "cpu"\n').warnings == []
    assert load_text(tmp_path, '[[llm.providers]]\nname = "o"\ntype = "ollama"\nembedding_model = "nomic-embed-text"\n').warnings == []


def test_index_languages_name_the_ones_the_index_reads(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[index]\nlanguages = ["python", "text"]\n')
    assert load_config(config_path=str(path), env={}).config.index.languages == ("python", "text")
    path.write_text('[index]\nlanguages = ["python", "cobol"]\n')
    with pytest.raises(ConfigError, match=r"index\.languages: 'cobol' is not a language the index reads \(one of python, .*text\)"):
        load_config(config_path=str(path), env={})


def test_index_settings_come_from_zeph_index_variables(tmp_path):
    (tmp_path / "config.toml").write_text("")
    loaded = load_config(config_path=str(tmp_path / "config.toml"), env={"ZEPH_INDEX_ENABLED": "false",
                                                                   "ZEPH_INDEX_REPO_MAP_TOKENS": "512",
                                                                   "ZEPH_INDEX_EXCLUDE": "docs/, *.sql"})
    index = loaded.config.index
    assert (index.enabled, index.repo_map_tokens, index.exclude) == (False, 512, ("docs/", "*.sql"))
    assert loaded.source("index.enabled") == "env ZEPH_INDEX_ENABLED"
