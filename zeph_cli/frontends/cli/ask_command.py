"""One `zeph ask` turn: resolve the session, build the agent, run the turn through `AskOutput`.

Invariant: whatever happens — a bad session, a provider that cannot start, a
failed turn, Ctrl+C — the terminal approver, the agent's providers and the
store are closed before this returns, and the exit status says how the turn
ended (0 reply printed, the error's own code, 130 interrupted). A reader of
standard output that goes away (`zeph ask … | head`) stops the turn quietly
with exit status 0; the text that arrived is stored, marked partial. A prompt
that never reached a turn (a config error, a deleted working directory, a
locked database) is kept and the user told where. An MCP server's form is asked
on the terminal when standard input and standard error are terminals, and
declined otherwise.
"""

from __future__ import annotations

import os
import sys
from asyncio import CancelledError
from contextlib import aclosing
from dataclasses import dataclass

from ...agent.agent import Agent
from ...agent.factory import build_agent, close_agent
from .approval_prompt import TerminalApprover
from .elicit_prompt import TerminalElicitor
from .ask_output import AskOutput
from .closed_output import drop_further_output
from ...config import LoadedConfig
from ...context.attachments import with_attachments
from ...errors import NotFound, ReplyNotStored, ZephError
from ..event_handler import dispatch
from ...agent.events import TurnFailed, TurnStarted
from ...models import reply_token_cap
from ...paths import data_dir
from ..prompt_keeper import keep_prompt, rescue_prompt, rescue_reply, unsent_in_session
from .stderr import eprint, warning_line
from ...store import Conversation, ConversationStore
from ...tools.approval import Approver, approve_all, deny_all
from ...agent.workspace import current_directory

NOT_A_TERMINAL = "zeph ask is not running on a terminal, so no one could approve it; the user can rerun with -y/--yes"


