"""Configuration: the typed settings, their defaults, ranges and sources.

Invariant: the dataclasses below are the single source of truth for every key
(default, type, range, documentation, environment variable). A value reaches
`Config` only after validation, and each key remembers where it came from:
command-line flag > `ZEPH_*` environment variable > config file > default.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .keys import Key, iter_keys, setting
from .keys import check_value as _check
from .keys import parse_env as _parse_env
from .keys import suggest as _suggest
from .mcp import SERVER_KEYS, McpConfig, parse_servers
from .modes import AGENT_MODES, modes_help
from .prompt import PromptConfig, check_profile_choice, parse_profiles
from ..errors import ConfigError
from ..paths import default_config_path

PROVIDER_TYPES = ("anthropic", "openai", "compatible", "ollama", "local")
# Names the spec uses for the same backends.
PROVIDER_ALIASES = {"claude": "anthropic", "candle": "local"}


@dataclass
class ProviderEntry:
    """One `[[llm.providers]]` entry, also the shape of `[llm.summary_provider]`."""

    name: str = setting("", "Entry name, used by --provider NAME and summary_model = \"compatible/NAME\".")
    type: str = setting("", "Backend type.", choices=PROVIDER_TYPES + tuple(PROVIDER_ALIASES))
    model: str = setting("", "Model name (for a summary provider of type compatible: the entry name).")
    base_url: str = setting("", "Endpoint URL.")
    api_key_env: str = setting("", "Environment variable holding the API key (default: the backend's own).")
    embedding_model: str = setting("", "Embedding model of this entry's endpoint (openai, ollama, compatible); empty = the offline embedder ([memory] embedder).")
    device: str = setting("", "Inference device for local models: cpu, or cuda / metal to offload every layer.", choices=("", "cpu", "cuda", "metal"))

    @property
    def backend(self) -> str:
        return PROVIDER_ALIASES.get(self.type, self.type)


@dataclass
class LlmConfig:
    """The [llm] section: the provider and model, the request settings, and the summary and embedding models."""
    provider: str = setting(
        "",
        "Backend or [[llm.providers]] name; empty = auto (anthropic/openai when their key is set, else local).",
    )
    model: str = setting("", "Model name (for local: a .gguf path); empty = the provider's default.")
    base_url: str = setting("", "Endpoint URL override (required for compatible).")
    temperature: float | None = setting(None, "Sampling temperature; unset = the provider's default.", lo=0.0, hi=2.0, kind=float)
    max_tokens: int = setting(0, "Reply length cap in tokens; 0 = the model's output limit (at most 8192).", lo=0, hi=1_000_000)
    timeout_secs: float = setting(120.0, "Seconds to wait for the provider's answer (its retries included) or the next part of a streamed reply.", lo=1.0, hi=3600.0, kind=float)
    max_retries: int = setting(2, "Retries on rate limits, overload and dropped connections (backoff honours Retry-After).", lo=0, hi=10)
    vision: str = setting(
        "auto", "Whether the model takes images: auto = as the model table says (text only for a model it does not know).",
        choices=("auto", "true", "false"),
    )
    summary_model: str = setting("", "Shorthand for the summary provider: \"type\" or \"type/model\".")
    embedding_model: str = setting(
        "", "Embedding model on the main provider's endpoint (openai, ollama, compatible); empty = the offline embedder ([memory] embedder)."
    )
    providers: list[ProviderEntry] = field(default_factory=list, metadata={"doc": "Named provider entries."})
    summary_provider: ProviderEntry | None = field(default=None, metadata={"doc": "Provider for summaries."})


@dataclass
class SemanticConfig:
    """[memory.semantic]: recall of relevant past messages."""
    enabled: bool = setting(True, "Semantic recall of relevant past messages.")
    recall_limit: int = setting(5, "Max semantically relevant messages to inject.", lo=0, hi=100)
    vector_weight: float = setting(0.7, "Weight of the vector leg's ranks in recall's reciprocal rank fusion.", lo=0.0, hi=1.0)
    keyword_weight: float = setting(0.3, "Weight of the keyword (FTS5) leg's ranks in recall's reciprocal rank fusion (times 3 for code, paths, identifiers, quoted text).", lo=0.0, hi=1.0)
    temporal_decay_enabled: bool = setting(False, "Attenuate recall scores by message age.")
    temporal_decay_half_life_days: float = setting(30.0, "Half-life for temporal decay, in days.", lo=0.01, hi=36500.0, kind=float)
    mmr_enabled: bool = setting(False, "Maximal Marginal Relevance re-ranking.")
    mmr_lambda: float = setting(0.7, "MMR relevance-diversity trade-off.", lo=0.0, hi=1.0)


@dataclass
class RoutingConfig:
    """[memory.routing]: how a query picks its recall backend."""
    strategy: str = setting("heuristic", "Query-aware memory backend selection.", choices=("heuristic",))


@dataclass
class ProbeConfig:
    """[memory.compression.probe]: the question/answer check of a hard compaction."""
    enabled: bool = setting(False, "Validate each hard compaction with a question/answer probe.")
    model: str = setting("", "Model for probe calls; empty = the summary provider.")
    threshold: float = setting(0.6, "Minimum average score for a Pass verdict.", lo=0.0, hi=1.0)
    hard_fail_threshold: float = setting(0.35, "Score below this blocks compaction (HardFail).", lo=0.0, hi=1.0)
    max_questions: int = setting(3, "Factual questions generated per probe.", lo=1, hi=20)
    timeout_secs: int = setting(15, "Timeout for the whole probe (both LLM calls), in seconds.", lo=1, hi=600)


SUMMARY_FORMATS = ("sections", "anchored")


@dataclass
class CompressionConfig:
    """[memory.compression]: when and how far the context is compressed."""
    strategy: str = setting("reactive", "\"reactive\" (threshold tiers) or \"proactive\" (absolute token threshold).", choices=("reactive", "proactive"))
    threshold_tokens: int = setting(80000, "Proactive: compress when context exceeds this many tokens.", lo=1000, hi=10_000_000)
    max_summary_tokens: int = setting(4000, "Proactive: cap for the compressed summary.", lo=128, hi=1_000_000)
    compress_provider: str = setting("", "Provider name for autonomous compress_context calls; empty = the main provider.")
    summary_format: str = setting(
        "sections",
        "LLM summaries: \"sections\" (the nine-section summary) or \"anchored\" (five validated sections under "
        "[anchored summary]; asked again once, then \"sections\").",
        choices=SUMMARY_FORMATS,
    )
    probe: ProbeConfig = field(default_factory=ProbeConfig)


@dataclass
class CompressionGuidelinesConfig:
    """[memory.compression_guidelines]: guidelines learned from context lost in compaction."""
    enabled: bool = setting(False, "Learn compression guidelines from detected context loss.")
    update_threshold: int = setting(5, "Failure pairs needed to trigger a guidelines update.", lo=1, hi=1000)
    max_guidelines_tokens: int = setting(500, "Token budget for the synthesized guidelines.", lo=16, hi=100_000)
    max_pairs_per_update: int = setting(10, "Failure pairs consumed per update cycle.", lo=1, hi=1000)
    detection_window_turns: int = setting(10, "Turns to watch for context loss after a hard compaction.", lo=1, hi=1000)
    update_interval_secs: int = setting(300, "Background updater interval, in seconds.", lo=1, hi=86400)
    max_stored_pairs: int = setting(100, "Cleanup threshold for stored failure pairs.", lo=1, hi=100_000)


@dataclass
class LongTermConfig:
    """[memory.long_term]: saved memories sent as a <memory> block."""
    enabled: bool = setting(True, "Inject saved memories (zeph memory, memory_save) as a <memory> block each turn.")
    top_k: int = setting(5, "Memories injected per turn, best ranked first; 0 = every un-archived memory.", lo=0, hi=1000)
    max_chars: int = setting(2000, "Cap on the formatted <memory> block, in characters.", lo=0, hi=100_000)


@dataclass
class CrossSessionConfig:
    """[memory.cross_session]: summaries of other sessions sent to this one."""
    enabled: bool | None = setting(
        None,
        "Summarize sessions in the background and send other sessions' summaries as <recent_conversation_memory>; "
        "unset = on, unless the summary model is the small embedded one (configure [llm] summary_model).",
        kind=bool,
    )
    max_summaries: int = setting(5, "Summaries of other sessions sent per turn (this project's first); 0 = none sent.", lo=0, hi=50)
    min_user_turns: int = setting(6, "User turns a session needs before it is summarized.", lo=1, hi=10_000)
    min_interval_minutes: int = setting(120, "Minutes between two summaries of the same session.", lo=1, hi=525_600)


@dataclass
class ProfileConfig:
    """[memory.profile]: the user profile kept from session summaries."""
    enabled: bool | None = setting(
        None,
        "Keep a user profile (zeph profile) from the session summaries and send it as <user_profile_memory>; "
        "unset = on, unless the summary model is the small embedded one (configure [llm] summary_model).",
        kind=bool,
    )
    update_interval_hours: int = setting(24, "Hours between two automatic updates of the profile.", lo=1, hi=8760)


VECTOR_BACKENDS = ("sqlite", "qdrant")
EMBEDDERS = ("minilm", "wordllama")  # the offline embedders (zeph_cli/features/memory/embedders/select.py)
EMBEDDING_BACKENDS = ("openai", "ollama", "compatible")  # the provider backends with an embeddings endpoint


@dataclass
class MemoryConfig:
    """The [memory] section: the context budget, compaction, the vector backend and the memory features."""
    context_budget_tokens: int = setting(0, "Context budget in tokens; 0 = auto (the model's context window).", lo=0, hi=100_000_000)
    auto_budget: bool = setting(True, "With context_budget_tokens = 0, use the model's window (false = unlimited, no compaction).")
    soft_compaction_threshold: float = setting(0.60, "Soft tier: prune tool outputs + apply deferred summaries (no LLM).", lo=0.0, hi=1.0)
    hard_compaction_threshold: float = setting(
        0.90,
        "Hard tier: full LLM summarization when usage exceeds this fraction.",
        lo=0.0,
        hi=1.0,
        env_aliases=("ZEPH_MEMORY_COMPACTION_THRESHOLD",),
    )
    compaction_preserve_tail: int = setting(4, "Keep the last N messages during compaction.", lo=0, hi=10_000)
    compaction_cooldown_turns: int = setting(2, "Turns to wait after an automatic LLM compaction before the next one (trimming keeps the budget meanwhile).", lo=0, hi=1000)
    prune_protect_tokens: int = setting(40000, "Protect the most recent N tokens from tool-output pruning.", lo=0, hi=100_000_000)
    cross_session_score_threshold: float = setting(0.35, "A message from another session is recalled when its fused score is at least this share of the query's best hit's.", lo=0.0, hi=1.0)
    tool_call_cutoff: int = setting(6, "Summarize the oldest tool pair when visible pairs exceed this.", lo=1, hi=10_000)
    embedder: str = setting(
        "minilm",
        "Offline embedder for recall, memories, skills and tools, unless a provider's embedding_model is set: "
        "minilm (all-MiniLM-L6-v2, a sentence encoder) or wordllama (static word vectors: faster, weaker).",
        choices=EMBEDDERS,
    )
    vector_backend: str = setting("sqlite", "Where message vectors live: sqlite (this database) or qdrant.", choices=VECTOR_BACKENDS)
    qdrant_url: str = setting("http://localhost:6333", "Qdrant server, for vector_backend = \"qdrant\".")
    semantic: SemanticConfig = field(default_factory=SemanticConfig)
    routing: RoutingConfig = field(default_factory=RoutingConfig)
    compression: CompressionConfig = field(default_factory=CompressionConfig)
    compression_guidelines: CompressionGuidelinesConfig = field(default_factory=CompressionGuidelinesConfig)
    long_term: LongTermConfig = field(default_factory=LongTermConfig)
    cross_session: CrossSessionConfig = field(default_factory=CrossSessionConfig)
    profile: ProfileConfig = field(default_factory=ProfileConfig)


@dataclass
class ContextConfig:
    """The [context] section: project context (ZEPH.md), the time block, the enhanced prompt and the history sent."""
    project_context_max_tokens: int = setting(
        4000, "Cap for the <project_context> block (ZEPH.md files); longer content is cut with a note.", lo=0, hi=1_000_000
    )
    inject_time: bool = setting(True, "Send a <time> block (local time and ISO 8601 timestamp) with every request, after the cached prefix.")
    enhanced_prompt: str = setting(
        "", "An <enhanced_prompt> sent as the last message of every request (the model is told not to reveal it); empty = none."
    )
    max_chat_history: int = setting(
        0, "Send at most this many recent history messages (tool calls stay with their results); 0 = off, the budget alone decides.",
        lo=0, hi=1_000_000,
    )
    time_landmark_gap_minutes: int = setting(
        120, "Put a dated [time: ...] marker before a user message sent longer than this after the previous one; 0 = off.",
        lo=0, hi=10_000_000,
    )
    source_deadline_seconds: float = setting(
        40.0, "Seconds each context source (recall, skills, ...) may take to prepare a turn; one that fails or is later "
        "is left out of that turn and said (zeph context, the chat app's status). MCP discovery gets its servers' "
        "own start timeout on top; 0 = wait for nothing (a source that must wait, for an embedding or a server, is left out).",
        lo=0.0, hi=3600.0, kind=float,
    )




@dataclass
class SubagentsConfig:
    """[agent.subagents]: sub-agents the `task` tool starts, each in a fresh context of its own."""
    model: str = setting("", "Model sub-agents use (for local: a .gguf path); empty = the session's model.")
    provider: str = setting(
        "", "A [[llm.providers]] name or a backend type sub-agents use; empty = the session's provider."
    )
    max_depth: int = setting(
        1, "How deep sub-agents nest: 1 = the session may start sub-agents, a sub-agent may not; 0 = no task tool.",
        lo=0, hi=5,
    )
    max_turns: int = setting(10, "Tool rounds a sub-agent may run before it must answer.", lo=1, hi=1000)
    budget_share: float = setting(
        0.5, "A sub-agent's context budget, as a share of the session's.", lo=0.05, hi=1.0, kind=float
    )
    concurrency: int = setting(
        3, "Sub-agents of one tool round that run at once (on the embedded local model: one at a time).", lo=1, hi=16
    )
    result_tokens: int = setting(
        2000, "Longest sub-agent answer the session gets back, in tokens; a longer one is cut and says so.",
        lo=100, hi=100_000,
    )


@dataclass
class AgentConfig:
    """The [agent] section: the tool mode and the tool rounds of a turn."""
    mode: str = setting("agent", modes_help() + " (the others are not offered).", choices=AGENT_MODES)
    max_tool_iterations: int = setting(25, "Tool rounds allowed in one turn before the agent stops and says so.", lo=1, hi=1000)
    subagents: SubagentsConfig = field(default_factory=SubagentsConfig)


SANDBOX_PROFILES = ("workspace", "read-only", "off")


@dataclass
class SandboxConfig:
    """[tools.sandbox]: the OS sandbox shell commands run in."""
    enabled: bool = setting(
        True, "Run shell commands in an OS sandbox (Linux: a bubblewrap wall with Landlock inside; macOS: sandbox-exec)."
    )
    profile: str = setting(
        "workspace",
        "workspace: write the workspace, tools.allowed_paths, allow_write and a private temp dir, read elsewhere; "
        "read-only: write only the temp dir; off: no sandbox.",
        choices=SANDBOX_PROFILES,
    )
    allow_write: tuple[str, ...] = setting((), "Extra directories sandboxed commands may write to.", kind=tuple)
    allow_network: bool = setting(
        False, "Let sandboxed commands use the network (off: loopback only; allowed_hosts opens single hosts)."
    )
    allowed_hosts: tuple[str, ...] = setting(
        (), "Hosts commands may reach with the network off, through zeph's proxy: names, *.suffix, IPs, host:port.",
        kind=tuple,
    )
    allow_read: tuple[str, ...] = setting(
        (), "Secret stores commands may read although hidden by default (~/.ssh, ~/.aws, ~/.netrc…), or paths in /tmp.",
        kind=tuple,
    )
    deny_read: tuple[str, ...] = setting((), "More files or directories to hide from commands and the file tools.", kind=tuple)
    max_processes: int = setting(1024, "Most processes (and threads) a sandboxed command may have at once.", lo=16, hi=1_000_000)
    strict: bool = setting(False, "Refuse shell commands when some protection cannot be had here (the state line says which).")
    pass_env: tuple[str, ...] = setting(
        (), "Variables passed to commands although their names look like secrets (KEY, SECRET, TOKEN, PASSWORD…); "
        "shell-style patterns, e.g. NPM_TOKEN or CI_*.", kind=tuple,
    )


@dataclass
class ToolsConfig:
    """The [tools] section: tool output, allowed paths, permission rules, the shell's timeout and the sandbox."""
    summarize_output: bool = setting(False, "Summarize long tool outputs with the LLM (falls back to truncation).")
    allowed_paths: tuple[str, ...] = setting(
        (), "Directories the file tools may use besides the workspace (git root or cwd).", kind=tuple
    )
    allow: tuple[str, ...] = setting(
        (),
        "Tool calls that run without asking: \"TOOL\" or \"TOOL:GLOB\" on the command or path, e.g. \"bash:git status*\".",
        kind=tuple,
    )
    deny: tuple[str, ...] = setting(
        (), "Tool calls always refused (same form as allow; deny wins), e.g. \"bash:git push*\".", kind=tuple
    )
    blocked_commands: tuple[str, ...] = setting(
        (), "Extra regular expressions for shell commands to refuse, on top of the built-in list.", kind=tuple
    )
    bash_timeout_secs: int = setting(120, "Default timeout of one bash call, in seconds (the model may ask for up to 600).", lo=1, hi=600)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)


