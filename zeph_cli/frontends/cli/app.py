"""The `zeph` command line (Typer): presentation only.

Invariant: commands parse arguments, call the agent or the store service and
print; they never talk to a provider or SQL directly. Heavy modules (store,
providers, SDKs, Textual) are imported inside the commands that need them, and
every failure ends as a one-line `zeph: error: …` with a non-zero exit code.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Optional

import typer

from ... import __version__
from ...errors import StoreError, UsageError, ZephError
from ...config.modes import modes_help
from ...features import command_groups
from ...features import memory as memory_feature
from .command_context import load, open_store, read_stdin, state, stdout_is_terminal
from ...process_exit import leave
from ...startup_gc import freeze_after_start_up, pause_for_start_up
from .stderr import eprint, warning_line

if TYPE_CHECKING:
    from ...config import LoadedConfig

# Command groups in modules of their own (by full dotted name: a feature's commands live in its package),
# imported only when named on the command line (or for --help):
# `zeph ask` does not pay for the commands it is not.
LAZY_GROUPS = {
    "sessions": ("zeph_cli.frontends.cli.sessions_command", "sessions_app"),
    **{group.name: (group.module, group.attribute) for group in command_groups().values()},
}


class _RootGroup(typer.core.TyperGroup):
    """The `zeph` group: the `LAZY_GROUPS` are added when first asked for, after the others in help."""

    def get_command(self, ctx, cmd_name):
        if cmd_name not in self.commands and cmd_name in LAZY_GROUPS:
            module, attribute = LAZY_GROUPS[cmd_name]
            sub_app = getattr(importlib.import_module(module), attribute)
            group = typer.main.get_group_from_info(  # as `add_typer` would: this app's help style
                typer.models.TyperInfo(sub_app, name=cmd_name), pretty_exceptions_short=app.pretty_exceptions_short,
                rich_markup_mode=self.rich_markup_mode, suggest_commands=self.suggest_commands,
            )
            self.commands[cmd_name] = group
        command = super().get_command(ctx, cmd_name)
        for each in (command, *getattr(command, "commands", {}).values()) if command else ():
            _summary_whole(each)
        return command

    def list_commands(self, ctx):
        return [*self.commands, *(name for name in LAZY_GROUPS if name not in self.commands)]


def _summary_whole(command: Any) -> None:
    """A command's summary in a group's help is its help's first paragraph, whole: given as `short_help`,
    click wraps it on a narrow terminal instead of cutting it mid-sentence ("...")."""
    if command.short_help is None and command.help:
        command.short_help = " ".join(command.help.split("\n\n")[0].split())


app = typer.Typer(
    cls=_RootGroup,
    name="zeph",
    help="A terminal AI agent that keeps the right information in the context window.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
config_app = typer.Typer(help="Inspect the configuration.", no_args_is_help=True)
app.add_typer(config_app, name="config")


def _version(value: bool) -> None:
    if value:
        print(f"zeph {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    config: Optional[str] = typer.Option(None, "--config", metavar="PATH", help="Config file (default: $ZEPH_CONFIG or the XDG config dir)."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version and exit."),
    continue_: bool = typer.Option(False, "-c", "--continue", help="Open the chat on the most recent session."),
    session: Optional[int] = typer.Option(None, "--session", metavar="ID", help="Open the chat on session ID."),
    model: Optional[str] = typer.Option(None, "-m", "--model", metavar="MODEL", help="Model for the chat (for local: a .gguf path)."),
    provider: Optional[str] = typer.Option(None, "-p", "--provider", metavar="PROVIDER", help="Provider for the chat."),
    mode: Optional[str] = typer.Option(None, "--mode", metavar="MODE", help=modes_help() + "."),
    profile: Optional[str] = typer.Option(None, "--profile", metavar="NAME", help="Global prompt profile for new sessions ([prompt.profiles]; none = no global prompt)."),
) -> None:
    """zeph: a chat in the terminal (run with no command), or ask questions and manage sessions."""
    state.config_path = config
    if ctx.invoked_subcommand is None:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            if continue_ or session is not None or model or provider or mode or profile is not None:
                raise UsageError("the chat needs a terminal; for one question use: zeph ask \"...\"")
            print(ctx.get_help())
            raise typer.Exit()
        loaded = load({
            "llm.model": (model, "--model"), "llm.provider": (provider, "--provider"), "agent.mode": (mode, "--mode"),
            "prompt.profile": (profile_choice(profile), "--profile"),
        })
        raise typer.Exit(_chat(loaded, continue_, session))


# ---- shared helpers -------------------------------------------------------------


def _chat(loaded: "LoadedConfig", continue_last: bool, session_id: Optional[int]) -> int:
    """Open the chat app (Textual is imported only here)."""
    import asyncio

    from ..tui.run import run_chat

    return asyncio.run(run_chat(loaded, continue_last=continue_last, session_id=session_id))


def combine_prompt(prompt: Optional[str], stdin_text: str) -> str:
    prompt = (prompt or "").strip()
    piped = stdin_text.strip("\n")
    if prompt and piped.strip():
        return f"{prompt}\n\n{piped}"
    return prompt or piped


def profile_choice(flag: Optional[str]) -> Optional[str]:
    """--profile's value for the config: "none" (any case) means no global prompt."""
    if flag is None:
        return None
    return "" if flag.strip().lower() == "none" else flag.strip()


