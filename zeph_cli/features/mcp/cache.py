"""Each MCP server's last listing (tools, prompts, instructions, capabilities, the name and version it
reported), kept so that a turn can offer its tools without starting it.

One JSON file per server, `<cache dir>/mcp/ID.json` (`paths.cache_dir`), holding the listings of the
last few configurations it ran under. A listing is keyed by a hash of what decides what the server
lists: the entry as written (command, args, url, env and headers), a hash of the values its `${VAR}`s
expand to (never the values), the workspace it runs in, and the files it runs (the command's and every
argument that names a file, such as `server.py` or `build/index.js`: their size and time), so that an
edited or upgraded server is listed again. A listing older than LISTING_MAX_AGE_SECS is not used (the
server is started and waited for again, as a server never listed): a server run through a launcher
(`npx -y pkg`, `uvx pkg`) can change with nothing on the command line changing. `trusted`, `timeout`, `enabled` and `tool_allowlist` are not
part of it: they change what zeph offers, not what the server lists.

A server that did not start is remembered under its key for FAILURE_KEPT_SECS (then it is waited for
again, as a server never listed).

Invariant: a listing is used only under the key it was written with; a file that is missing,
unreadable, of another format, or that no longer fits the listing types is a miss, never an error
(at most one debug log line). Writes are atomic (a temporary file renamed over the old one). Nothing
here imports the `mcp` SDK.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .connection import ListedPrompt, ListedTool
from .resources import ListedResource, ListedTemplate
from .expand import UnsetVariable, expand_table, expand_value

if TYPE_CHECKING:
    from ...config.mcp import McpServerEntry

FORMAT = 1
LISTING_MAX_AGE_SECS = 24 * 3600.0  # a listing older than this is listed again (one wait a day at most)
FAILURE_KEPT_SECS = 3600.0  # a failed start is remembered this long: meanwhile turns do not wait for the server
KEPT_PER_SERVER = 8  # listings under other configurations (other workspaces, older settings) kept per server
log = logging.getLogger("zeph.mcp.cache")


@dataclass
class Listing:
    """What a server listed, as last seen."""
    tools: list[ListedTool]
    prompts: list[ListedPrompt] = field(default_factory=list)
    instructions: str = ""
    capabilities: dict[str, Any] = field(default_factory=dict)
    server_info: tuple[str, str] = ("", "")  # (name, version) as the server reported them
    listed_at: float = 0.0
    resources: list[ListedResource] = field(default_factory=list)
    resource_templates: list[ListedTemplate] = field(default_factory=list)
    resources_listed: bool = False  # the server's resources were listed (a failed listing is listed again)


def cache_key(entry: McpServerEntry, env: Mapping[str, str], cwd: Path) -> str:
    """The hash a server's listing is kept under (see the module's docstring for what goes into it)."""
    try:
        expanded = json.dumps([expand_table(entry.id, "env", entry.env, env),
                               expand_table(entry.id, "headers", entry.headers, env),
                               expand_value(entry.id, "url", entry.url, env)], sort_keys=True)
    except UnsetVariable:
        expanded = "unset"  # the server cannot start either; any key will do
    parts = {
        "command": entry.command, "args": list(entry.args), "url": entry.url,
        "env": dict(entry.env), "headers": dict(entry.headers), "cwd": str(cwd),
        "expanded": hashlib.sha256(expanded.encode()).hexdigest(),
        "file": _command_file(entry.command, env),
        "files": [_file_stamp(cwd / arg) for arg in entry.args if _is_file(cwd / arg)],
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long, a NUL byte: not a file
        return False


def _file_stamp(path: Path) -> list[Any]:
    try:
        stat = path.stat()
    except OSError:
        return [str(path)]
    return [str(path), stat.st_size, stat.st_mtime_ns]


def _command_file(command: str, env: Mapping[str, str]) -> list[Any]:
    if not command:
        return []
    found = shutil.which(command, path=env.get("PATH", os.environ.get("PATH")))
    if found is None:
        return [command]
    try:
        stat = os.stat(found)
    except OSError:
        return [found]
    return [found, stat.st_size, stat.st_mtime_ns]


class ListingCache:
    """The listings of one zeph's servers, in `directory` (None: nothing is kept)."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    def _path(self, server_id: str) -> Path | None:
        return self.directory / f"{server_id}.json" if self.directory is not None else None

    def _read(self, server_id: str) -> dict[str, Any]:
        path = self._path(server_id)
        if path is None:
            return {}
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.debug("MCP listing cache %s is unreadable: %s", path, exc)
            return {}
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("listings"), dict):
            return {}
        return data["listings"]

    def failure(self, server_id: str, key: str) -> str | None:
        """Why the server's last start under `key` failed, if it did within FAILURE_KEPT_SECS (else None)."""
        raw = self._read(server_id).get(key)
        if not isinstance(raw, dict) or not isinstance(raw.get("failed"), str):
            return None
        at = raw.get("at")
        if not isinstance(at, (int, float)) or not 0 <= time.time() - at < FAILURE_KEPT_SECS:
            return None
        return str(raw["failed"])

    def save_failure(self, server_id: str, key: str, reason: str) -> None:
        """Remember that the server did not start under `key`, beside the listing kept there if any (a server
        down for a while keeps its tools offered: a call to one starts it, or says why it cannot)."""
        raw = self._read(server_id).get(key)
        kept = raw if isinstance(raw, dict) and "tools" in raw else {}
        self._put(server_id, key, {**kept, "failed": reason, "at": time.time()})

    def load(self, server_id: str, key: str) -> Listing | None:
        """The listing kept under `key`, or None."""
        raw = self._read(server_id).get(key)
        if not isinstance(raw, dict) or "tools" not in raw:
            return None
        try:
            listing = Listing(
                tools=[ListedTool(**t) for t in raw["tools"]],
                prompts=[ListedPrompt(**{**p, "arguments": tuple(tuple(a) for a in p["arguments"])}) for p in raw["prompts"]],
                instructions=str(raw.get("instructions") or ""),
                capabilities=dict(raw.get("capabilities") or {}),
                server_info=(str(raw["server_info"][0]), str(raw["server_info"][1])),
                listed_at=float(raw["listed_at"]),
                resources=[ListedResource(**r) for r in raw.get("resources") or ()],
                resource_templates=[ListedTemplate(**t) for t in raw.get("resource_templates") or ()],
                resources_listed=bool(raw.get("resources_listed", False)),
            )
        except (KeyError, TypeError, ValueError, IndexError) as exc:  # written by another version of zeph
            log.debug("MCP listing cache of %s does not fit: %s", server_id, exc)
            return None
        if not 0 <= time.time() - listing.listed_at < LISTING_MAX_AGE_SECS:
            return None  # listed again (a launcher's package may have changed under the same command line)
        return listing

    def save(self, server_id: str, key: str, listing: Listing) -> None:
        """Keep `listing` under `key` (replacing any listing there); a failure to write is logged, not raised."""
        self._put(server_id, key, {
            "tools": [dataclasses.asdict(t) for t in listing.tools],
            "prompts": [dataclasses.asdict(p) for p in listing.prompts],
            "instructions": listing.instructions,
            "capabilities": listing.capabilities,
            "server_info": list(listing.server_info),
            "listed_at": listing.listed_at or time.time(),
            "resources": [dataclasses.asdict(r) for r in listing.resources],
            "resource_templates": [dataclasses.asdict(t) for t in listing.resource_templates],
            "resources_listed": listing.resources_listed,
        })

    def _put(self, server_id: str, key: str, record: dict[str, Any]) -> None:
        path = self._path(server_id)
        if path is None:
            return
        listings = self._read(server_id)
        listings.pop(key, None)
        listings[key] = record
        kept = dict(list(listings.items())[-KEPT_PER_SERVER:])  # insertion order: the latest last
        _write(path, {"format": FORMAT, "server": server_id, "listings": kept})

