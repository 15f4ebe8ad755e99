"""The embedded model's evaluated system-prompt prefix, saved across runs.

Invariant: a saved llama.cpp state is restored only from a complete file whose key (model file identity,
context size, llama.cpp version and the exact prefix tokens) and checksum match; anything else (a corrupt,
truncated or foreign file, an unwritable directory) is ignored and, where it can be, replaced: the cache
never makes a request fail. Files are written whole (temp file + rename) and the directory keeps at most
`max_files` files and `max_bytes` bytes, the least recently used evicted first.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..atomic_file import write_atomically

log = logging.getLogger("zeph.local")

MAGIC = b"ZEPHKV01"
SUFFIX = ".kvstate"
MAX_FILES = 4
MAX_BYTES = 512 * 1024 * 1024
_HEADER_LENGTH = struct.Struct("<I")

PrefixSource = Literal["memory", "disk", "evaluated", "none"]


@dataclass(frozen=True)
class PrefixOutcome:
    """How a request's prefix got into the model: already there (`memory`), restored from a saved state
    (`disk`), evaluated now (`evaluated`, then saved), or there was none to reuse (`none`)."""

    source: PrefixSource
    prefix_tokens: int
    evaluated_tokens: int


def model_identity(model_path: str, n_ctx: int, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a saved state depends on besides its tokens: the model file (path, size, mtime), the context size
    and the llama.cpp build that wrote it."""
    path = Path(model_path).resolve()
    stat = path.stat()
    try:
        from llama_cpp import __version__ as llama_version
    except ImportError:  # pragma: no cover - the provider has imported it already
        llama_version = "?"
    return {
        "model": str(path),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "n_ctx": n_ctx,
        "llama_cpp": llama_version,
        **(extra or {}),
    }


def prefix_key(identity: dict[str, Any], tokens: list[int]) -> str:
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode("utf-8"))
    digest.update(struct.pack(f"<{len(tokens)}i", *tokens))
    return digest.hexdigest()


def _checksum(tokens: bytes, state: bytes) -> str:
    digest = hashlib.blake2b(digest_size=16)
    digest.update(tokens)
    digest.update(state)
    return digest.hexdigest()