# ---- ask ---------------------------------------------------------------------------


@app.command()
def ask(
    prompt: Optional[str] = typer.Argument(None, metavar="PROMPT", help="The question; piped standard input is sent with it."),
    model: Optional[str] = typer.Option(None, "-m", "--model", metavar="MODEL", help="Model to use (for local: a .gguf path)."),
    provider: Optional[str] = typer.Option(None, "-p", "--provider", metavar="PROVIDER", help="anthropic, openai, compatible, ollama, local, or a [[llm.providers]] name."),
    system: Optional[str] = typer.Option(None, "-s", "--topic", "--system", metavar="TEXT", help="Topic prompt: what this session is about (kept for -c turns)."),
    continue_: bool = typer.Option(False, "-c", "--continue", help="Continue the most recent session."),
    session: Optional[int] = typer.Option(None, "--session", metavar="ID", help="Continue session ID."),
    profile: Optional[str] = typer.Option(None, "--profile", metavar="NAME", help="Global prompt profile of the session ([prompt.profiles]; none = no global prompt)."),
    enhance: Optional[str] = typer.Option(
        None, "--enhance", metavar="TEXT", help="Enhancement prompt sent last with every request of the session (\"\" = the configured one)."
    ),
    attach: Optional[list[str]] = typer.Option(
        None, "-a", "--attach", metavar="FILE", help="Attach a text file to the prompt (repeatable; at most a quarter of the prompt budget each)."
    ),
    no_stream: bool = typer.Option(False, "--no-stream", help="Wait for the whole reply instead of streaming it."),
    usage: bool = typer.Option(False, "-u", "--usage", help="Print token usage and context fill to stderr."),
    json_output: bool = typer.Option(False, "--json", help="Print the reply and its metadata as JSON."),
    mode: Optional[str] = typer.Option(None, "--mode", metavar="MODE", help=modes_help() + "."),
    yes: bool = typer.Option(False, "-y", "--yes", help="Approve every write and exec tool call of this command."),
    debug_dump: Optional[str] = typer.Option(
        None, "--debug-dump", metavar="DIR", help="Write each provider request and response, and each compaction, as numbered JSON files to DIR."
    ),
) -> None:
    """Ask a one-shot question, or continue a session.

    The reply is printed as it streams (Markdown on a terminal, plain text on a pipe).

    In agent mode the model may read, search and change files and run commands
    in the workspace. Write and exec tools ask first on a terminal; without a
    terminal they are refused unless -y/--yes is given.
    """
    pause_for_start_up()  # what start-up imports and builds lives as long as the process
    if continue_ and session is not None:
        raise UsageError("use either -c/--continue or --session ID, not both")
    text = combine_prompt(prompt, read_stdin())
    if not text.strip():
        raise UsageError('no prompt: pass one (zeph ask "…") or pipe text on standard input')
    loaded = load({
        "llm.model": (model, "--model"),
        "llm.provider": (provider, "--provider"),
        "agent.mode": (mode, "--mode"),
        "debug.dump_dir": (debug_dump, "--debug-dump"),
        "prompt.profile": (profile_choice(profile), "--profile"),
    })
    from ...providers import start_for_config

    early_load = start_for_config(loaded.config, os.environ, loaded.sources)  # the embedded model loads while we start
    if early_load is not None:
        early_load.wait_until_imported()  # our imports below then run beside llama.cpp's C loading
    import asyncio

    from .ask_command import AskOptions, run_ask

    options = AskOptions(system, continue_, session, not no_stream, usage, json_output, yes, stdout_is_terminal(), enhance,
                         profile_choice(profile), tuple(attach or ()))
    try:
        store = open_store()
        exit_code = asyncio.run(run_ask(loaded, text, options, store))
    except StoreError as exc:  # the database cannot be used at all: the prompt goes to a file instead
        eprint(f"zeph: error: {exc}")
        eprint(f"zeph: {_rescued(text)}")
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:  # Ctrl+C before run_ask could take it (opening the store, starting the loop)
        eprint(f"zeph: interrupted; {_rescued(text)}")
        raise typer.Exit(130) from None
    raise typer.Exit(exit_code)


