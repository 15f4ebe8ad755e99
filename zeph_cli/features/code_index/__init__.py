"""The code index: the project's code parsed with tree-sitter into chunks for retrieval (`<code_context>`,
search_code) and tags for a map of the project (`<repo_map>`), kept in zeph's database by project root.

Invariant: grammars come only from their installed wheels (nothing is downloaded); nothing here is
imported by `zeph --help`, and tree-sitter, numpy and the embedders load only when the index is read or
built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...context.blocks import Registration
from .. import ChatCommand, CommandGroup, Feature, Isolation
from .tool_specs import SEARCH_CODE

if TYPE_CHECKING:
    from ...agent.source_host import SourceHost


def _on(session: SourceHost) -> bool:
    return session.extras.code_index is not None


def _indexed(session: SourceHost) -> bool:
    """search_code is offered once the index is known to hold code (its source looks each turn)."""
    index = session.extras.code_index
    return index is not None and index.holds_code


FEATURE = Feature(
    "code index",
    sources=(Registration(f"{__name__}.source", "CodeIndexSource", _on),),
    tools=(SEARCH_CODE,),
    tools_offered=_indexed,
    command_group=CommandGroup("index", f"{__name__}.commands", "index_app"),
    chat_commands=(
        ChatCommand("index", "[update|search Q|map]",
                    "The code index's state; update it, search it or see its map.",
                    (f"{__name__}.chat_commands", "index_command"), check="index_problem", background=True),
    ),
    isolation=Isolation(frozenset({"code index"}), frozenset({"code tools"}), ("code index", "code tools")),
)
