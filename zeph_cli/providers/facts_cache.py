"""What model servers said about themselves, kept briefly across runs in the cache dir.

Invariant: a server's facts (window, model id) are reused for at most
`FACTS_TTL_SECS` after it stated them, then asked again; what is kept is what a
server that answered said (possibly nothing: then the model table is used
without asking it again), and `forget()` drops it (a context-length error
proved it stale). The file is rebuildable: a missing, unreadable or malformed
file, or one that cannot be written, only means the server is asked again.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..atomic_file import write_atomically
from .server_facts import ServerFacts

FACTS_TTL_SECS = 600  # a server restarted with another window is asked again within ten minutes
MAX_ENTRIES = 32
FILE_NAME = "server-facts.json"


def _read(path: Path) -> dict[str, dict]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}


def _write(path: Path, entries: dict[str, dict]) -> None:
    newest = dict(sorted(entries.items(), key=lambda kv: kv[1].get("at", 0), reverse=True)[:MAX_ENTRIES])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, json.dumps(newest).encode("utf-8"))
    except OSError:
        pass  # nothing kept: the next run asks the server


def load(folder: Path, key: str, now: float | None = None) -> ServerFacts | None:
    """The facts stated for `key` within the last `FACTS_TTL_SECS`, else None."""
    entry = _read(folder / FILE_NAME).get(key)
    now = time.time() if now is None else now
    if entry is None or not isinstance(entry.get("at"), (int, float)) or not 0 <= now - entry["at"] <= FACTS_TTL_SECS:
        return None
    window, source, model = entry.get("window"), entry.get("source"), entry.get("model")
    if not (window is None or (isinstance(window, int) and window > 0)) or not isinstance(source, str):
        return None
    if not (model is None or isinstance(model, str)):
        return None
    return ServerFacts(window, source, model)


def save(folder: Path, key: str, facts: ServerFacts, now: float | None = None) -> None:
    """Keep what a server that answered stated (empty facts: it stated nothing)."""
    path = folder / FILE_NAME
    entries = _read(path)
    entries[key] = {"window": facts.window, "source": facts.source, "model": facts.model,
                    "at": time.time() if now is None else now}
    _write(path, entries)


def forget(folder: Path, key: str) -> None:
    path = folder / FILE_NAME
    entries = _read(path)
    if entries.pop(key, None) is not None:
        _write(path, entries)