def _rescued(text: str) -> str:
    """Keep a prompt that never reached a turn in a file; say where (`prompt_keeper.rescue_prompt`)."""
    from ...paths import data_dir
    from ..prompt_keeper import rescue_prompt

    return rescue_prompt(text, data_dir(os.environ))


@app.command()
def compact(
    session: Optional[int] = typer.Option(None, "--session", metavar="ID", help="Session ID (default: the most recent)."),
    model: Optional[str] = typer.Option(None, "-m", "--model", metavar="MODEL", help="Model that writes the summary."),
    provider: Optional[str] = typer.Option(None, "-p", "--provider", metavar="PROVIDER", help="Provider that writes the summary."),
) -> None:
    """Summarize all but a session's last messages now.

    The originals stay in your scroll-back (zeph sessions show).
    """
    import asyncio

    loaded = load({"llm.model": (model, "--model"), "llm.provider": (provider, "--provider")})
    raise typer.Exit(asyncio.run(_compact(loaded, session)))


@asynccontextmanager
async def session_agent(loaded: "LoadedConfig", session_id: Optional[int]):
    """A started agent on a session (the most recent by default); closes provider and store."""
    from ...agent.factory import build_agent, close_agent
    from ...agent.workspace import current_directory

    store = open_store()
    try:
        from .sessions_command import resolve_session

        conversation = resolve_session(store, session_id, session_id is None)
        agent, warnings = await build_agent(loaded, store=store, env=os.environ, cwd=current_directory())
        try:
            for warning in warnings:
                eprint(warning_line(warning))
            yield agent, conversation
        finally:
            await close_agent(agent)
    finally:
        store.close()


async def _compact(loaded: "LoadedConfig", session_id: Optional[int]) -> int:
    """Exit status 1 when the probe rejected the summary (the originals are kept)."""
    from ...agent.events import AgentWarning, CompactionFinished, CompactionStatus, TurnQueued
    from ..render import waiting_line

    status = 0
    async with session_agent(loaded, session_id) as (agent, conversation):
        async for event in agent.compact(conversation):
            if isinstance(event, TurnQueued):
                eprint(waiting_line(event))
            elif isinstance(event, CompactionStatus):
                eprint(event.text)
            elif isinstance(event, AgentWarning):
                eprint(warning_line(event.text))
            elif isinstance(event, CompactionFinished):
                print(f"session {conversation.id}: {event.result.describe()}")
                status = 1 if event.result.rejected else status
    return status