class PrefixStore:
    """Saved prefix states in one directory, one file per key."""

    def __init__(self, directory: Path, *, max_files: int = MAX_FILES, max_bytes: int = MAX_BYTES) -> None:
        self.directory = directory
        self.max_files = max_files
        self.max_bytes = max_bytes

    def path_for(self, key: str) -> Path:
        return self.directory / f"{key[:40]}{SUFFIX}"

    def load(self, key: str, tokens: list[int]) -> bytes | None:
        """The saved state for `key` and `tokens`, or None (missing, unreadable or not exactly theirs)."""
        path = self.path_for(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        state = _parse(data, key, tokens)
        if state is None:
            log.info("ignoring the unusable prefix state %s", path)
            self.discard(key)
            return None
        try:
            os.utime(path)  # recently used: evicted last
        except OSError:
            pass
        return state

    def save(self, key: str, tokens: list[int], state: bytes) -> Path | None:
        """Write the state for `key` whole, then evict; None when it cannot be kept (no error)."""
        token_bytes = struct.pack(f"<{len(tokens)}i", *tokens)
        header = json.dumps(
            {"key": key, "tokens": len(tokens), "state_bytes": len(state), "checksum": _checksum(token_bytes, state)}
        ).encode("utf-8")
        size = len(MAGIC) + _HEADER_LENGTH.size + len(header) + len(token_bytes) + len(state)
        if size > self.max_bytes:
            return None
        path = self.path_for(key)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            write_atomically(path, b"".join((MAGIC, _HEADER_LENGTH.pack(len(header)), header, token_bytes, state)))
        except OSError as exc:
            log.info("cannot save the prefix state in %s: %s", self.directory, exc)
            return None
        self.evict(keep=path)
        return path

    def discard(self, key: str) -> None:
        try:
            self.path_for(key).unlink()
        except OSError:
            pass

    def files(self) -> list[Path]:
        """Saved states, most recently used first."""
        try:
            entries = [(p.stat().st_mtime_ns, p) for p in self.directory.glob(f"*{SUFFIX}")]
        except OSError:
            return []
        return [p for _, p in sorted(entries, key=lambda e: e[0], reverse=True)]

    def evict(self, keep: Path | None = None) -> None:
        """Drop the least recently used files beyond `max_files` or `max_bytes` (never `keep`)."""
        total = 0
        kept = 0
        for path in self.files():
            try:
                size = path.stat().st_size
            except OSError:
                continue
            if path == keep or (kept < self.max_files and total + size <= self.max_bytes):
                kept += 1
                total += size
                continue
            try:
                path.unlink()
            except OSError:
                pass


def _parse(data: bytes, key: str, tokens: list[int]) -> bytes | None:
    start = len(MAGIC) + _HEADER_LENGTH.size
    if len(data) < start or not data.startswith(MAGIC):
        return None
    (header_length,) = _HEADER_LENGTH.unpack_from(data, len(MAGIC))
    try:
        header = json.loads(data[start : start + header_length])
        if not isinstance(header, dict):
            return None
        n_tokens, state_bytes = int(header["tokens"]), int(header["state_bytes"])
    except (ValueError, KeyError, TypeError):
        return None
    body = start + header_length
    token_end = body + 4 * n_tokens
    if header.get("key") != key or n_tokens != len(tokens) or len(data) != token_end + state_bytes:
        return None
    token_bytes, state = data[body:token_end], data[token_end:]
    if token_bytes != struct.pack(f"<{len(tokens)}i", *tokens):
        return None
    if header.get("checksum") != _checksum(token_bytes, state):
        return None
    return state


def restore_latest(llama: Any, store: PrefixStore, identity: dict[str, Any]) -> int:
    """Restore the most recently used saved prefix written for `identity` (the same model file, context
    size, llama.cpp build and device) into `llama`; its token count, or 0 when there is none to restore."""
    for path in store.files()[:1]:
        tokens = _saved_tokens(path)
        if tokens is None:
            return 0
        key = prefix_key(identity, tokens)
        if store.path_for(key) != path:
            return 0  # written for another model or context size
        state = store.load(key, tokens)
        if state is None:
            return 0
        try:
            _restore(llama, tokens, state)
        except (RuntimeError, ValueError) as exc:
            log.info("cannot restore the prefix state: %s", exc)
            store.discard(key)
            llama.reset()
            return 0
        return len(tokens)
    return 0


def _saved_tokens(path: Path) -> list[int] | None:
    """The prefix tokens a saved file says it holds (its header and tokens only; `PrefixStore.load` checks
    the whole file)."""
    start = len(MAGIC) + _HEADER_LENGTH.size
    try:
        with path.open("rb") as file:
            head = file.read(start)
            if len(head) < start or not head.startswith(MAGIC):
                return None
            (header_length,) = _HEADER_LENGTH.unpack_from(head, len(MAGIC))
            header = json.loads(file.read(header_length))
            n_tokens = int(header["tokens"])
            body = file.read(4 * n_tokens)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if n_tokens <= 0 or len(body) != 4 * n_tokens:
        return None
    return list(struct.unpack(f"<{n_tokens}i", body))


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _restore(llama: Any, tokens: list[int], state: bytes) -> None:
    """Put a saved prefix state into `llama`: its KV cache and the tokens it holds (raises on a bad state).

    The state goes straight to llama.cpp (`llama_state_set_data`), not through `Llama.load_state`, which
    also fills the logits array it keeps for `logits_all` (n_batch × n_vocab floats, 100 MB for a
    49k-token vocabulary): 0.15–0.3 s of every warm start, for logits zeph never reads. After `reset()`
    the next request decodes at least one token before it samples, so no stale logits are used."""
    import ctypes

    import llama_cpp

    llama.reset()
    buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
    if llama_cpp.llama_state_set_data(llama.ctx, buffer, len(state)) != len(state):
        raise RuntimeError("llama.cpp did not take the whole saved state")
    llama.input_ids[: len(tokens)] = tokens
    llama.n_tokens = len(tokens)


def prepare_prefix(llama: Any, tokens: list[int], store: PrefixStore | None, key: str) -> PrefixOutcome:
    """Make `llama` hold exactly the evaluated `tokens` (or more after them): keep what it already holds,
    else restore the saved state, else evaluate them and save the state. llama.cpp's own prefix matching
    then evaluates only the rest of the prompt."""
    n = len(tokens)
    if not n:
        return PrefixOutcome("none", 0, 0)
    held = int(llama.n_tokens)
    if held >= n and llama.input_ids[:n].tolist() == tokens:
        return PrefixOutcome("memory", n, 0)
    if store is not None:
        state = store.load(key, tokens)
        if state is not None:
            try:
                _restore(llama, tokens, state)
                return PrefixOutcome("disk", n, 0)
            except (RuntimeError, ValueError) as exc:
                log.info("cannot restore the prefix state: %s", exc)
                store.discard(key)
    llama.reset()
    llama.eval(tokens)
    if store is not None:
        store.save(key, tokens, bytes(llama.save_state().llama_state))
    return PrefixOutcome("evaluated", n, n)