@dataclass
class WorldbookConfig:
    """The [worldbook] section: entries sent when their keywords come up."""
    enabled: bool = setting(True, "Send worldbook entries (zeph worldbook add) when their keywords appear in the recent messages.")
    scan_depth: int = setting(4, "Recent user and assistant messages (the running one included) that worldbook keywords are matched against.", lo=1, hi=1000)
    max_share: float = setting(0.15, "Share of the prompt budget all worldbook blocks may take together; the entries with the highest order are left out first.", lo=0.0, hi=1.0)


@dataclass
class TasksConfig:
    """The [tasks] section: the task list the model keeps with todo_write."""
    enabled: bool = setting(True, "Offer todo_write (agent and plan modes) and send the session's task list as <todo>.")


@dataclass
class SkillsConfig:
    """The [skills] section: where skills are found, how many a turn matches and how they are rendered."""
    prompt_mode: str = setting(
        "auto",
        "How matched skills are rendered: full, compact (name, description, triggers) or auto "
        "(compact when the remaining budget is under 8,192 tokens).",
        choices=("full", "compact", "auto"),
    )
    paths: tuple[str, ...] = setting(
        (), "Folders of skills (each a folder with a SKILL.md); empty = the config dir's skills/. "
        "A project's .zeph/skills is always read and wins on a name clash.", kind=tuple,
    )
    max_active_skills: int = setting(5, "Skills matched to a message that go into <available_skills>.", lo=0, hi=100)
    min_score: float = setting(0.25, "Minimum match score (0-1) of a skill to go into <available_skills> (also at least 0.6 × the best score).", lo=0.0, hi=1.0)
    scan_on_load: bool = setting(True, "Scan skill bodies for prompt-injection patterns when they load, and warn.")