@app.command()
def context(
    session: Optional[int] = typer.Option(None, "--session", metavar="ID", help="Session ID (default: the most recent)."),
    model: Optional[str] = typer.Option(None, "-m", "--model", metavar="MODEL", help="Model whose window to budget for."),
    provider: Optional[str] = typer.Option(None, "-p", "--provider", metavar="PROVIDER", help="Provider to budget for."),
    mode: Optional[str] = typer.Option(None, "--mode", metavar="MODE", help="agent, ask or plan (changes the tools offered)."),
    json_output: bool = typer.Option(False, "--json", help="Print JSON."),
    text: bool = typer.Option(False, "--text", help="Print the text of each block, in the order it is sent."),
) -> None:
    """Show what the next turn of a session would send.

    Each block, its tokens and its share of the budget; --text prints the blocks themselves.
    """
    import asyncio

    loaded = load({"llm.model": (model, "--model"), "llm.provider": (provider, "--provider"), "agent.mode": (mode, "--mode")})
    asyncio.run(_context(loaded, session, json_output, text))


async def preview_memory(agent, conversation) -> tuple[str, int]:
    """Recall, memories, skills and MCP tools for the session's last user message, as its last turn saw
    them; the embedder's label and how many stored messages have no vector yet."""
    history = agent.agent_history(conversation)
    query = next((i.message.content for i in reversed(history) if i.message.role == "user"), "")
    agent.turn_worldbook = agent.worldbook.for_turn(conversation.id, conversation.metadata, [i.message for i in history])
    for note in await agent.prepare_sources(conversation, history, query, running=False):
        eprint(warning_line(note))
    if agent.memory is None:
        return "", 0
    return agent.memory.embedder_label(), await agent.memory.backlog()


