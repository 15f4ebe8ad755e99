"""The names MCP tools are offered under: `ID__TOOL`.

Invariant: a name offered to the model holds only `[A-Za-z0-9_-]` and at most
64 characters (the OpenAI and Anthropic limits); two different (server, tool)
pairs never get the same name — a name that has to be cut or cleaned ends in a
short hash of the full one — and `ToolNames` maps every offered name back.
"""

from __future__ import annotations

import hashlib
import re

MAX_NAME = 64
SEPARATOR = "__"
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")
_HASH_CHARS = 8


def tool_name(server_id: str, tool: str) -> str:
    """`ID__TOOL` as offered to the model, cleaned and cut to the provider limits."""
    full = f"{server_id}{SEPARATOR}{tool}"
    clean = _NOT_ALLOWED.sub("_", full)
    if clean == full and len(full) <= MAX_NAME:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:_HASH_CHARS]
    return f"{clean[: MAX_NAME - _HASH_CHARS - 1]}_{digest}"


class ToolNames:
    """Offered names and the (server, tool) each stands for."""

    def __init__(self) -> None:
        self._by_name: dict[str, tuple[str, str]] = {}

    def add(self, server_id: str, tool: str) -> str:
        """The offered name of (server, tool); when another pair already holds its plain name (`a_` +
        `_b` and `a` + `__b` both read `a____b`), a hashed one that tells them apart."""
        name = tool_name(server_id, tool)
        holder = self._by_name.get(name)
        if holder is not None and holder != (server_id, tool):
            digest = hashlib.sha256(f"{server_id}\0{tool}".encode()).hexdigest()[:_HASH_CHARS]
            name = f"{_NOT_ALLOWED.sub('_', name)[: MAX_NAME - _HASH_CHARS - 1]}_{digest}"
        self._by_name[name] = (server_id, tool)
        return name

    def lookup(self, name: str) -> tuple[str, str] | None:
        return self._by_name.get(name)

    def forget_server(self, server_id: str) -> None:
        self._by_name = {n: pair for n, pair in self._by_name.items() if pair[0] != server_id}
