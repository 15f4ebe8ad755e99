"""`search_code`: the model's search over the project's code index.

Invariant: read-only (offered in every mode); reaches the index through the tool context's
`code_search` accessor and turns every refusal into one line for the model. Results are the index's as
stored: a file changed since it was indexed is said to be (the model reads it for the current text).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ...tools.base import Tool, ToolContext, ToolResult
from ...tools.failures import ToolFailure
from .tool_specs import DEFAULT_RESULTS, MAX_RESULTS, SEARCH_CODE

if TYPE_CHECKING:
    from ...tools.code_access import CodeHit
    from .search import Hit


class SearchCodeTool(Tool, declared=SEARCH_CODE):
    def subject(self, arguments: Mapping[str, Any]) -> str:
        return str(arguments.get("query", ""))

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        index = context.code_search
        if index is None:
            raise ToolFailure("search_code: this session has no code index (it is off outside a git work tree)")
        query = str(arguments.get("query", "")).strip()
        if not query:
            raise ToolFailure("search_code: argument 'query' is empty; describe the code or name it")
        k = arguments.get("k", DEFAULT_RESULTS)
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_RESULTS:
            raise ToolFailure(f"search_code: argument 'k' must be an integer from 1 to {MAX_RESULTS}, got {k!r}")
        hits = await index.search(query, k)
        if not hits:
            return ToolResult(
                "No indexed code matches. The index may not be built yet (`zeph index`); grep searches the files.",
                summary="no matches",
            )
        from .pack import render

        parts = []
        for hit in hits:
            shown = render(cast("Hit", hit))  # the feature's own index gives its own hits
            if not _current(index.root / hit.path, hit):
                shown = f"(the file changed since it was indexed: read it for its current text)\n{shown}"
            parts.append(shown)
        return ToolResult("\n\n".join(parts), summary=f"{len(hits)} results · best {hits[0].path}:{hits[0].start_line}")


def _current(path: Path, hit: CodeHit) -> bool:
    """Whether the file still has the chunk's text at its lines."""
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as handle:  # \r\n kept, as indexed
            lines = handle.read().split("\n")
    except OSError:
        return False
    return "\n".join(lines[hit.start_line - 1: hit.end_line]) == hit.text
