"""The modes a session can be in, as data: which tools each offers and which prompt modules it sends.

Invariant: a mode is one row of `MODES`; help texts say what modes offer through `modes_help()`. A read-only mode offers only tools
that change nothing (a built-in tool of kind "read", an MCP tool its server marks read-only), so the
others are not even described to the model there.
"""

from __future__ import annotations

from typing import NamedTuple


class Mode(NamedTuple):
    name: str
    read_only: bool  # offers only the tools that change nothing
    prompt_modules: tuple[str, ...]  # the mode prompt's modules, in order (`context/prompt_modules.py`)
    summary: str  # what the mode offers, as help texts say it


MODES: dict[str, Mode] = {
    mode.name: mode
    for mode in (
        Mode("agent", False, ("mode-agent", "tools", "workflow"), "every tool"),
        Mode("ask", True, ("mode-ask", "workflow-ask"), "read-only tools"),
        Mode("plan", True, ("mode-plan", "workflow-plan"), "read-only tools"),
    )
}
AGENT_MODES = tuple(MODES)


def modes_help() -> str:
    """"agent: every tool; ask, plan: read-only tools": each distinct offer with the modes that make it."""
    by_offer: dict[str, list[str]] = {}
    for mode in MODES.values():
        by_offer.setdefault(mode.summary, []).append(mode.name)
    return "; ".join(f"{', '.join(names)}: {summary}" for summary, names in by_offer.items())