# The languages the code index parses (each from its official tree-sitter wheel); others are read as text.
INDEX_LANGUAGES = ("python", "javascript", "typescript", "tsx", "rust", "go", "java", "c", "cpp", "ruby", "bash")


@dataclass
class IndexConfig:
    """The [index] section: the code index behind <repo_map>, <code_context> and search_code."""
    enabled: bool = setting(
        True, "Index the project's code. Left at its default, only inside a git work tree (the tree's top is the "
        "project); set to true, also elsewhere (the working directory is the project).",
    )
    auto_index: bool = setting(
        True, "Build and update the index in the background in the chat app, after its first frame "
        "(zeph ask uses what is indexed and never waits for a build; zeph index builds it).",
    )
    max_file_bytes: int = setting(262_144, "Files larger than this are not indexed.", lo=1024, hi=100_000_000)
    exclude: tuple[str, ...] = setting(
        (), "Paths not to index, in .gitignore syntax (e.g. \"docs/\", \"*.sql\"), on top of .gitignore, "
        "binaries, vendored and generated files.", kind=tuple,
    )
    languages: tuple[str, ...] = setting(
        (), f"Parsed languages to index (empty = all: {', '.join(INDEX_LANGUAGES)}); files of the others "
        "are skipped. Docs, configuration and sources without a grammar here are indexed as text when this is "
        "empty or names \"text\".", kind=tuple,
    )
    repo_map_tokens: int = setting(
        1024, "Most tokens of the <repo_map> block (files ranked by how the code refers to them, signatures only); "
        "less when the budget is small; 0 = no map.", lo=0, hi=1024,
    )
    code_context_share: float = setting(
        0.30, "Share of the available budget the <code_context> block (code retrieved for the message) may take; "
        "with the index on, summaries and recall take 8% each and history the rest.", lo=0.0, hi=0.6,
    )
    watch: bool = setting(False, "In the chat app, watch the project's files and update the index as they change.")


