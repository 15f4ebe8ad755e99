"""`/index` in the chat app: the code index's state, an update now, a search, the map a message would get.

Invariant: reads the session's code index only (never a provider); an update runs on the index's build
thread and is reported as it ends, the app usable meanwhile; an argument it does not know is refused as
typed, naming the forms it takes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .. import ChatHost

FORMS = "/index, /index status, /index update, /index search QUERY, /index map [QUERY]"


def index_problem(argument: str) -> str | None:
    word, _, rest = argument.strip().partition(" ")
    if word in ("", "status", "update", "map"):
        return None
    if word == "search":
        return None if rest.strip() else "/index search needs a query: /index search QUERY"
    return f"/index takes {FORMS}; got {argument.strip()!r}"


async def index_command(host: ChatHost, argument: str) -> None:
    index = host.session.agent.extras.code_index
    if index is None:
        await host.notice("the code index is off here (outside a git work tree, or [index] enabled = false)", "warning")
        return
    word, _, rest = argument.strip().partition(" ")
    if word in ("", "status"):
        await host.show(await status_markdown(index))
    elif word == "update":
        await _update(host, index)
    elif word == "search":
        hits = await index.search(rest.strip(), 8)
        await host.show(hits_markdown(rest.strip(), hits))
    elif word == "map":
        await host.show(await map_markdown(index, rest.strip()))


async def _update(host: ChatHost, index: Any) -> None:
    if index.state.running:
        await host.notice("the code index is being updated already; it goes once more when that ends")
    index.build_in_background()
    await host.notice("updating the code index…")
    await index.wait_for_build()
    state = index.state
    if state.problem:
        await host.notice(f"the code index update failed: {state.problem}", "error")
        return
    report = state.report
    if report is not None:
        await host.notice(f"code index: {report.parsed:,} files parsed, {report.unchanged:,} unchanged, "
                          f"{report.removed:,} removed; {state.embedded:,} chunks embedded")
    host.refresh_gauge()


async def status_markdown(index: Any) -> str:
    status = await index.status()
    lines = [f"**Code index** of `{index.root}`"]
    if status is None:
        lines.append("Not indexed yet: `/index update` or `zeph index` builds it.")
    else:
        from .describe import status_lines

        lines += [line.strip() for line in status_lines(str(index.root), status)]
    state = index.state
    if state.running:
        lines.append(f"Building now: {state.stage} {state.done:,}/{state.total:,}")
    elif state.problem:
        lines.append(f"The last build failed: {state.problem}")
    lines.append("")
    lines.append(f"`{FORMS}`")
    return "\n\n".join(lines)


def hits_markdown(query: str, hits: Any) -> str:
    """The hits as a table (where, what, score): the code itself is a read away."""
    if not hits:
        return f"No indexed code matches {query!r}."
    lines = [f"**{len(hits)} results for** {query!r}", "", "| score | where | what |", "|---|---|---|"]
    for hit in hits:
        what = f"{hit.kind} `{hit.symbol}`" if hit.symbol else hit.kind
        lines.append(f"| {hit.score:.4f} | `{hit.path}:{hit.start_line}-{hit.end_line}` | {what} |")
    return "\n".join(lines)


async def map_markdown(index: Any, query: str) -> str:
    from ...tokens import default_counter

    code = await index.for_turn(query, [], index.root, k=8, map_tokens=index.config.index.repo_map_tokens,
                                count_tokens=default_counter().count)
    rendered = code.map
    if rendered is None or not rendered.text.strip():
        return "The repo map is empty (nothing indexed yet?)."
    return (f"**Repo map** ({rendered.files} files, {rendered.definitions} definitions, {rendered.tokens:,} tokens)"
            f"\n\n```\n{rendered.text}\n```")
