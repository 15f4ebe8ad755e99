"""The context sources a session uses, where each is registered, and their concurrent preparation.

Invariant: every block a request carries comes from a source in `REGISTRY` (the core's) or one a
feature registers (`features.source_registrations`), in the order sources are asked (blocks are
placed by their own placement and order, not by this one). A new source is one class and one
`Registration`: neither the assembler nor the turn loop changes. A
feature's source module is imported only when the feature is on for the session. `prepare_sources`
runs the sources' `prepare` concurrently, each under its deadline; one that fails or is late is
left out of that turn (never failing it) and said in a `SourceOutcome`, which the report and the
turn's warnings carry. The session's `SourcePolicy` says which sources and tool groups it allows.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from ..context.blocks import (
    CLOSING_ORDER, SYSTEM_ORDER, TURN_ORDER, Block, ContextSource, Placement, Registration, Source, SourcePolicy,
    TurnInput,
)
from ..context.environment import render_environment
from ..context.prompt_modules import base_prompt, mode_prompt
from ..context.turn_blocks import render_enhancement, render_time
from ..features import source_registrations
from ..log import get_logger

if TYPE_CHECKING:
    from .source_host import CoreHost, SourceHost

log = get_logger("context")


# ---- core sources ---------------------------------------------------------------------------------


class TextSource(Source):
    """A source of one text block that `render(turn)` gives as (text, detail)."""

    def __init__(self, name: str, placement: Placement, order: int, render: Callable[[TurnInput], tuple[str, str]],
                 *, stable: bool = True) -> None:
        self.name, self.placement, self.order, self.render, self.stable = name, placement, order, render, stable

    def blocks(self, turn: TurnInput) -> list[Block]:
        text, detail = self.render(turn)
        return [Block(self.name, text, self.placement, self.order, stable=self.stable, detail=detail)]


def _system(name: str, render: Callable[[TurnInput], tuple[str, str]]) -> TextSource:
    return TextSource(name, Placement.SYSTEM, SYSTEM_ORDER[name], render)


def base_source(agent: CoreHost) -> ContextSource:
    def render(turn: TurnInput) -> tuple[str, str]:
        assert agent.workspace is not None, "call start() first"
        base = base_prompt(agent.workspace.prompts)
        return base.text, base.detail
    return _system("base prompt", render)


def environment_source(agent: CoreHost) -> ContextSource:
    def render(turn: TurnInput) -> tuple[str, str]:
        assert agent.workspace is not None, "call start() first"
        return render_environment(agent.workspace.environment), ""
    return _system("environment", render)


def project_source(agent: CoreHost) -> ContextSource:
    def render(turn: TurnInput) -> tuple[str, str]:
        assert agent.workspace is not None, "call start() first"
        return agent.workspace.project.text, ""
    return _system("project context", render)


def mode_source(agent: CoreHost) -> ContextSource:
    """The mode's prompt modules; with no tool offered, the no-tools module instead."""
    def render(turn: TurnInput) -> tuple[str, str]:
        assert agent.workspace is not None, "call start() first"
        mode = mode_prompt(agent.workspace.prompts, agent.mode, tools=bool(turn.tools))
        return mode.text, mode.detail
    return _system("mode prompt", render)


def global_prompt_source(agent: CoreHost) -> ContextSource:
    def render(turn: TurnInput) -> tuple[str, str]:
        chosen = agent.global_prompt(turn.conversation)
        return chosen.text, chosen.detail
    return _system("global prompt", render)


def topic_source(agent: CoreHost) -> ContextSource:
    def render(turn: TurnInput) -> tuple[str, str]:
        topic = turn.system if turn.system is not None else turn.metadata.get("system", "")
        return (f"<topic_prompt>\n{topic.strip()}\n</topic_prompt>" if topic and topic.strip() else ""), ""
    return _system("topic prompt", render)


class TimeSource(Source):
    """The <time> block: the running turn's time (rendered when it was prepared), else now."""

    name = "time"

    def __init__(self, agent: CoreHost) -> None:
        self.agent = agent
        self.turn_time = ""

    async def prepare(self, turn: TurnInput) -> list[Block]:
        self.turn_time = render_time(turn.now or self.agent.clock())
        return self.blocks(turn)

    def blocks(self, turn: TurnInput) -> list[Block]:
        if not self.agent.config.context.inject_time:
            return []
        text = self.turn_time if turn.running and self.turn_time else render_time(self.agent.clock())
        return [Block("time", text, Placement.BEFORE_TURN, TURN_ORDER["time"], stable=False)]


def enhancement_source(agent: CoreHost) -> ContextSource:
    def render(turn: TurnInput) -> tuple[str, str]:
        return render_enhancement(agent.enhancement(turn.conversation)), ""
    return TextSource("enhancement prompt", Placement.CLOSING, CLOSING_ORDER["enhancement prompt"], render, stable=False)


# ---- the registry ----------------------------------------------------------------------------------


# The core's sources, in the order they are asked; the features' follow (`features.source_registrations`).
REGISTRY: list[Registration] = [
    Registration(__name__, "base_source"),
    Registration(__name__, "environment_source"),
    Registration(__name__, "project_source"),
    Registration(__name__, "mode_source"),
    Registration(__name__, "global_prompt_source"),
    Registration(__name__, "topic_source"),
    Registration(__name__, "TimeSource"),
    Registration(__name__, "enhancement_source"),
]


