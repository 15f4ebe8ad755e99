"""`build_agent()`: the one place a started agent is assembled, for `zeph ask`, the chat app and sessions.

Invariant: the caller gets a started agent (provider resolved from the config,
side-job providers from theirs, the mode set) together with its start-up
warnings, or an exception and nothing left open: whatever was built before the
failure is closed again. The store stays the caller's; `close_agent()` closes
what `build_agent()` opened.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .agent import Agent
from .config import LoadedConfig
from .errors import UsageError
from .providers import create_provider, resolve_settings
from .providers.summary import side_job_settings
from .store import ConversationStore
from .tools.permissions import Approver


async def build_agent(
    loaded: LoadedConfig,
    *,
    store: ConversationStore,
    env: Mapping[str, str],
    cwd: Path,
    approver: Approver | None = None,
    mode: str | None = None,
) -> tuple[Agent, list[str]]:
    """A started agent on the provider `loaded` selects, and the warnings its start-up produced."""
    settings = resolve_settings(loaded.config, env, loaded.sources)
    helpers = side_job_settings(loaded.config, env, settings)
    provider = create_provider(settings)
    agent: Agent | None = None
    try:
        agent = Agent(config=loaded.config, store=store, provider=provider, cwd=cwd, approver=approver,
                      helper_settings=helpers)
        if mode is not None:
            set_mode(agent, mode)
        return agent, await agent.start()
    except BaseException:
        if agent is not None:
            await agent.aclose()
        await provider.aclose()
        raise


async def close_agent(agent: Agent) -> None:
    """Close the agent's side-job providers and its main provider (the store is the caller's)."""
    try:
        await agent.aclose()
    finally:
        await agent.provider.aclose()


def set_mode(agent: Agent, mode: str) -> None:
    """Switch the agent's mode; an unknown mode is a usage error naming the choices."""
    try:
        agent.set_mode(mode.strip())
    except ValueError as exc:
        raise UsageError(str(exc)) from None
