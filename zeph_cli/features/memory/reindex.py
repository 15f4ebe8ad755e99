"""`zeph memory reindex`: give every agent-visible message a vector of the configured embedder.

Invariant: resumable and idempotent — only messages without a vector of this
embedder's model are embedded (all of them again with `--all`, which first
drops that model's vectors); a failure of the embedder or the index ends the
command with one line and a non-zero exit, keeping every batch already stored.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

import typer

from ...errors import ZephError
from ...frontends.cli.stderr import eprint

if TYPE_CHECKING:
    from ...config import LoadedConfig
    from ...store import ConversationStore


class ReindexError(ZephError):
    """The embedder or the vector index failed during a reindex."""


def reindex(again: bool) -> None:
    from ...frontends.cli.command_context import load, open_store

    loaded = load()
    store = open_store()
    try:
        print(index_messages(loaded, store, again))
    finally:
        store.close()


def index_messages(loaded: "LoadedConfig", store: "ConversationStore", again: bool = False) -> str:
    """Embed the messages that have no vector of the configured embedder yet (all of them with `again`),
    with a progress bar on a terminal; the line saying what was done. `ReindexError` when the embedder or
    the index fails (the batches stored before are kept)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from .embedders.base import EmbeddingError
    from .embedders.select import describe_embedder, embedder_for
    from .indexer import embed_pending
    from .service import database_path
    from .vectors.base import VectorIndexDown
    from .vectors.factory import open_index
    from ...providers import resolve_settings

    config = loaded.config
    settings = resolve_settings(config, os.environ, loaded.sources)
    try:
        embedder = embedder_for(config, settings, sources=loaded.sources)
        index = open_index(config, store.db, database_path(store.db))
        label = describe_embedder(config, settings, sources=loaded.sources)
        if again:
            dropped = index.forget_model(embedder.model)
            eprint(f"dropped {dropped:,} vectors of {embedder.model}")
        started = time.perf_counter()
        with Progress(
            TextColumn("embedding"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
            console=_stderr_console(), transient=True, disable=not sys.stderr.isatty(),
        ) as bar:
            task = bar.add_task("embedding", total=None)
            done = embed_pending(index, embedder, lambda n, total: bar.update(task, completed=n, total=total))
        elapsed = time.perf_counter() - started
        return (f"indexed {done:,} message{'s' if done != 1 else ''} with {label} in {elapsed:.1f} s "
                f"({config.memory.vector_backend} backend)")
    except (EmbeddingError, VectorIndexDown, ValueError) as exc:
        raise ReindexError(f"reindex stopped: {exc}") from None


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)


def register(app: typer.Typer) -> None:
    @app.command("reindex")
    def memory_reindex(
        again: bool = typer.Option(False, "--all", help="Drop this embedder's vectors and embed every message again."),
    ) -> None:
        """Embed every stored message that has no vector yet.

        Needed after an upgrade or an embedding_model change.
        """
        reindex(again)
