"""`/mcp` in the chat app: the running servers' prompts, or one prompt put into the input box to edit.

Invariant: runs beside a turn (starting servers may take their timeout); a bad argument raises
`UsageError` with one line, and the app gives the typed text back.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import UsageError

if TYPE_CHECKING:
    from .. import ChatHost


async def mcp_command(host: ChatHost, argument: str) -> None:
    """/mcp lists the prompts; /mcp SERVER PROMPT NAME=value … puts one into the input box."""
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
    if len(words) < 2:
        raise UsageError("/mcp needs a server and a prompt: /mcp SERVER PROMPT NAME=value … (/mcp lists them)")
    host.put_input(await host.session.mcp_prompt(words[0], words[1], parse_arguments(words[2:])))


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