@dataclass
class DebugConfig:
    """The [debug] section: request and compaction dumps."""
    dump_dir: str = setting(
        "",
        "Write each provider request, response and compaction (probe) result as numbered JSON files here; empty = off.",
    )


@dataclass
class Config:
    """The whole configuration, one field per section; defaults are the spec's."""
    llm: LlmConfig = field(default_factory=LlmConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    context: ContextConfig = field(default_factory=ContextConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    skills: SkillsConfig = field(default_factory=SkillsConfig)
    worldbook: WorldbookConfig = field(default_factory=WorldbookConfig)
    tasks: TasksConfig = field(default_factory=TasksConfig)
    mcp: McpConfig = field(default_factory=McpConfig)
    prompt: PromptConfig = field(default_factory=PromptConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    debug: DebugConfig = field(default_factory=DebugConfig)

    def get(self, path: str) -> Any:
        node: Any = self
        for part in path.split("."):
            node = getattr(node, part)
        return node

    def find_provider_entry(self, name: str) -> ProviderEntry | None:
        return next((p for p in self.llm.providers if p.name == name), None)


# ---- schema walking ---------------------------------------------------------


KEYS: dict[str, Key] = {k.path: k for k in iter_keys(Config)}
ENTRY_KEYS: dict[str, Key] = {k.path: k for k in iter_keys(ProviderEntry)}
TABLE_PATHS = ("llm.providers", "llm.summary_provider", "mcp.servers", "prompt.profiles")
ALL_PATHS = tuple(KEYS) + tuple(f"llm.providers.{k}" for k in ENTRY_KEYS) + tuple(
    f"llm.summary_provider.{k}" for k in ENTRY_KEYS
) + tuple(f"mcp.servers.{k}" for k in SERVER_KEYS)


# ---- loading ----------------------------------------------------------------


@dataclass
class LoadedConfig:
    """A validated `Config` plus where each value came from."""

    config: Config
    sources: dict[str, str]
    path: Path | None
    warnings: list[str]

    def source(self, path: str) -> str:
        return self.sources.get(path, "default")


def _toml_error(path: Path, exc: ValueError) -> ConfigError:
    text = str(exc)
    match = re.search(r"\(at line (\d+), column (\d+)\)", text)
    reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", text).strip()
    if match:
        return ConfigError(f"{path}: line {match.group(1)}, column {match.group(2)}: TOML syntax error: {reason}")
    return ConfigError(f"{path}: TOML syntax error: {reason}")


def resolve_config_path(flag_path: str | None, env: Mapping[str, str]) -> tuple[Path, bool]:
    """The config file to read and whether the user named it explicitly."""
    if flag_path:
        return Path(flag_path).expanduser(), True
    if env.get("ZEPH_CONFIG"):
        return Path(env["ZEPH_CONFIG"]).expanduser(), True
    return default_config_path(env), False


def read_config_file(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a config file") from None
    except PermissionError:
        raise ConfigError(f"{path}: permission denied reading the config file") from None
    import tomllib  # only when there is a file to read

    try:
        return tomllib.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: config file is not valid UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise _toml_error(path, exc) from None


def _flatten(data: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for name, value in data.items():
        path = f"{prefix}{name}"
        if path in TABLE_PATHS:
            yield path, value
        elif isinstance(value, dict) and value:
            yield from _flatten(value, path + ".")
        else:
            yield path, value


def _section_paths() -> set[str]:
    sections: set[str] = set()
    for key in KEYS:
        parts = key.split(".")
        for i in range(1, len(parts)):
            sections.add(".".join(parts[:i]))
    return sections


# Keys a config may carry that this version does not act on: setting them warns instead of failing.
NOT_BUILT = {"memory.graph": "knowledge-graph memory is not part of zeph yet"}


def _provider_entry(raw: Any, where: str, label: str, warnings: list[str]) -> ProviderEntry:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: {label} must be a table, got {raw!r}")
    values: dict[str, Any] = {}
    for name, value in raw.items():
        key = ENTRY_KEYS.get(name)
        if key is None:
            warnings.append(f"{where}: unknown key {label}.{name}{_suggest(name, tuple(ENTRY_KEYS))}")
            continue
        values[name] = _check(dataclasses.replace(key, path=f"{label}.{name}"), value, where)
    if not values.get("type"):
        raise ConfigError(f"{where}: {label}.type is required: expected one of " + ", ".join(PROVIDER_TYPES))
    entry = ProviderEntry(**values)
    if entry.embedding_model and entry.backend not in EMBEDDING_BACKENDS:
        warnings.append(
            f"{where}: {label}.embedding_model applies to openai, ollama and compatible entries; "
            f"it is ignored for {entry.type}"
        )
    if entry.device and entry.backend != "local":
        warnings.append(f"{where}: {label}.device applies to local models only; it is ignored for {entry.type}")
    return entry


def parse_summary_model(text: str, where: str = "config") -> ProviderEntry:
    """`summary_model = "type"` or `"type/model"` → an equivalent provider entry."""
    kind, _, model = text.partition("/")
    kind = kind.strip()
    if kind not in PROVIDER_TYPES and kind not in PROVIDER_ALIASES:
        raise ConfigError(
            f"{where}: llm.summary_model = {text!r} is not valid: expected \"TYPE\" or \"TYPE/MODEL\" "
            f"with TYPE one of {', '.join(PROVIDER_TYPES)}"
        )
    return ProviderEntry(type=kind, model=model.strip())


def _set(config: Config, path: str, value: Any) -> None:
    *parents, leaf = path.split(".")
    node: Any = config
    for part in parents:
        node = getattr(node, part)
    setattr(node, leaf, value)


def load_config(
    *,
    config_path: str | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, tuple[Any, str]] | None = None,
) -> LoadedConfig:
    """Build the effective `Config`.

    `overrides` maps key paths to `(value, flag_name)` from the command line.
    Raises `ConfigError` naming the file, key or variable at fault.
    """
    env = os.environ if env is None else env
    config = Config()
    sources: dict[str, str] = {}
    warnings: list[str] = []

    path, explicit = resolve_config_path(config_path, env)
    file_data: dict[str, Any] = {}
    if path.is_file() or (explicit and path.exists()):
        file_data = read_config_file(path)
    elif explicit:
        origin = "--config" if config_path else "ZEPH_CONFIG"
        raise ConfigError(f"config file not found: {path} (from {origin})")

    where = str(path)
    sections = _section_paths()
    for key_path, value in _flatten(file_data):
        if key_path == "llm.providers":
            if not isinstance(value, list):
                raise ConfigError(f"{where}: llm.providers must be an array of tables ([[llm.providers]])")
            entries = [_provider_entry(v, where, f"llm.providers[{i}]", warnings) for i, v in enumerate(value)]
            names = [e.name for e in entries]
            for i, entry in enumerate(entries):
                if not entry.name:
                    raise ConfigError(f"{where}: llm.providers[{i}].name is required")
                if names.count(entry.name) > 1:
                    raise ConfigError(f"{where}: llm.providers has two entries named {entry.name!r}")
            config.llm.providers = entries
            sources[key_path] = "file"
            continue
        if key_path == "mcp.servers":
            config.mcp.servers = parse_servers(value, where, warnings)
            sources[key_path] = "file"
            continue
        if key_path == "prompt.profiles":
            config.prompt.profiles = parse_profiles(value, where, path.parent)
            sources[key_path] = "file"
            continue
        if key_path == "llm.summary_provider":
            config.llm.summary_provider = _provider_entry(value, where, "llm.summary_provider", warnings)
            sources[key_path] = "file"
            continue
        inert = next((k for k in NOT_BUILT if key_path == k or key_path.startswith(k + ".")), None)
        if inert is not None:
            warnings.append(f"{where}: {key_path} does nothing ({NOT_BUILT[inert]}); it is ignored")
            continue
        key = KEYS.get(key_path)
        if key is None and value == {}:  # an empty table: fine if known, else a typo
            if key_path not in sections:
                warnings.append(f"{where}: unknown table [{key_path}]{_suggest(key_path, tuple(sections))}")
            continue
        if key is None:
            if key_path in sections:
                raise ConfigError(f"{where}: {key_path} must be a table ([{key_path}]), got {value!r}")
            warnings.append(f"{where}: unknown key {key_path}{_suggest(key_path, ALL_PATHS)}")
            continue
        _set(config, key_path, _check(key, value, where))
        sources[key_path] = "file"

    for key in KEYS.values():
        for var in key.env_names:
            if var in env and env[var] != "":
                value = _check(key, _parse_env(key, env[var], var), f"environment variable {var}")
                _set(config, key.path, value)
                sources[key.path] = f"env {var}"
                break

    for key_path, (value, flag) in (overrides or {}).items():
        if value is None:
            continue
        _set(config, key_path, _check(KEYS[key_path], value, f"option {flag}"))
        sources[key_path] = f"flag {flag}"

    _check_relations(config, {k: (where if v == 'file' else v) for k, v in sources.items()})
    if config.prompt.profile.strip().lower() == "none":  # as with --profile none: no global prompt
        config.prompt.profile = ""
    profile_source = sources.get("prompt.profile", "default")
    check_profile_choice(
        config.prompt.profile,
        config.prompt.profiles,
        where if profile_source == "file" else profile_source.replace("env ", "environment variable ").replace("flag ", "option "),
    )
    if config.llm.summary_model and config.llm.summary_provider is None:
        source = sources.get("llm.summary_model", "file")
        origin = where if source == "file" else source.replace("env ", "environment variable ").replace("flag ", "option ")
        parse_summary_model(config.llm.summary_model, origin)
    return LoadedConfig(config, sources, path if file_data or path.exists() else None, warnings)


def _check_relations(config: Config, sources: dict[str, str]) -> None:
    if config.tools.sandbox.allowed_hosts:
        from ..tools.sandbox.host_proxy import parse_host_patterns

        try:
            parse_host_patterns(config.tools.sandbox.allowed_hosts)
        except ValueError as exc:
            raise ConfigError(
                f"{sources.get('tools.sandbox.allowed_hosts', 'default')}: tools.sandbox.allowed_hosts: {exc}"
            ) from None
    unknown = [name for name in config.index.languages if name not in (*INDEX_LANGUAGES, "text")]
    if unknown:
        raise ConfigError(
            f"{sources.get('index.languages', 'default')}: index.languages: {', '.join(map(repr, unknown))} "
            f"{'is' if len(unknown) == 1 else 'are'} not a language the index reads (one of {', '.join(INDEX_LANGUAGES)}, text)"
        )
    for pattern in config.tools.blocked_commands:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(
                f"{sources.get('tools.blocked_commands', 'default')}: tools.blocked_commands entry {pattern!r} "
                f"is not a valid regular expression: {exc}"
            ) from None
    for name in ("allow", "deny"):
        for rule in getattr(config.tools, name):
            tool, _, glob = rule.partition(":")
            if not re.fullmatch(r"[A-Za-z0-9_*?-]+", tool.strip()) or (":" in rule and not glob.strip()):
                raise ConfigError(
                    f"{sources.get(f'tools.{name}', 'default')}: tools.{name} entry {rule!r} is not valid: "
                    'expected "TOOL" or "TOOL:GLOB", e.g. "bash:git status*"'
                )
    m = config.memory
    if m.soft_compaction_threshold >= m.hard_compaction_threshold:
        raise ConfigError(
            f"memory.soft_compaction_threshold ({m.soft_compaction_threshold:g}, from {sources.get('memory.soft_compaction_threshold', 'default')}) "
            f"must be below memory.hard_compaction_threshold ({m.hard_compaction_threshold:g}, "
            f"from {sources.get('memory.hard_compaction_threshold', 'default')})"
        )
    p = m.compression.probe
    if p.hard_fail_threshold >= p.threshold:
        raise ConfigError(
            f"memory.compression.probe.hard_fail_threshold ({p.hard_fail_threshold:g}) must be below "
            f"memory.compression.probe.threshold ({p.threshold:g})"
        )


# ---- writing ----------------------------------------------------------------


def to_toml_dict(config: Config) -> dict[str, Any]:
    """The config as nested plain data (unset optional keys left out), for tomli-w."""

    def convert(obj: Any) -> Any:
        if dataclasses.is_dataclass(obj):
            out = {}
            for f in dataclasses.fields(obj):
                value = convert(getattr(obj, f.name))
                if value is not None:
                    out[f.name] = value
            return out
        if isinstance(obj, (list, tuple)):
            return [convert(v) for v in obj]
        return obj

    return convert(config)
