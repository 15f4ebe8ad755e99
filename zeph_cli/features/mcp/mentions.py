"""`@server:uri` in a chat message: the MCP resource it names, attached to the message.

Invariant: a mention is `@ID:URI` where ID is a server id and URI has a scheme (`@everything:demo://x`,
`@docs:file:///a.md`), standing alone (not inside a word or an e-mail address); trailing punctuation is not
part of it. Each mentioned resource is read when the message is sent and goes before the message's text in
the same stored `<attachment path="ID:URI" lines="N">` block a file attached with /attach gets, within the
same limits (an attachment at most a quarter of the prompt budget, all of one message together too). A
mention that cannot be attached — no such server, a server without resources, a URI it does not know, a
resource too large — stops the message with one `MentionError` line naming it (a usage error, as a file
that cannot be attached is); nothing is sent.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ...errors import UsageError

if TYPE_CHECKING:
    from ...context.attachments import Attachment

MENTION = re.compile(r"(?<![\w@.])@([A-Za-z0-9_-][A-Za-z0-9_.-]*):([A-Za-z][A-Za-z0-9+.-]*:[^\s<>\"'`]+)")
_TRAILING = ".,;:!?)]}"
# What Tab completes: a mention being typed at the end of the input (`@`, `@ID`, `@ID:`, `@ID:URI-PREFIX`).
TYPING = re.compile(r"(?:^|(?<=\s))@([A-Za-z0-9_.-]*)(?::(\S*))?$")
CHARS_PER_TOKEN_AT_MOST = 16  # a resource this many characters per token of the limit is refused uncounted


class MentionError(UsageError):
    """A mentioned resource that cannot be attached; the message names the mention."""


def mentions(text: str) -> list[tuple[str, str]]:
    """The (server id, URI) pairs `text` mentions, in order, each once."""
    found: list[tuple[str, str]] = []
    for match in MENTION.finditer(text):
        pair = (match.group(1), match.group(2).rstrip(_TRAILING))
        if pair not in found:
            found.append(pair)
    return found


def mention_path(server: str, uri: str) -> str:
    """How an attached resource is named in its `<attachment path=…>` block and in the transcript."""
    return f"{server}:{uri}"


async def attach_mentions(agent: Any, text: str, earlier: list[Attachment]) -> tuple[list[Attachment], list[str]]:
    """The resources `text` mentions, read from their servers (started first if need be) as attachments
    that fit with `earlier` (the message's files), and the notes of that start (servers that did not
    start); nothing when it mentions none or no server is configured."""
    found = mentions(text)
    manager = agent.extras.mcp
    if not found or manager is None:
        return [], []
    from ...context.attachments import Attachment, attachment_limit, over_limit
    from ...tools.text_files import count_lines
    from .resources import ResourceError

    notes = await agent.extras.start_mcp()
    prompt_budget = agent.budget().available or agent.profile.context_window
    limit = attachment_limit(prompt_budget)
    counter = agent.exact_counter()
    read: list[Attachment] = []
    for server, uri in found:
        name = f"@{mention_path(server, uri)}"
        try:
            body, _images = await manager.read_resource(server, uri)  # SEAM (images): images as ImageParts of the message
        except ResourceError as exc:
            raise MentionError(f"cannot attach {name}: {exc}") from None
        tokens = len(body) // CHARS_PER_TOKEN_AT_MOST + 1  # surely more than the limit: not counted
        if tokens <= limit:
            tokens = counter.count(body)
        if tokens > limit:
            raise MentionError(f"cannot attach {name}: it is {len(body):,} characters, more than an attachment may take "
                                  f"(a quarter of the {prompt_budget:,}-token prompt budget: {limit:,}); ask the "
                                  "agent to read it with mcp_read_resource instead")
        read.append(Attachment(mention_path(server, uri), body, count_lines(body), tokens))
    problem = over_limit([*earlier, *read], prompt_budget)
    if problem:
        raise MentionError(f"cannot attach {', '.join(a.path for a in [*earlier, *read])}: {problem}")
    return read, notes


def complete_mention(text: str, servers: list[str], uris: Any) -> list[tuple[str, str, str]]:
    """What Tab offers for a mention typed at the end of `text`: (the whole input after accepting, the label,
    what it is) — server ids after `@`, then the URIs `uris(server)` gives (what the server listed) after
    `@ID:`; none for any other input."""
    match = TYPING.search(text)
    if match is None or "\n" in text[match.start():]:
        return []
    head, typed_id, typed_uri = text[: match.start()], match.group(1), match.group(2)
    if typed_uri is None:
        return [(f"{head}@{server}:", f"@{server}:", "MCP server") for server in servers if server.startswith(typed_id)]
    if typed_id not in servers:
        return []
    return [(f"{head}@{typed_id}:{uri}", uri, f"resource of {typed_id}")
            for uri in uris(typed_id) if uri.startswith(typed_uri)][:50]
