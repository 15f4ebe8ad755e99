"""Keeping the typed prompt of a `zeph ask` that could not start or store its turn.

Invariant: the prompt ends up somewhere the user is told about — the scroll-back
of the session it was typed for (marked unsent, never sent by later turns), else
a new file in the first of `unsaved-prompts/` beside the database, in the cache
dir, in the temporary dir that takes all of it (never overwriting another, never
left empty or cut) — and the returned sentence says where; only when every place
fails does it say the prompt was lost. No session is created for a prompt that
got no reply. A reply shown but not stored is kept the same way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime, UTC
from pathlib import Path

from ..errors import StoreError
from ..messages import Message
from ..paths import cache_dir
from ..store import Conversation, ConversationStore
from ..store.conversations import UNSENT_KEY

RESCUE_DIR_NAME = "unsaved-prompts"


def keep_prompt(
    store: ConversationStore,
    conversation: Conversation | None,
    text: str,
    *,
    reason: str,
    data_dir: Path,
) -> str:
    """Keep the prompt of a turn that never started; say where. In a session that exists (`-c`, `--session`) it
    goes into the scroll-back, marked unsent, and later turns do not send it; without one it goes to a file,
    so a command that failed leaves no session behind (for `-c` to continue)."""
    if conversation is None:
        return rescue_prompt(text, data_dir)
    try:
        store.add_message(conversation.id, Message.user(text), agent_visible=False, metadata={UNSENT_KEY: reason})
    except StoreError:
        return rescue_prompt(text, data_dir)
    return unsent_in_session(conversation.id)


def unsent_in_session(session_id: int) -> str:
    return (f"your prompt is in session {session_id}'s scroll-back, marked unanswered; later turns will not send "
            f"it (zeph sessions show {session_id})")


def rescue_places(data_dir: Path, env: Mapping[str, str] | None = None) -> list[Path]:
    """Where a text the database would not take is written, in order: beside the database, then the cache dir
    (often the same disk, but not always), then the temporary dir (often another file system, in memory)."""
    import tempfile  # only when something is to be rescued

    user = getattr(os, "getuid", lambda: "")()
    places = [data_dir / RESCUE_DIR_NAME, cache_dir(env) / RESCUE_DIR_NAME,
              Path(tempfile.gettempdir()) / f"zeph-{user}-{RESCUE_DIR_NAME}"]
    return list(dict.fromkeys(places))


def rescue_prompt(text: str, data_dir: Path, env: Mapping[str, str] | None = None) -> str:
    """Keep the typed prompt in a new file (`rescue_places`); say where, or that it could not be kept."""
    path, problems = rescue_text(text, rescue_places(data_dir, env))
    if path is not None:
        return f"your prompt is not in the database; it is kept in {path}"
    return f"your prompt could not be kept ({'; '.join(problems)})"


def rescue_reply(text: str, data_dir: Path, env: Mapping[str, str] | None = None) -> str:
    """Keep a reply that was shown but not stored in a new file; say where, or that it could not be kept."""
    path, problems = rescue_text(text, rescue_places(data_dir, env), suffix="-reply")
    if path is not None:
        return f"the reply is not in the database; its text is kept in {path}"
    return f"the reply is not in the database and could not be kept in a file ({'; '.join(problems)})"


def rescue_text(text: str, places: list[Path], *, suffix: str = "") -> tuple[Path | None, list[str]]:
    """Write `text` to a new file in the first of `places` that takes all of it (a file that could not be
    written in full is removed, never left empty or cut); the file, and what each place said."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    data = (text if text.endswith("\n") else text + "\n").encode("utf-8")
    problems: list[str] = []
    for folder in places:
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not _own_folder(folder):  # a shared temporary dir: a link, or someone else's folder
                problems.append(f"{folder} is not a folder of this user's own")
                continue
            path = _new_file(folder, stamp + suffix, data)
        except OSError as exc:
            problems.append(f"{folder}: {exc.strerror or exc}")
            continue
        if path is None:
            problems.append(f"{folder} has no free file name")
            continue
        return path, problems
    return None, problems


def _own_folder(folder: Path) -> bool:
    """`folder` is a real folder (not a link) that this user owns."""
    import stat

    info = folder.lstat()
    return stat.S_ISDIR(info.st_mode) and (not hasattr(os, "getuid") or info.st_uid == os.getuid())


def _new_file(folder: Path, stem: str, data: bytes) -> Path | None:
    for attempt in range(1000):
        path = folder / (f"{stem}.txt" if attempt == 0 else f"{stem}-{attempt}.txt")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError:
            path.unlink(missing_ok=True)
            raise
        return path
    return None
