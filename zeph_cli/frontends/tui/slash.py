"""Slash commands of the chat input: the table, parsing, completion and what /help lists.

Invariant: pure functions of the typed text (no Textual, no I/O); the features' commands come from
their registrations (`features.chat_commands`), each argument checked by its feature. Input is a
command only when its first word is `/` followed by letters or dashes and no
further `/`; anything else (`/usr/bin is odd`, `//literal`) is a message.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from ...config import AGENT_MODES
from ...config.modes import modes_help
from ...features import chat_commands, chat_problem


@dataclass(frozen=True)
class CommandSpec:
    name: str
    hint: str  # the argument as shown to the user ("" = takes none; "[X]" = optional)
    help: str
    required: bool = False
    example: str = ""  # an argument that works, quoted when the required one is missing


COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("help", "", "Show the commands and the key bindings."),
    CommandSpec("compact", "", "Compact now: prune old tool output, then summarize."),
    CommandSpec("context", "[text]", "Show the context's blocks against the budget; text: as sent."),
    CommandSpec("clear", "", "Start a fresh context; the session's history is kept."),
    CommandSpec("new", "", "Start a new session."),
    CommandSpec("sessions", "[QUERY]", "List or search the sessions, to switch to one."),
    CommandSpec("model", "NAME", "Switch the model for this session.", True, "claude-haiku-4-5"),
    CommandSpec("provider", "NAME", "Switch the provider (a type or a configured entry name).", True, "ollama"),
    CommandSpec("mode", "|".join(AGENT_MODES), f"Switch the mode — {modes_help()}.", True, "plan"),
    CommandSpec("system", "TEXT", "Set this session's topic prompt.", True, "Answer in French."),
    CommandSpec("enhance", "[TEXT]", "Set the prompt sent last in each request (none: configured)."),
    *(CommandSpec(c.name, c.hint, c.help) for c in chat_commands().values()),  # the features'
    CommandSpec("export", "[PATH|json]", "Export as Markdown, or as JSON with every message (.json)."),
    CommandSpec("exit", "", "Leave zeph."),
)
ALIASES: dict[str, str] = {"quit": "exit"}

_BY_NAME = {spec.name: spec for spec in COMMANDS}
if len(_BY_NAME) != len(COMMANDS):  # a feature's chat command named as another command: refused, not shadowed
    raise ValueError(f"two chat-app commands are named {next(n for n in _BY_NAME if [s.name for s in COMMANDS].count(n) > 1)!r}")
# The first word of a command: "/" then letters or dashes, nothing else.
_COMMAND_WORD = re.compile(r"/([A-Za-z][A-Za-z-]*)")
_FIRST_WORD = re.compile(r"(\S*)(\s*)(.*)", re.DOTALL)

KEY_BINDINGS: tuple[tuple[str, str], ...] = (
    ("Enter", "send the message"),
    ("Shift+Enter or Ctrl+J", "new line"),
    ("Up / Down", "recall earlier inputs"),
    ("PageUp / PageDown", "scroll the transcript"),
    ("Tab", "complete a /command"),
    ("Esc or Ctrl+C", "cancel the running turn"),
    ("Ctrl+C twice or Ctrl+Q", "quit"),
    ("Ctrl+C on selected text", "copy it"),
    ("F1", "this help"),
    ("Ctrl+T", "show or hide the task list"),
)


@dataclass(frozen=True)
class SlashCommand:
    name: str  # canonical name, lower case, aliases resolved ("quit" → "exit")
    argument: str = ""  # verbatim apart from surrounding whitespace; /mode values are lower-cased


@dataclass(frozen=True)
class SlashError:
    message: str  # one sentence for the user, ending with what to do instead


@dataclass(frozen=True)
class Completion:
    value: str  # the whole input after accepting it, e.g. "/model " or "/mode plan"
    label: str  # what the list shows, e.g. "/model" or "plan"
    hint: str
    help: str


def command(name: str) -> CommandSpec | None:
    """The spec of a command by name or alias, case-insensitive."""
    name = name.lower()
    return _BY_NAME.get(ALIASES.get(name, name))


def unescape(text: str) -> str:
    """The message to send for input that is not a command: a leading `//` stands for a literal `/`."""
    stripped = text.lstrip()
    if stripped.startswith("//"):
        return stripped[1:]
    return text


def _split(text: str) -> tuple[str, str, str]:
    """(first word, the whitespace after it, the rest), leading whitespace ignored."""
    match = _FIRST_WORD.fullmatch(text.lstrip())
    assert match is not None  # the pattern matches every string
    return match.group(1), match.group(2), match.group(3)


def _typed_name(word: str) -> str | None:
    """The command name in the first word, or None when the input is a message."""
    match = _COMMAND_WORD.fullmatch(word)
    return match.group(1).lower() if match else None


def parse(text: str) -> SlashCommand | SlashError | None:
    """The command typed, an error to show instead of sending, or None for an ordinary message.

    `/` alone is an error rather than a message; `//text` is the message `/text`
    (see `unescape`), and a first word like `/usr/bin` or `/2` is a message too.
    """
    word, _, rest = _split(text)
    if word == "/":
        return SlashError("type a command name after / (/help lists them)")
    name = _typed_name(word)
    if name is None:
        return None
    spec = command(name)
    if spec is None:
        return SlashError(_unknown(name))
    argument = rest.strip()
    if not spec.hint and argument:
        return SlashError(f"/{spec.name} takes no argument (start the message with // to send it as text)")
    if spec.required and not argument:
        return SlashError(f"/{spec.name} needs {spec.hint}: /{spec.name} {spec.example}")
    if spec.name == "mode":
        return _mode(argument)
    if spec.name == "context" and argument.lower() not in ("", "text"):
        return SlashError("/context takes no argument, or text for the text of each block as sent")
    if spec.name == "context":
        return SlashCommand("context", argument.lower())
    feature_command = chat_commands().get(spec.name)
    problem = chat_problem(feature_command, argument) if feature_command is not None else None
    if problem:
        return SlashError(problem)
    return SlashCommand(spec.name, argument)


def _unknown(name: str) -> str:
    suggestions = difflib.get_close_matches(name, [*_BY_NAME, *ALIASES], n=2, cutoff=0.6)
    if not suggestions:
        return f"unknown command /{name} (/help lists them)"
    return f"unknown command /{name} — did you mean {' or '.join('/' + s for s in suggestions)}? (/help lists them)"


def _mode(argument: str) -> SlashCommand | SlashError:
    value = argument.lower()
    if value in AGENT_MODES:
        return SlashCommand("mode", value)
    choices = ", ".join(AGENT_MODES[:-1]) + f" or {AGENT_MODES[-1]}"
    close = difflib.get_close_matches(value, AGENT_MODES, n=1, cutoff=0.6)
    guess = f" — did you mean {close[0]}?" if close else ""
    return SlashError(f"/mode takes {choices}, not {argument!r}{guess}")


def complete(text: str) -> list[Completion]:
    """Completions for the input: command names while the first word is typed, then /mode values."""
    word, space, rest = _split(text)
    if not word.startswith("/") or word.startswith("//"):
        return []
    if not space:
        prefix = word[1:].lower()
        if prefix and _typed_name(word) is None:
            return []
        return _complete_names(prefix)
    spec = command(_typed_name(word) or "")
    if spec is None or spec.name != "mode" or "\n" in rest or " " in rest.strip():
        return []
    typed = rest.strip().lower()
    return [
        Completion(f"/mode {value}", value, "", f"switch to {value} mode")
        for value in AGENT_MODES
        if value.startswith(typed)
    ]


def _complete_names(prefix: str) -> list[Completion]:
    shown = [spec for spec in COMMANDS if spec.name.startswith(prefix)]
    completions = [_name_completion(spec.name, spec) for spec in shown]
    for alias, target in ALIASES.items():
        if alias.startswith(prefix) and _BY_NAME[target] not in shown:
            completions.append(_name_completion(alias, _BY_NAME[target]))
    return completions


def _name_completion(name: str, spec: CommandSpec) -> Completion:
    value = f"/{name} " if spec.hint else f"/{name}"
    return Completion(value, f"/{name}", spec.hint, spec.help)


HELP_NOTE = "Start a message with // to send it as text beginning with /."


def help_rows() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """What /help lists: (usage, what it does) for every command (aliases named), then (keys, what they do)."""
    commands = []
    for spec in COMMANDS:
        aliases = [f"/{a}" for a, target in ALIASES.items() if target == spec.name]
        also = f" (also {', '.join(aliases)})" if aliases else ""
        commands.append((f"/{spec.name} {spec.hint}".rstrip() + also, spec.help))
    return commands, list(KEY_BINDINGS)
