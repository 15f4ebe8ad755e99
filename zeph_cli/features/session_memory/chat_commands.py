"""`/profile` in the chat app: the global prompt profiles and the user profile; `NAME` (or `none`) switches
this session's global prompt; `edit TEXT` and `clear` change the user profile.

Invariant: the user profile changes only through the session memory service; a bad profile name is a
warning notice, nothing changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .. import ChatHost


async def profile_command(host: ChatHost, argument: str) -> None:
    session = host.session
    memory = session.agent.session_memory
    word, _, rest = argument.partition(" ")
    word = word.lower()
    if word in ("show", "list"):
        word, argument = "", ""
    if word == "edit":
        if not rest.strip():
            await host.notice("usage: /profile edit TEXT (the whole user profile; zeph profile edit opens an editor)", "warning")
            return
        memory.set_profile(rest)
        host.refresh_gauge()
        await host.notice("user profile saved")
    elif word == "clear":
        await host.notice("user profile cleared" if memory.clear_profile() else "the user profile is already empty")
        host.refresh_gauge()
    elif word:
        try:
            session.set_prompt_profile(argument)
        except ValueError as exc:
            await host.notice(str(exc), "warning")
            return
        host.refresh_gauge()
        await host.notice(f"global prompt: profile {session.prompt_profile()}" if session.prompt_profile() else "global prompt: none")
    else:
        from ...context.global_prompt import profile_lines
        from ...context.session_memory_blocks import user_profile_lines

        lines = profile_lines(session.prompt_profile(), session.agent.config.prompt.profiles)
        profile = memory.profile()
        shown = user_profile_lines(profile.text, profile.source, profile.updated_at) if profile else user_profile_lines("")
        shown += memory.status_lines()  # off with the embedded summarizer, or failing the checks
        if profile is not None and profile.discarded:
            shown.append(f"the last automatic update was discarded: {profile.discarded}")
        await host.notice("\n".join([*lines, "", *shown]))