async def _context(loaded: "LoadedConfig", session_id: Optional[int], json_output: bool, text: bool = False) -> None:
    from ...context.sent_text import sent_sections
    from ..render import (
        context_head_lines,
        context_rows,
        sent_text_lines,
    )
    from ...store import CompactionStore

    async with session_agent(loaded, session_id) as (agent, conversation):
        embedder, backlog = await preview_memory(agent, conversation)
        tools = agent.offered_tools()
        messages, report, _ = agent.context_for(conversation, None, tools)
        sections = sent_sections(messages, report, tools.specs()) if text else []
        metrics = CompactionStore(agent.store.db).metrics(conversation.id)
        provider = agent.provider
        sandbox = agent.sandbox.state().line()
        extras = agent.source_lines(report)  # while the MCP servers still run
        echoes = memory_feature.echoing_replies(agent.store, conversation.id)
        generated = agent.session_memory.status_lines()
    memory = memory_feature.memory_lines(agent.turn_memory, report, embedder, backlog, echoes) + generated
    if agent.turn_worldbook.isolated:  # none of them is sent: the report's `worldbook isolation` block says so
        memory, extras = [], [f"worldbook isolation: not sent: {', '.join(agent.source_policy.says)}"]
    if json_output:
        shown = {"session": conversation.id, "provider": provider.name, "model": agent.model_label,
                 "context": report.to_dict(), "compaction": metrics.__dict__, "sandbox": sandbox,
                 "tools_unavailable": agent.tools_unavailable, "memory": memory, "extras": extras}
        if text:
            shown["text"] = [section.to_dict() for section in sections]
        print(json.dumps(shown, indent=2))
        return
    if text:  # the blocks as sent, nothing around them but the head lines
        for line in context_head_lines(report, conversation.id, provider.name, agent.model_label,
                                       agent.config.memory.compression.strategy):
            print(line)
        print()
        for line in sent_text_lines(sections):
            print(line)
        return
    from rich.console import Console
    from rich.table import Table

    for line in context_head_lines(report, conversation.id, provider.name, agent.model_label,
                                   agent.config.memory.compression.strategy):
        print(line)
    print(sandbox)
    if agent.tools_unavailable:  # said on the first `zeph ask` only; here always
        print(f"running without tools: {agent.tools_unavailable}")
    for line in memory + extras:
        print(line)
    table = Table(box=None, pad_edge=False)
    for column, justify in (("block", "left"), ("tokens", "right"), ("of prompt budget", "right"), ("", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for name, tokens, share, detail in context_rows(report):
        table.add_row(name, f"{tokens:,}", share, detail)
    Console().print(table)
    for note in report.notes:
        print(f"note: {note}")
    for line in metrics.lines():
        print(line)


@app.command()
def recall(
    query: Optional[str] = typer.Argument(None, metavar="QUERY", help="What a new turn would ask; without it, one query per line of standard input."),
    json_output: bool = typer.Option(False, "--json", help="Print JSON: one object per recalled message."),
    k: Optional[int] = typer.Option(None, "-k", metavar="N", help="Recall at most N messages (default: memory.semantic.recall_limit)."),
    session: Optional[int] = typer.Option(None, "--session", metavar="ID", help="As the next turn of session ID (its own messages excluded), not a new session's first."),
) -> None:
    """Show what recall would add to a new turn for QUERY.

    The past messages it would add, best first, with their scores.

    Without QUERY, reads one query per line from standard input and prints one JSON line per query
    ({"query", "route", "hits"}), so a whole set runs in one process.
    """
    from ...features.memory.recall_command import run_recall  # builds an agent: its module imports the factory

    raise typer.Exit(run_recall(query, json_output=json_output, k=k, session_id=session))


@app.command()
def audit(
    session: Optional[int] = typer.Option(None, "--session", metavar="ID", help="Only this session's tool calls."),
    limit: int = typer.Option(50, "--limit", "-n", min=1, metavar="N", help="How many of the most recent calls to show."),
    json_output: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show the audit trail of tool calls.

    Each call's tool, arguments, decision, exit code and duration.
    """
    from ..render import short_time
    from ...store import ToolLog

    store = open_store()
    if session is not None:
        store.get_conversation(session)
    runs = ToolLog(store.db).runs(session, limit)
    if json_output:
        print(json.dumps([r.__dict__ for r in runs], indent=2, ensure_ascii=False))
        return
    if not runs:
        eprint("no tool calls recorded" + (f" in session {session}" if session is not None else ""))
        return
    for run in runs:
        subject = run.arguments.get("command") or run.arguments.get("path") or run.arguments.get("pattern") or ""
        subject = " ".join(str(subject).split())[:80]
        code = "" if run.exit_code is None else f" exit={run.exit_code}"
        took = "" if run.duration_ms is None else f" {run.duration_ms}ms"
        print(f"{short_time(run.created_at)}  s{run.conversation_id}  {run.decision:<11} {run.tool:<14} {subject}{code}{took}")


# ---- init / config -------------------------------------------------------------------


@app.command()
def init(force: bool = typer.Option(False, "--force", help="Overwrite an existing config file.")) -> None:
    """Write a starter config file."""
    import tomli_w

    from ...config import resolve_config_path
    from ...providers import auto_provider

    path, _ = resolve_config_path(state.config_path, os.environ)
    if path.exists() and not force:
        raise ZephError(f"{path} already exists (use --force to overwrite it)")
    detected = auto_provider(os.environ)
    starter = {
        "llm": {"provider": detected, "model": ""},
        "memory": {
            "context_budget_tokens": 0,
            "soft_compaction_threshold": 0.6,
            "hard_compaction_threshold": 0.9,
            "compaction_preserve_tail": 4,
        },
    }
    header = (
        "# zeph configuration. Every key, with its default, is documented in config.example.toml;\n"
        "# `zeph config show` prints the effective values and where each one comes from.\n"
        "# provider: anthropic | openai | compatible | ollama | local (empty = auto). model: empty = the provider's default.\n\n"
    )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(header + tomli_w.dumps(starter), encoding="utf-8")
    except OSError as exc:
        raise ZephError(f"cannot write {path}: {exc.strerror or exc}") from None
    print(f"wrote {path}")


@config_app.command("show")
def config_show(json_output: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Print every effective setting and where it came from.

    The source of each: a flag, the environment, the config file or the default.
    """
    from ...config import KEYS
    from ...paths import database_path

    loaded = load()
    rows = [(k, loaded.config.get(k), loaded.source(k)) for k in KEYS]
    entries: list[tuple[str, Any, str]] = [(f"llm.providers[{i}]", p.__dict__, "file") for i, p in enumerate(loaded.config.llm.providers)]
    if loaded.config.llm.summary_provider:
        entries.append(("llm.summary_provider", loaded.config.llm.summary_provider.__dict__, "file"))
    entries += [(f"mcp.servers[{i}]", _shown_server(e), "file") for i, e in enumerate(loaded.config.mcp.servers)]
    profiles = loaded.config.prompt.profiles
    entries += [(f"prompt.profiles.{name}", text if json_output else _first_line(text), "file") for name, text in profiles.items()]
    if json_output:
        print(json.dumps({
            "config_file": str(loaded.path) if loaded.path else None,
            "database": str(database_path()),
            "settings": {k: {"value": v, "source": s} for k, v, s in rows + entries},
        }, indent=2))
        return
    print(f"# config file: {loaded.path or '(none: defaults)'}")
    print(f"# database:    {database_path()}")
    width = max(len(k) for k, _, _ in rows)
    for key, value, source in rows + entries:
        shown = "(unset)" if value is None else json.dumps(value) if not isinstance(value, bool) else str(value).lower()
        print(f"{key.ljust(width)} = {shown}  # {source}")


def _first_line(text: str) -> str:
    """A long value shortened for `zeph config show`: its first line and its length."""
    first = text.splitlines()[0] if text else ""
    return text if first == text and len(text) <= 60 else f"{first[:60]}… ({len(text):,} characters)"


def _shown_server(entry) -> dict:
    """An `[[mcp.servers]]` entry to print: env and header values written as `${VAR}` references are shown,
    literal ones (perhaps a token) are not."""
    def masked(table: dict[str, str]) -> dict[str, str]:
        return {k: v if "${" in v else "(set)" for k, v in table.items()}

    return {**entry.__dict__, "env": masked(entry.env), "headers": masked(entry.headers)}


# ---- entry point ------------------------------------------------------------------------


def _click_exceptions():
    """Typer may vendor its own copy of click: use the exception classes it raises."""
    try:
        return importlib.import_module("typer._click.exceptions")
    except ImportError:  # typer releases that use click itself
        return importlib.import_module("click.exceptions")


def _log_internal_error(exc: Exception) -> str:
    """Write the traceback to the log file; say where it is (or how to see it otherwise)."""
    try:
        from ...log import get_logger, log_to
        from ...paths import data_dir

        path = log_to(data_dir())
        get_logger("cli").error("internal error", exc_info=exc)
    except Exception:  # noqa: BLE001 — the log is a courtesy: never a second error
        return "set ZEPH_DEBUG=1 for the traceback"
    return f"traceback in {path}" if path.exists() else "set ZEPH_DEBUG=1 for the traceback"


def main(argv: list[str] | None = None) -> int:
    """Run the command line `argv` and return its exit code; without `argv` (the `zeph` program), run
    `sys.argv` and end the process."""
    if argv is None:
        freeze_after_start_up()
    click_exceptions = _click_exceptions()
    command = typer.main.get_command(app)
    try:
        code = command.main(args=argv, prog_name="zeph", standalone_mode=False)
    except ZephError as exc:
        eprint(f"zeph: error: {exc}")
        code = exc.exit_code
    except typer.Abort:
        eprint("zeph: aborted")
        code = 130
    except KeyboardInterrupt:
        eprint("zeph: interrupted")
        code = 130
    except click_exceptions.ClickException as exc:
        exc.show()
        code = exc.exit_code
    except typer.Exit as exc:
        code = exc.exit_code
    except BrokenPipeError:
        code = 0
    except Exception as exc:  # a bug: still one line, with a way to see more
        if os.environ.get("ZEPH_DEBUG"):
            raise
        eprint(f"zeph: internal error: {type(exc).__name__}: {exc} ({_log_internal_error(exc)})")
        code = 1
    code = code if isinstance(code, int) else 0
    if argv is None:
        leave(code)
    return code
