"""The next request as text: its messages grouped into the report's blocks, in the order they are sent.

Invariant: pure, and nothing is rendered again: each section holds the very `Message` values
`assemble` returned for one run of consecutive messages that `report.sent_blocks` attributes to
one block, so the text shown is the text sent; every message is in exactly one section, in
request order. The tool schemas, which travel beside the messages, are one section after the
system prompt, where the report lists them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..messages import Message, ToolSpec, part_to_dict
from .report import ContextReport

TOOLS_BLOCK = "tools"


@dataclass(frozen=True)
class SentSection:
    """One block of the request: its name, tokens and detail as the report gives them, and what it sends."""

    block: str
    tokens: int
    detail: str = ""
    messages: tuple[Message, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    continued: bool = False  # a later run of a block already shown (history after the per-turn blocks)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"block": self.block, "tokens": self.tokens, "detail": self.detail}
        if self.continued:
            data["continued"] = True
        if self.block == TOOLS_BLOCK:
            data["tools"] = [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in self.tools]
        else:
            data["messages"] = [{"role": m.role, "parts": [part_to_dict(p) for p in m.parts]} for m in self.messages]
        return data


def sent_sections(messages: Sequence[Message], report: ContextReport, tools: Sequence[ToolSpec] = ()) -> list[SentSection]:
    """`messages` (as `assemble` returned them with `report`) in sections, one per run of one block."""
    names = report.sent_blocks
    if len(names) != len(messages):
        raise ValueError(f"the report names {len(names)} blocks for {len(messages)} messages: not the same request")
    runs: list[tuple[str, list[Message]]] = []
    for name, message in zip(names, messages):
        if runs and runs[-1][0] == name:
            runs[-1][1].append(message)
        else:
            runs.append((name, [message]))
    sections: list[SentSection] = []
    shown: set[str] = set()
    for name, run in runs:
        block = report.block(name)
        sections.append(
            SentSection(
                name,
                block.tokens if block is not None and name not in shown else 0,
                block.detail if block is not None and name not in shown else "",
                tuple(run),
                continued=name in shown,
            )
        )
        shown.add(name)
    tools_block = report.block(TOOLS_BLOCK)
    if tools and tools_block is not None:
        at = next((n for n, s in enumerate(sections) if any(m.role != "system" for m in s.messages)), len(sections))
        sections.insert(at, SentSection(TOOLS_BLOCK, tools_block.tokens, tools_block.detail, tools=tuple(tools)))
    return sections
