"""Tests' way to assemble a request from plain prompt layers: each kind of layer becomes the block
the agent's sources give it (placement, order, share or slot), then the one `assemble` runs."""

from __future__ import annotations

from datetime import tzinfo

from zeph_cli.context.assembler import History, HistoryItem, PromptLayer
from zeph_cli.context.assembler import assemble as assemble_blocks
from zeph_cli.context.blocks import Block, Placement
from zeph_cli.context.budget import Budget, RequestBudget
from zeph_cli.context.recall_block import RecallEntry, recall_block
from zeph_cli.context.skills_block import SkillsInput, skills_block
from zeph_cli.tokens import Calibration, TokenCounter

LOADER = "load_skill"


def assemble(
    layers: list[PromptLayer],
    history: list[HistoryItem],
    budget: Budget,
    counter: TokenCounter,
    *,
    window: int,
    tools_tokens: int = 0,
    calibration: Calibration | None = None,
    pinned_id: int | None = None,
    context_layers: list[PromptLayer] | None = None,
    recall: tuple[RecallEntry, ...] | list[RecallEntry] = (),
    skills: SkillsInput | None = None,
    closing_layers: list[PromptLayer] | None = None,
    max_chat_history: int = 0,
    landmark_gap_minutes: int = 0,
    zone: tzinfo | None = None,
    late_context_layers: list[PromptLayer] | None = None,
    depth_layers: list[tuple[int, PromptLayer]] | None = None,
):
    """System `layers` in order, then skills last; `context_layers`, recall and `late_context_layers`
    just before the running turn, in that order; `depth_layers` at their depth; `closing_layers` last."""
    blocks = [Block(x.name, x.text, Placement.SYSTEM, n, detail=x.detail) for n, x in enumerate(layers)]
    early = list(context_layers or [])
    blocks += [Block(x.name, x.text, Placement.BEFORE_TURN, n, detail=x.detail) for n, x in enumerate(early)]
    if recall:
        blocks.append(recall_block(recall, len(early)))
    blocks += [Block(x.name, x.text, Placement.BEFORE_TURN, len(early) + 1 + n, detail=x.detail)
               for n, x in enumerate(late_context_layers or [])]
    blocks += [Block(x.name, x.text, Placement.DEPTH, depth=d, detail=x.detail) for d, x in depth_layers or []]
    blocks += [Block(x.name, x.text, Placement.CLOSING, n, detail=x.detail) for n, x in enumerate(closing_layers or [])]
    tools = frozenset()
    if skills is not None:
        blocks.append(skills_block(skills, LOADER, len(layers)))
        tools = frozenset({LOADER}) if skills.loadable else frozenset()
    request = RequestBudget(budget, counter, calibration or Calibration(), window, tools_tokens, tools)
    return assemble_blocks(blocks, History(history, pinned_id, max_chat_history, landmark_gap_minutes, zone), request)
