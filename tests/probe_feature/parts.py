"""The probe feature's parts: a context source, a tool, a command group and a chat-app command."""

from __future__ import annotations

from typing import Any

import typer

from zeph_cli.context.blocks import Block, Placement, Source, TurnInput
from zeph_cli.tools.base import Tool, ToolContext, ToolResult

from . import PROBE_LOOKUP

PROBE_BLOCK = "<probe>the probe's own block</probe>"


class ProbeSource(Source):
    name = "probe"

    def __init__(self, host: Any) -> None:
        self.host = host

    def blocks(self, turn: TurnInput) -> list[Block]:
        return [Block("probe", PROBE_BLOCK, Placement.BEFORE_TURN, 95, stable=False)]


class ProbeLookupTool(Tool, declared=PROBE_LOOKUP):
    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult(f"probe value of {arguments['key']}: 42", summary="found")


probe_app = typer.Typer(help="The probe feature's commands.")


@probe_app.command("show")
def show() -> None:
    """Print the probe's value."""
    print("probe value: 42")


def probe_problem(argument: str) -> str | None:
    return "/probe takes a key, not 'bad'" if argument == "bad" else None


async def probe_command(host: Any, argument: str) -> None:
    await host.show(f"probe value of {argument}: 42")