def _write(path: Path, data: dict[str, Any]) -> None:
    """Replace `path` with `data` atomically; a failure is logged, not raised."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, ensure_ascii=False, default=_jsonable)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except (OSError, TypeError, ValueError) as exc:
        log.debug("MCP cache file %s was not written: %s", path, exc)


def _jsonable(value: Any) -> Any:
    """Tuples and sets as lists; anything else JSON cannot hold as its text."""
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


class ToolVectors:
    """Tool discovery's vectors of tool texts, kept across processes: `<cache dir>/mcp/tool.vectors.json` (a
    name no server's `ID.json` can have: ids hold no dot), for one embedder model at a time (another model's replace them), at most MAX_VECTORS, float32.

    Invariant: vectors are looked up by the model's name and the sha256 of the text embedded, so a kept
    vector is the row that model makes for that text; anything unreadable is a miss, never an error."""

    MAX_VECTORS = 2048

    def __init__(self, directory: Path | None) -> None:
        self.path = directory / "tool.vectors.json" if directory is not None else None

    def load(self, model: str) -> dict[str, Any]:
        import base64

        import numpy as np

        if self.path is None:
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if data.get("format") != FORMAT or data.get("model") != model:
                return {}
            return {digest: np.frombuffer(base64.b64decode(text), dtype="<f4")
                    for digest, text in data["vectors"].items()}
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return {}

    def save(self, model: str, rows: Mapping[str, Any]) -> None:
        import base64

        import numpy as np

        if self.path is None:
            return
        kept = list(rows.items())[-self.MAX_VECTORS:]
        vectors = {digest: base64.b64encode(np.asarray(row, dtype="<f4").tobytes()).decode() for digest, row in kept}
        _write(self.path, {"format": FORMAT, "model": model, "vectors": vectors})