def build_sources(agent: SourceHost, registry: Sequence[Registration] | None = None) -> list[ContextSource]:
    """The sources on for `agent`: the core's (`REGISTRY`), then the features', in order."""
    sources: list[ContextSource] = []
    for entry in [*REGISTRY, *source_registrations()] if registry is None else registry:
        if entry.enabled(agent):
            source = getattr(importlib.import_module(entry.module), entry.factory)(agent)
            if any(s.name == source.name for s in sources):  # outcomes, notes and left-out rows go by name
                raise ValueError(f"two context sources are named {source.name!r} ({entry.module})")
            sources.append(source)
    return sources


# ---- concurrent preparation ---------------------------------------------------------------------------


class SourceOutcome(NamedTuple):
    """How one source's preparation went: "ok", "failed" or "late" (and why), in seconds."""

    name: str
    state: str
    seconds: float
    reason: str = ""

    @property
    def left_out(self) -> bool:
        return self.state != "ok"

    @property
    def note(self) -> str:
        return f"context source {self.name!r} left out of this turn: {self.reason}"

    def report_block(self) -> Block:
        """The 0-token row the report shows for a source left out."""
        return Block(self.name, placement=Placement.REPORT, detail=f"left out this turn: {self.reason}")


class Prepared:
    """What a turn's preparation gave: each source's blocks and outcome, and the notes sources left."""

    def __init__(self) -> None:
        self.blocks: dict[str, list[Block]] = {}
        self.outcomes: list[SourceOutcome] = []
        self.notes: list[str] = []

    @property
    def left_out(self) -> set[str]:
        return {o.name for o in self.outcomes if o.left_out}


async def prepare_sources(sources: Sequence[ContextSource], turn: TurnInput, deadline: float) -> Prepared:
    """Every source's `prepare`, concurrently, each within `deadline` seconds (a source's own `deadline`
    attribute, when it has one, instead). A source that raises or is late is left out, with its outcome;
    a late one is cancelled and not waited for. Outcomes and notes come in the sources' order."""
    started = time.monotonic()
    tasks = {source.name: asyncio.ensure_future(source.prepare(turn)) for source in sources}
    finished: dict[str, float] = {}

    def timer(name: str) -> Callable[[asyncio.Future], object]:
        return lambda _: finished.setdefault(name, time.monotonic() - started)

    for name, task in tasks.items():
        task.add_done_callback(timer(name))
    limits = {source.name: getattr(source, "deadline", None) or deadline for source in sources}
    pending = set(tasks.values())
    late: set[str] = set()
    try:
        while pending:
            now = time.monotonic() - started
            due = {name: limit for name, limit in limits.items() if tasks[name] in pending}
            wait = max(min(due.values()) - now, 0)
            _, pending = await asyncio.wait(pending, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
            now = time.monotonic() - started
            for name, limit in due.items():
                task = tasks[name]
                if task in pending and now >= limit:
                    late.add(name)
                    task.cancel()
                    task.add_done_callback(_retrieve)
                    pending.discard(task)
    except BaseException:
        for task in pending:
            task.cancel()
        raise
    prepared = Prepared()
    for source in sources:
        task = tasks[source.name]
        seconds = finished.get(source.name, time.monotonic() - started)
        if source.name in late:
            prepared.outcomes.append(SourceOutcome(source.name, "late", limits[source.name],
                                                   f"not ready within {limits[source.name]:g} s"))
        elif task.cancelled():  # cancelled from within (not by the deadline): a failure of that source alone
            prepared.outcomes.append(SourceOutcome(source.name, "failed", seconds, "failed: cancelled"))
        elif task.exception() is not None:
            exc = task.exception()
            log.warning("context source %s failed: %r", source.name, exc)
            prepared.outcomes.append(SourceOutcome(source.name, "failed", seconds, f"failed: {exc}"))
        else:
            prepared.blocks[source.name] = task.result()
            prepared.outcomes.append(SourceOutcome(source.name, "ok", seconds))
        take = getattr(source, "take_notes", None)
        if take is not None:
            prepared.notes += take()
    return prepared


def request_blocks(sources: Sequence[ContextSource], turn: TurnInput, policy: SourcePolicy, prepared: Prepared) -> list[Block]:
    """One request's blocks: those of every source the policy allows and the turn's preparation did not
    leave out, and a report row for each source left out."""
    left_out = prepared.left_out
    blocks: list[Block] = []
    rows = [o.report_block() for o in prepared.outcomes if o.left_out]
    for source in sources:
        if policy.allows(source.name) and source.name not in left_out:
            try:
                blocks += source.blocks(turn)
            except Exception as exc:  # noqa: BLE001 — a source's failure leaves it out of the request, never fails the turn
                log.warning("context source %s failed: %r", source.name, exc)
                rows.append(SourceOutcome(source.name, "failed", 0.0, f"failed: {exc}").report_block())
    return blocks + rows


def _retrieve(task: asyncio.Future) -> None:
    """A late source's task, once it ends: its exception is retrieved so asyncio does not log it."""
    if not task.cancelled():
        task.exception()
