"""`/mcp` in the chat app: the running servers' prompts, one prompt put into the input box to edit, or a
server restarted (`/mcp restart ID`).

Invariant: runs beside a turn (starting servers may take their timeout); a bad argument raises
`UsageError` with one line, and the app gives the typed text back. A prompt's messages keep their roles:
the ones before its last user message go into the session (never while a turn runs), that message goes
into the input box.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import UsageError

if TYPE_CHECKING:
    from .. import ChatHost


async def mcp_command(host: ChatHost, argument: str) -> None:
    """/mcp lists the prompts; /mcp SERVER PROMPT NAME=value … puts one into the input box (its earlier
    messages into the session); /mcp restart ID restarts a server now."""
    from .commands import parse_arguments

    if not argument.strip():
        prompts, notes = await host.session.mcp_prompts()
        for note in notes:
            await host.notice(note, "warning")
        await host.show(mcp_prompts_markdown(prompts))
        return
    try:
        words = shlex.split(argument)
    except ValueError as exc:
        raise UsageError(f"/mcp: {exc}") from None
    mcp = host.session.agent.mcp
    if words[0] == "restart" and (mcp is None or "restart" not in mcp.connections):
        await restart_command(host, words[1:])
        return
    if len(words) < 2:
        raise UsageError("/mcp needs a server and a prompt: /mcp SERVER PROMPT NAME=value … (/mcp lists them)")
    messages = await host.session.mcp_prompt(words[0], words[1], parse_arguments(words[2:]))
    earlier, typed, after = split_prompt(messages)
    if earlier:
        if host.busy:
            raise UsageError(f"/mcp: prompt {words[1]} begins with {len(earlier)} earlier message(s), which go into "
                             "the session: run it after the running turn ends (esc cancels it)")
        host.session.add_messages(earlier, f"{words[0]} {words[1]}")
        await host.load_transcript()
        await host.notice(f"prompt {words[0]} {words[1]}: {roles_line(earlier)} added to the session; "
                          "its last user message is in the input box to edit and send")
    if after:
        await host.notice(f"prompt {words[0]} {words[1]}: {roles_line(after)} after its last user message left "
                          "out (a reply cannot come before the message it answers is sent)", "warning")
    host.put_input(typed)


def split_prompt(messages: Sequence[tuple[str, str]]) -> tuple[list[tuple[str, str]], str, list[tuple[str, str]]]:
    """A prompt's messages as (the ones before its last user message, that message's text, the ones after)."""
    last = max((i for i, (role, _) in enumerate(messages) if role == "user"), default=None)
    if last is None:  # no user message at all: the messages go before an empty input box
        return list(messages), "", []
    return list(messages[:last]), messages[last][1], list(messages[last + 1:])


def roles_line(messages: Sequence[tuple[str, str]]) -> str:
    """`2 messages (user, assistant)`."""
    n = len(messages)
    return f"{n} message{'' if n == 1 else 's'} ({', '.join(role for role, _ in messages)})"


async def restart_command(host: ChatHost, words: Sequence[str]) -> None:
    """/mcp restart ID: the server stopped and started again now, its restart count reset."""
    if len(words) != 1:
        raise UsageError("/mcp restart needs one server id: /mcp restart ID (`zeph mcp list` shows them)")
    mcp = host.session.agent.mcp
    if mcp is None:
        raise UsageError("no MCP servers are configured ([[mcp.servers]] in the config)")
    from .connection import ServerError

    server_id = words[0]
    try:
        notes = await mcp.restart(server_id)
    except ServerError as exc:
        raise UsageError(f"/mcp restart: {exc}") from None
    restarted = f"MCP server {server_id} restarted"
    for note in notes or [f"{restarted}"]:
        await host.notice(note, "info" if note.startswith(restarted) else "warning")
    host.refresh_gauge()  # its tools may have changed


def mcp_prompts_markdown(prompts: Sequence[tuple[str, Any]]) -> str:
    """Markdown for /mcp: each running server's prompts with their arguments (* = required)."""
    if not prompts:
        return "No MCP prompts: no running server offers one (`zeph mcp list` shows the servers)."
    lines = ["| Server | Prompt | Arguments | Description |", "|---|---|---|---|"]
    for server, prompt in prompts:
        arguments = " ".join(f"{name}{'*' if required else ''}" for name, required, _ in prompt.arguments)
        description = " ".join(prompt.description.split()).replace("|", "\\|")
        lines.append(f"| {server} | {prompt.name} | {arguments} | {description} |")
    lines += ["", "`/mcp SERVER PROMPT NAME=value …` puts the prompt into the input box to edit and send."]
    return "\n".join(lines)