@dataclass(frozen=True)
class AskOptions:
    """The options of one `zeph ask`."""
    system: str | None
    continue_last: bool
    session_id: int | None
    stream: bool
    show_usage: bool
    json_output: bool
    approve_all: bool
    markdown: bool  # standard output is a terminal: render the reply as Markdown
    enhance: str | None = None  # the session's enhancement prompt (--enhance; "" clears it)
    profile: str | None = None  # the session's global prompt profile (--profile; "" = none), checked by the config
    attachments: tuple[str, ...] = ()  # files to attach to the prompt (-a/--attach)


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
    conversation: Conversation | None = None
    try:
        conversation = _conversation(store, options)
        # The terminal approvals are asked on (/dev/tty when standard input is a pipe) also takes a server's
        # forms; without one, forms are declined. -y approves tool calls; it does not answer forms.
        terminal = TerminalApprover.open()
        approver: Approver = approve_all if options.approve_all else (terminal or deny_all(NOT_A_TERMINAL))
        elicitor = TerminalElicitor(terminal) if terminal is not None else None  # else declined
        cwd = current_directory()
        agent, warnings = await build_agent(loaded, store=store, env=os.environ, cwd=cwd, approver=approver,
                                        one_shot=text, elicitor=elicitor)
        if options.json_output:  # its `context` reports every block's tokens: exact counts, not bounds
            agent.exact_counter()
        agent.session_memory.detached = True  # summaries after this reply are left to a worker process
    except ZephError as exc:
        if terminal is not None:
            terminal.close()
        if isinstance(exc, NotFound):  # no such session: nothing was started, the command line is to blame
            store.close()
            raise
        try:
            return _not_started(exc, store, conversation, text)
        finally:
            store.close()
    except (KeyboardInterrupt, CancelledError):  # Ctrl+C while the model loads: the prompt is kept all the same
        if terminal is not None:
            terminal.close()
        try:
            eprint(f"zeph: interrupted; {_keep_unsent(store, conversation, text, 'interrupted before it was sent')}")
        finally:
            store.close()
        return 130
    except BaseException:
        if terminal is not None:
            terminal.close()
        store.close()
        raise
    try:  # an attachment that cannot be: nothing is sent, and the prompt is kept
        attached = agent.attachments(options.attachments)
        prompt, images = with_attachments(attached, text), tuple(a.image for a in attached if a.image is not None)
    except ZephError as exc:
        if terminal is not None:
            terminal.close()
        try:
            await close_agent(agent)
            return _not_started(exc, store, conversation, text)
        finally:
            store.close()
    output: AskOutput | None = None
    prompt_stored = False
    created = conversation is None
    try:
        for warning in warnings:
            eprint(warning_line(warning))
        if conversation is None:
            conversation = agent.new_conversation(text, options.system)
        if options.enhance is not None:
            conversation = agent.set_enhancement(conversation, options.enhance)
        if options.profile is not None:
            conversation = agent.set_prompt_profile(conversation, options.profile)
        assert agent.profile is not None, "build_agent starts the agent"
        output = AskOutput(
            session_id=conversation.id, provider=agent.provider.name, model=agent.model_label,
            reply_limit=reply_token_cap(agent.config.llm.max_tokens, agent.profile),
            stream=options.stream, markdown=options.markdown, show_usage=options.show_usage,
            json_output=options.json_output, terminal=sys.stderr is not None and sys.stderr.isatty(),
        )
        turn = agent.run_turn(conversation, prompt, system=options.system, stream=options.stream, images=images)
        async with aclosing(turn) as events:
            async for event in events:
                prompt_stored = prompt_stored or isinstance(event, TurnStarted)
                try:
                    await dispatch(event, output)
                except BrokenPipeError:  # the reader has gone (`| head`): the turn stops, what came is kept
                    drop_further_output()
                    return 0
        if options.show_usage:
            from ...features.tasks.registry import task_items
            from ...features.tasks.items import summary_lines

            for line in summary_lines(task_items(store.db, conversation.id)):  # after the usage: the list as left
                eprint(line)
        if output.failure is not None:
            eprint(f"zeph: {_failed_prompt(store, conversation, created, output.failure, agent, text)}")
        if output.exit_code == 0:
            if agent.learns_guidelines:
                await agent.guidelines.maybe_update()  # after the reply: learning never delays it
            if agent.session_memory.pending is not None:  # a worker makes it: the command exits now
                from ...features.session_memory.worker import spawn  # the worker's module builds agents
                from .command_context import state

                spawn(agent.session_memory.pending, loaded, state.config_path, agent.cwd)
        return output.exit_code
    except ZephError as exc:  # the store failed, or the session went (deleted while this waited for it)
        if output is not None:
            output.close()  # the reply so far first, then what became of it
        eprint(f"zeph: error: {exc}")
        if isinstance(exc, ReplyNotStored) and exc.text:
            eprint(f"zeph: {rescue_reply(exc.text, data_dir(os.environ))}")
        if not prompt_stored:
            eprint(f"zeph: {rescue_prompt(text, data_dir(os.environ))}")
        elif agent.unanswered_prompt is not None and conversation is not None:
            eprint(f"zeph: {_unanswered(store, conversation, created, text)}")
        return exc.exit_code
    except (KeyboardInterrupt, CancelledError):
        if output is not None:
            output.close()
        if sys.stderr.isatty():
            eprint("")  # off the line of a pending question or a partial reply
        if not prompt_stored:  # still waiting for another turn on the session: the prompt is not in it
            eprint(f"zeph: interrupted; {rescue_prompt(text, data_dir(os.environ))}")
        elif agent.unanswered_prompt is not None and conversation is not None:
            eprint(f"zeph: interrupted before any reply; {_unanswered(store, conversation, created, text)}")
        else:
            saved = f" in session {conversation.id}" if conversation is not None else ""
            eprint(f"zeph: interrupted; what was received is saved{saved}")
        return 130
    finally:
        if output is not None:
            try:
                output.close()
            except BrokenPipeError:  # the reader went as the reply ended
                drop_further_output()
        if terminal is not None:
            terminal.close()
        await close_agent(agent)
        store.close()


def _not_started(error: ZephError, store: ConversationStore, conversation: Conversation | None, text: str) -> int:
    """Report why the turn could not start (config, provider, working directory) with the prompt kept."""
    eprint(f"zeph: error: {error}")
    eprint(f"zeph: {_keep_unsent(store, conversation, text, str(error))}")
    return error.exit_code


def _failed_prompt(store: ConversationStore, conversation: Conversation, created: bool, failure: TurnFailed,
                   agent: Agent, text: str) -> str:
    """Where the prompt of a failed turn is: with what arrived of the reply, or, when nothing did, as
    `_unanswered` says."""
    if agent.unanswered_prompt is not None:
        return _unanswered(store, conversation, created, text)
    session = conversation.id
    saved = " (the partial reply is saved too)" if failure.partial_message_id else ""
    return f"your prompt is saved in session {session}{saved}: zeph sessions show {session}"


def _unanswered(store: ConversationStore, conversation: Conversation, created: bool, text: str) -> str:
    """A prompt no reply answered (the agent withdrew it): from a session this command started, in a file, the
    session removed (nothing of it is left for `-c` to continue); else in the session's scroll-back."""
    if not created:
        return unsent_in_session(conversation.id)
    kept = rescue_prompt(text, data_dir(os.environ))
    try:
        store.delete_conversation(conversation.id)
    except ZephError:  # another zeph took it up meanwhile (`-c`), or the disk refused
        return f"{kept}; session {conversation.id}, which it started, stays"
    return kept


def _keep_unsent(store: ConversationStore, conversation: Conversation | None, text: str, reason: str) -> str:
    """Keep the prompt of a turn that never started and say where it is (`prompt_keeper.keep_prompt`)."""
    return keep_prompt(store, conversation, text, reason=reason, data_dir=data_dir(os.environ))
