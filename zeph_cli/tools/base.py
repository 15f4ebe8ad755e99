"""The tool protocol: what a built-in tool declares and returns.

Invariant: a tool validates its arguments against its own JSON schema, touches
the file system only through the `Confinement` in its `ToolContext`, and ends
every call as a `ToolResult` — a failure the model should read is raised as
`ToolFailure` (turned into an error result), never as a crash.
"""

from __future__ import annotations

import abc
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..messages import ImagePart, ToolSpec
from .confinement import Confinement
from .failures import ToolFailure

if TYPE_CHECKING:
    from ..config.modes import Mode
    from .memory_access import MemoryAccess
    from .specs import ToolDeclaration
    from .sandbox import Sandbox
    from .skill_access import SkillAccess
    from .code_access import CodeSearchAccess
    from .resource_access import ResourceAccess
    from ..store.sqlite import Database

__all__ = [
    "SubagentRequest", "SubagentRunner", "Tool", "ToolContext", "ToolFailure", "ToolKind", "ToolResult", "ToolSet",
    "validate_arguments",
]

ToolKind = Literal["read", "write", "exec"]


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns: its content for the model and one line for the user."""
    content: str
    is_error: bool = False
    exit_code: int | None = None
    # For the user: one line saying what happened ("exit 0 · 12 lines").
    summary: str = ""
    # Images for the model (a screenshot, a chart), after the text; a model that reads text only gets placeholders.
    images: tuple[ImagePart, ...] = ()


OverflowReader = Callable[[str], "str | None"]
ContextCompressor = Callable[[str], Awaitable[str]]


@dataclass(frozen=True)
class SubagentRequest:
    """What a `task` call asks for: a job for a sub-agent, in a mode, with a subset of tools (None = all)."""
    description: str
    prompt: str
    mode: str | None = None  # None = the session's
    tools: tuple[str, ...] | None = None
    call_id: str = ""  # the task call that starts it (kept with the sub-agent's session)


# Runs one sub-agent; `progress` takes what it reports as it goes (its events, for the front ends).
SubagentRunner = Callable[[SubagentRequest, Callable[[object], None]], Awaitable[ToolResult]]


@dataclass(frozen=True)
class ToolContext:
    """Where and how tools run for one agent."""

    confinement: Confinement
    cwd: Path
    # Full text of an earlier truncated output, by overflow id (for read_overflow).
    read_overflow: OverflowReader | None = None
    default_timeout_secs: float = 120.0
    max_timeout_secs: float = 600.0
    env: Mapping[str, str] | None = None  # None = the process environment
    # Variables passed to commands although they look like secrets (patterns), and the names that are
    # secrets whatever they look like (the providers' api_key_env): see tools/command_env.py.
    pass_env: tuple[str, ...] = ()
    secret_env: tuple[str, ...] = ()
    # Context compression on demand (compress_context): strategy in, a one-line outcome out.
    compress: ContextCompressor | None = None
    # The OS sandbox every process a tool starts runs in; None = unconfined.
    sandbox: "Sandbox | None" = None
    # Long-term memory as seen from this session (memory_save, memory_search); None = not available.
    memories: "MemoryAccess | None" = None
    # The skills load_skill reads (a SkillService); None = no skills.
    skills: "SkillAccess | None" = None
    # The project's code index search_code reads; None = no index here.
    code_search: "CodeSearchAccess | None" = None
    # The MCP servers' resources (mcp_list_resources, mcp_read_resource); None = no MCP servers.
    mcp_resources: "ResourceAccess | None" = None
    # Starts sub-agents (the task tool); None = not available here.
    run_subagent: SubagentRunner | None = None
    # Tools this session knows but does not offer, with why (a call to one is refused with that reason).
    withheld: Mapping[str, str] = field(default_factory=dict)
    # Set for each call by the runner: the call's id, and where a tool reports progress as it runs.
    call_id: str = ""
    progress: Callable[[object], None] | None = None
    # The session the calls belong to and the database it is stored in (todo_write keeps its task list
    # there); None = a session that is not stored.
    conversation_id: int | None = None
    database: "Database | None" = None


class Tool(abc.ABC):
    """A tool. Subclasses set the class attributes (or declare them) and implement `run`."""

    name: str = ""
    kind: ToolKind = "read"
    description: str = ""
    parameters: dict[str, Any] = {}  # noqa: RUF012 — a JSON schema, replaced (never changed) by classes and instances
    group: str = ""  # the tool group a session's policy may deny ("memory tools", "MCP tools"); "" = the core's

    def __init_subclass__(cls, declared: str | ToolDeclaration | None = None, **kwargs: Any) -> None:
        """`declared`: the declaration this class implements, or the name of a core one (`specs.BUILTIN`)."""
        super().__init_subclass__(**kwargs)
        if isinstance(declared, str):
            from .specs import BUILTIN

            declared = BUILTIN[declared]
        if declared is not None:
            cls.name, cls.description, cls.parameters, cls.group = (
                declared.name, declared.description, declared.parameters, declared.group,
            )
            cls.kind = declared.kind  # type: ignore[assignment]

    def offered_in(self, mode: Mode) -> bool:
        """Whether `mode` offers this tool: a read-only mode offers only tools that change nothing."""
        return not mode.read_only or self.kind == "read"

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)

    @abc.abstractmethod
    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Run with arguments already checked by `validate_arguments`."""

    def kind_of_call(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        """The kind this call is asked about as (`kind` unless what it reaches makes it more: a resource
        read from an untrusted server is asked about like that server's tools)."""
        return self.kind

    def subject(self, arguments: Mapping[str, Any]) -> str:
        """What permission rules match and the user reads: the command or the path."""
        for key in ("command", "path", "pattern", "id"):
            value = arguments.get(key)
            if isinstance(value, str):
                return value
        return ""


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def validate_arguments(tool_name: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Check required arguments and the JSON type of each known one.

    Raises `ToolFailure` naming the argument; unknown arguments are dropped
    (models sometimes add harmless extras). Integers given as whole floats or
    numeric strings are accepted, as models often send them that way.
    """
    properties: Mapping[str, Any] = schema.get("properties", {})
    checked: dict[str, Any] = {}
    for name in schema.get("required", ()):
        if arguments.get(name) is None:
            raise ToolFailure(f"{tool_name}: missing required argument {name!r}")
    for name, value in arguments.items():
        prop = properties.get(name)
        if prop is None or value is None:
            continue
        expected = prop.get("type") if isinstance(prop, Mapping) else None
        if not isinstance(expected, str):
            checked[name] = value  # anyOf, a list of types or no type: the tool's own server checks it
            continue
        if expected in ("object", "array") and isinstance(value, str):
            value = _decoded(value, expected)
        if expected == "integer":
            value = _as_integer(tool_name, name, value)
        elif expected == "number" and isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise ToolFailure(f"{tool_name}: argument {name!r} must be a number, got {value!r}") from None
        elif expected == "boolean" and isinstance(value, str) and value.lower() in ("true", "false"):
            value = value.lower() == "true"
        types = _JSON_TYPES.get(expected, (object,))
        if not isinstance(value, types) or (expected != "boolean" and isinstance(value, bool)):
            raise ToolFailure(f"{tool_name}: argument {name!r} must be {expected}, got {type(value).__name__} {value!r}"[:300])
        minimum = prop.get("minimum")
        if minimum is not None and value < minimum:
            raise ToolFailure(f"{tool_name}: argument {name!r} must be >= {minimum}, got {value!r}")
        checked[name] = value
    return checked


def _decoded(value: str, expected: str) -> Any:
    """An object or array a model sent as JSON text, decoded; otherwise the text unchanged."""
    try:
        decoded = json.loads(value)
    except ValueError:
        return value
    return decoded if isinstance(decoded, _JSON_TYPES[expected]) else value


def _as_integer(tool_name: str, name: str, value: Any) -> int:
    if isinstance(value, bool):
        raise ToolFailure(f"{tool_name}: argument {name!r} must be integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise ToolFailure(f"{tool_name}: argument {name!r} must be integer, got {value!r}"[:300])


def without_descriptions(schema: Any) -> Any:
    """A JSON schema without its prose; property names (even one called "description") stay."""
    if isinstance(schema, list):
        return [without_descriptions(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key in ("description", "examples", "title"):
            continue
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            out[key] = {name: without_descriptions(sub) for name, sub in value.items()}
        else:
            out[key] = without_descriptions(value)
    return out


def compact_spec(spec: ToolSpec) -> ToolSpec:
    """The same tool in about a third of the tokens: the first sentence of its description and its
    argument schema without descriptions (names, types, enums and required fields stay)."""
    first = re.split(r"(?<=[.!?])\s", spec.description.strip(), maxsplit=1)[0]
    return ToolSpec(spec.name, first, without_descriptions(spec.parameters))


@dataclass
class ToolSet:
    """The tools offered in one mode, by name."""

    tools: dict[str, Tool] = field(default_factory=dict)
    compact: bool = False  # schemas without parameter descriptions, one-sentence descriptions (small budgets)

    def specs(self) -> tuple[ToolSpec, ...]:
        specs = tuple(t.spec() for t in self.tools.values())
        return tuple(compact_spec(s) for s in specs) if self.compact else specs

    def get(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def names(self) -> list[str]:
        return list(self.tools)

