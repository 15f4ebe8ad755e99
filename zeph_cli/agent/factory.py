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
from typing import TYPE_CHECKING

from .agent import Agent, AgentServices
from ..config import LoadedConfig
from ..features import mcp as mcp_feature
from ..features import memory as memory_feature
from ..features import skills as skills_feature
from ..errors import UsageError
from ..providers import create_provider, resolve_settings
from ..providers.summary import side_job_settings
from ..providers.base import ProviderSettings
from ..startup_gc import paused_collection
from ..store import ConversationStore
from ..tools.confinement import workspace_root
from ..tools.approval import Approver
from ..tools.elicitation import Elicitor
from ..features.turn_extras import TurnExtras

if TYPE_CHECKING:
    from ..features.code_index.service import CodeIndex
    from ..features.memory.embedders.base import Embedder
    from ..features.memory.service import MemoryService


async def build_agent(
    loaded: LoadedConfig,
    *,
    store: ConversationStore,
    env: Mapping[str, str],
    cwd: Path,
    approver: Approver | None = None,
    mode: str | None = None,
    one_shot: str | None = None,
    elicitor: Elicitor | None = None,
) -> tuple[Agent, list[str]]:
    """A started agent on the provider `loaded` selects, and the warnings its start-up produced.
    `one_shot` (`zeph ask`: this one prompt, then exit): recall loads its embedder only when the prompt is
    routed to vectors, and exact token counts are built only when bounds cannot decide. `elicitor` asks the
    user for an MCP server's form (None: every form is declined)."""
    with paused_collection(freeze=one_shot is not None):  # nearly everything made here lives as long as the agent
        agent, warnings = await _build(loaded, store=store, env=env, cwd=cwd, approver=approver, mode=mode,
                                       one_shot=one_shot)
    if elicitor is not None and agent.extras.mcp is not None:
        agent.extras.mcp.hooks.elicit = elicitor  # the hooks every server's connection shares
    return agent, warnings


async def _build(
    loaded: LoadedConfig,
    *,
    store: ConversationStore,
    env: Mapping[str, str],
    cwd: Path,
    approver: Approver | None,
    mode: str | None,
    one_shot: str | None,
) -> tuple[Agent, list[str]]:
    settings = resolve_settings(loaded.config, env, loaded.sources)
    helpers = side_job_settings(loaded.config, env, settings)
    memory = memory_service(loaded, store, settings, cwd)
    if memory is not None:
        memory.on_demand = one_shot is not None
        if one_shot is None or memory.embeds_for(one_shot):
            memory.start_warming()  # the embedder loads while the provider's SDK is imported
    provider = create_provider(settings)
    extras = turn_extras(loaded, memory, env, cwd, one_shot=one_shot is not None)
    extras.code_index = code_index(loaded, store, memory, settings, cwd, one_shot=one_shot is not None)
    agent: Agent | None = None
    try:
        agent = Agent(config=loaded.config, store=store, provider=provider, cwd=cwd, approver=approver,
                      services=AgentServices(helper_settings=helpers, memory=memory, extras=extras),
                      one_shot=one_shot is not None)
        if mode is not None:
            set_mode(agent, mode)
        return agent, await agent.start()
    except BaseException:
        if agent is not None:
            await agent.aclose()
        else:
            await extras.aclose()
        await provider.aclose()
        raise


def _skill_folder_exists(loaded: LoadedConfig, env: Mapping[str, str], cwd: Path) -> bool:
    folders = skills_feature.skill_folders(loaded.config.skills, **skills_feature.places_for(loaded, env, cwd))
    return any(folder.path.is_dir() for folder in folders)


def turn_extras(
    loaded: LoadedConfig, memory: MemoryService | None, env: Mapping[str, str], cwd: Path, *, one_shot: bool = False
) -> TurnExtras:
    """Skills (the config dir's and the project's) and MCP servers (not started yet) for this agent.
    `one_shot` (one turn, then exit): no skills service when no skill folder exists (a longer session
    keeps one, so that a skill written meanwhile is found)."""
    config = loaded.config
    embedder = memory.ready_embedder if memory is not None else None
    skills = None
    if not one_shot or _skill_folder_exists(loaded, env, cwd):
        skills = skills_feature.service_for(loaded, env, cwd, embedder=embedder)
    mcp = None
    if any(entry.enabled for entry in config.mcp.servers):
        # only with servers: the SDK stays unloaded otherwise
        mcp = mcp_feature.McpManager.from_config(config, env, workspace_root(cwd), embedder=embedder)
    return TurnExtras(skills=skills, mcp=mcp, prompt_mode=config.skills.prompt_mode)


def memory_service(
    loaded: LoadedConfig, store: ConversationStore, settings: ProviderSettings, cwd: Path
) -> MemoryService | None:
    """Recall and long-term memory for this agent (None when both are off); nothing heavy loads here."""
    config = loaded.config
    if not (config.memory.semantic.enabled or config.memory.long_term.enabled):
        return None

    def make_embedder():
        return memory_feature.embedder_for(config, settings, sources=loaded.sources)

    def make_index(db, path):
        from ..features.memory.vectors.factory import open_index  # the index's module imports the vector tables

        return open_index(config, db if db is not None else store.db, path)

    return memory_feature.MemoryService(config, store.db, project_root=workspace_root(cwd), make_embedder=make_embedder,
                         make_index=make_index)


def code_index(
    loaded: LoadedConfig, store: ConversationStore, memory: MemoryService | None, settings: ProviderSettings, cwd: Path,
    *, one_shot: bool = False,
) -> CodeIndex | None:
    """The project's code index from `cwd` (None when `[index]` leaves it off here, or, for one prompt, when
    the project was never indexed: `zeph ask` never builds, so it would have nothing to read); nothing loads
    yet. It embeds with recall's embedder when recall has one, else with the one the config names."""
    from ..features.code_index.service import CodeIndex, project_root_for
    from ..features.memory.service import database_path

    root = project_root_for(loaded.config, cwd, loaded.sources)
    path = database_path(store.db)
    if root is None or path is None:
        return None
    if one_shot and not _indexed(store, root):
        return None

    def make_embedder() -> Embedder | None:
        if memory is not None:
            return memory.embedder_in_thread()
        return memory_feature.embedder_for(loaded.config, settings, sources=loaded.sources)

    index = CodeIndex(loaded.config, store.db, path, root, make_embedder=make_embedder)
    index.warm()  # the map's graph and the embedder load while the provider starts
    return index


def _indexed(store: ConversationStore, root: Path) -> bool:
    """Whether the code index has anything of `root` (one query on the store's own connection)."""
    row = store.db.execute(
        "select 1 from code_projects p where p.root = ? and exists (select 1 from code_files f where f.project_id = p.id)",
        (str(root.resolve()),),  # as the store keys projects
    ).fetchone()
    return row is not None


async def close_agent(agent: Agent) -> None:
    """Let background indexing finish, then close the agent's side-job providers and its main
    provider (the store is the caller's)."""
    try:
        if agent.memory is not None:
            await agent.memory.finish()
        await agent.aclose()
    finally:
        await agent.provider.aclose()


def set_mode(agent: Agent, mode: str) -> None:
    """Switch the agent's mode; an unknown mode is a usage error naming the choices."""
    try:
        agent.set_mode(mode.strip())
    except ValueError as exc:
        raise UsageError(str(exc)) from None
