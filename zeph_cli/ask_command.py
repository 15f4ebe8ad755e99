"""One `zeph ask` turn: resolve the session, build the agent, run the turn through `AskOutput`.

Invariant: whatever happens — a bad session, a provider that cannot start, a
failed turn, Ctrl+C — the terminal approver, the agent's providers and the
store are closed before this returns, and the exit status says how the turn
ended (0 reply printed, the error's own code, 130 interrupted).
"""

from __future__ import annotations

import os
import sys
from asyncio import CancelledError
from dataclasses import dataclass
from pathlib import Path

from .agent_factory import build_agent, close_agent
from .approval_prompt import TerminalApprover
from .ask_output import AskOutput
from .config import LoadedConfig
from .errors import NotFound
from .event_handler import dispatch
from .models import reply_token_cap
from .stderr import eprint, warning_line
from .store import Conversation, ConversationStore
from .tools.permissions import approve_all, deny_all

NOT_A_TERMINAL = "zeph ask is not running on a terminal, so no one could approve it; the user can rerun with -y/--yes"


@dataclass(frozen=True)
class AskOptions:
    system: str | None
    continue_last: bool
    session_id: int | None
    stream: bool
    show_usage: bool
    json_output: bool
    approve_all: bool
    markdown: bool  # standard output is a terminal: render the reply as Markdown


def _conversation(store: ConversationStore, options: AskOptions) -> Conversation | None:
    """The session to continue (None: a new one)."""
    if options.continue_last:
        conversation = store.latest_conversation()
        if conversation is None:
            raise NotFound("no previous session to continue (start one without -c)")
        return conversation
    if options.session_id is not None:
        return store.get_conversation(options.session_id)
    return None


async def run_ask(loaded: LoadedConfig, text: str, options: AskOptions, store: ConversationStore) -> int:
    """Ask `text`; the store is closed when this returns."""
    terminal = None
    try:
        conversation = _conversation(store, options)
        if options.approve_all:
            approver = approve_all
        else:
            terminal = TerminalApprover.open()
            approver = terminal or deny_all(NOT_A_TERMINAL)
        agent, warnings = await build_agent(loaded, store=store, env=os.environ, cwd=Path.cwd(), approver=approver)
    except BaseException:
        if terminal is not None:
            terminal.close()
        store.close()
        raise
    output: AskOutput | None = None
    try:
        for warning in warnings:
            eprint(warning_line(warning))
        if conversation is None:
            conversation = agent.new_conversation(text, options.system)
        assert agent.profile is not None, "build_agent starts the agent"
        output = AskOutput(
            session_id=conversation.id, provider=agent.provider.name, model=agent.model_label,
            reply_limit=reply_token_cap(agent.config.llm.max_tokens, agent.profile),
            stream=options.stream, markdown=options.markdown, show_usage=options.show_usage,
            json_output=options.json_output,
        )
        async for event in agent.run_turn(conversation, text, system=options.system, stream=options.stream):
            await dispatch(event, output)
        if output.exit_code == 0:
            await agent.guidelines.maybe_update()  # after the reply: learning never delays it
        return output.exit_code
    except (KeyboardInterrupt, CancelledError):
        if output is not None:
            output.close()
        if sys.stderr.isatty():
            eprint("")  # off the line of a pending question or a partial reply
        saved = f" in session {conversation.id}" if conversation is not None else ""
        eprint(f"zeph: interrupted; what was received is saved{saved}")
        return 130
    finally:
        if output is not None:
            output.close()
        if terminal is not None:
            terminal.close()
        await close_agent(agent)
        store.close()
