"""Features, one package each: its tables and their migrations, its turn logic, context sources, tools,
command-line commands and chat-app commands.

Invariant: a feature registers by its package's `FEATURE` (a `Feature`: module and attribute names,
declarations and predicates; nothing of it is imported until used), and the core finds every
feature's sources, tools, command groups and chat-app commands through `features()` and the functions
below: the source registry, the tool offer, `zeph`'s command table and the chat app's name none of them.
A feature's heavy dependencies (numpy and the embedders, qdrant-client, the `mcp` SDK, PyYAML) load
only when the feature is used, and `zeph ask` imports no feature's commands.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from functools import cache
from typing import Any, NamedTuple, Protocol

from ..context.blocks import OPEN, Registration, SourcePolicy, always
from ..tools.specs import BUILTIN, ToolDeclaration

# The feature packages (by full dotted name), in the order their sources are asked, their tools offered and
# their commands listed.
PACKAGES = [f"{__name__}.{name}" for name in ("worldbook", "memory", "session_memory", "skills", "code_index", "mcp", "tasks")]


class CommandGroup(NamedTuple):
    """A `zeph NAME …` command group: the Typer app `attribute` of `module`, imported when named."""

    name: str
    module: str
    attribute: str


class ChatCommand(NamedTuple):
    """A chat-app slash command: `/name hint`, run by `handler` (module, async function of a `ChatHost` and
    the argument), imported when the command is first typed."""

    name: str
    hint: str  # the argument as shown ("" = takes none; "[X]" = optional)
    help: str
    handler: tuple[str, str]
    check: str = ""  # a function of the handler's module: why an argument cannot run, or None (said as typed)
    background: bool = False  # runs beside a turn, the app usable meanwhile (it may wait on servers)


class Isolation(NamedTuple):
    """What worldbook isolation leaves out of a feature: sources (by name) and tool groups, and the words
    `zeph context` says them in."""

    sources: frozenset[str] = frozenset()
    tool_groups: frozenset[str] = frozenset()
    says: tuple[str, ...] = ()


class Feature(NamedTuple):
    name: str
    sources: tuple[Registration, ...] = ()
    tools: tuple[ToolDeclaration, ...] = ()  # offered, in this order, after the core's
    tools_offered: Callable[[Any], bool] = always  # whether a session (a `SourceHost`) offers them now
    command_group: CommandGroup | None = None
    chat_commands: tuple[ChatCommand, ...] = ()
    isolation: Isolation = Isolation()  # what isolation leaves out (nothing: the feature is kept)


class ChatHost(Protocol):
    """What a feature's chat-app command uses of the app: the chat session, notices, Markdown in the
    transcript, the context gauge, the input box, and whether a turn runs."""

    @property
    def session(self) -> Any: ...  # the `ChatSession`
    async def notice(self, text: str, kind: str = "info") -> None: ...
    async def show(self, markdown: str) -> None: ...
    def refresh_gauge(self) -> object: ...
    def put_input(self, text: str) -> None: ...  # into the input box, to edit and send
    @property
    def busy(self) -> bool: ...  # a turn (or a compaction) is running
    async def load_transcript(self) -> None: ...  # the session's transcript shown again (messages were added)


@cache
def features() -> tuple[Feature, ...]:
    """Every feature's registration, in `PACKAGES` order (importing each package's `__init__` alone).
    Two features registering one name (a tool, a command group, a chat command), or a feature's tool named
    as a core one, are refused here, naming both."""
    found = tuple(importlib.import_module(package).FEATURE for package in PACKAGES)
    seen: dict[tuple[str, str], str] = {("tool", name): "the core" for name in BUILTIN}
    for feature in found:
        names = [("tool", t.name) for t in feature.tools] + [("chat command", c.name) for c in feature.chat_commands]
        names += [("command group", feature.command_group.name)] if feature.command_group else []
        for key in names:
            if key in seen:
                raise ValueError(f"the {key[0]} {key[1]!r} of feature {feature.name!r} is {seen[key]}'s already")
            seen[key] = f"feature {feature.name!r}"
    return found


@cache
def isolation_policy() -> SourcePolicy:
    """Worldbook isolation: every feature's sources and tool groups its `isolation` names left out."""
    parts = [feature.isolation for feature in features()]
    return SourcePolicy(frozenset().union(*(p.sources for p in parts)), frozenset().union(*(p.tool_groups for p in parts)),
                        tuple(word for p in parts for word in p.says))


def policy_for(isolated: bool) -> SourcePolicy:
    return isolation_policy() if isolated else OPEN


def source_registrations() -> list[Registration]:
    return [registration for feature in features() for registration in feature.sources]


def offered_tools(host: Any) -> list[ToolDeclaration]:
    """The tools features offer `host`'s session now, in order (before the policy and the mode apply)."""
    return [tool for feature in features() if feature.tools and feature.tools_offered(host) for tool in feature.tools]


def declared_tools() -> dict[str, ToolDeclaration]:
    """Every declared tool by name: the core's, then the features'."""
    return {**BUILTIN, **{tool.name: tool for feature in features() for tool in feature.tools}}


def command_groups() -> dict[str, CommandGroup]:
    return {f.command_group.name: f.command_group for f in features() if f.command_group is not None}


def chat_commands() -> dict[str, ChatCommand]:
    return {command.name: command for feature in features() for command in feature.chat_commands}


def chat_handler(command: ChatCommand) -> Callable[[ChatHost, str], Awaitable[None]]:
    module, function = command.handler
    return getattr(importlib.import_module(module), function)


def chat_problem(command: ChatCommand, argument: str) -> str | None:
    """Why `argument` cannot run `command` (its `check`), or None."""
    if not command.check:
        return None
    return getattr(importlib.import_module(command.handler[0]), command.check)(argument)
