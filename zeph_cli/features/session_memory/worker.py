"""The worker `zeph ask` leaves a session's summary (and the profile update) to, so that neither
delays the command's exit nor is cut short by it; the chat app too when the embedded model on the
CPU summarizes (in the app, the summary would replace the conversation the model holds).

Invariant: started only after the reply is stored and printed, detached from the terminal (its
own session, no standard streams), at a lower scheduling priority (`WORKER_NICENESS`) and with no
module of the workspace importable; it uses the same config file and command-line settings as
the command or chat session that started it, writes only the session-summary and profile tables,
logs to the log file instead of printing, and exits when the job is done or fails. One worker runs
at a time (a lock file in the data directory); a second one exits at once.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any
from collections.abc import Mapping

if TYPE_CHECKING:
    from ...config import LoadedConfig


# How much lower than the `zeph ask` that started it the worker runs (POSIX nice): summarizing with the
# embedded model is a second model on the same cores, and the user's next `zeph ask` gets them first.
# Measured on 2 cores, 64 tokens of a foreground model beside a background one: 2.55 s at the same
# priority, 0.9-1.5 s at nice 10 (0.54 s alone). The idle class was faster still (0.55-0.85 s), but on
# cores a build keeps busy it (like nice 19) gets so little time that a write transaction the worker is
# preempted in could outlast the 5 s the user's next command waits for the store.
WORKER_NICENESS = 10


def flag_overrides(loaded: "LoadedConfig") -> dict[str, list[Any]]:
    """The settings given on the command line, as `load()` takes them (key → [value, flag])."""
    return {
        key: [loaded.config.get(key), source.removeprefix("flag ")]
        for key, source in loaded.sources.items()
        if source.startswith("flag ")
    }


def worker_command(conversation_id: int, loaded: "LoadedConfig", config_path: str | None) -> list[str]:
    """The worker's command line. `-P`: the worker runs in the user's workspace, and a module of the project
    there (a `json.py`, a `logging.py`) must not stand in for the standard library's."""
    return [sys.executable, "-P", "-m", "zeph_cli.features.session_memory.worker", str(conversation_id),
            json.dumps(flag_overrides(loaded)), config_path or ""]


def spawn(
    conversation_id: int, loaded: "LoadedConfig", config_path: str | None, cwd: Path, env: Mapping[str, str] | None = None
) -> "subprocess.Popen | None":
    """Start the worker for `conversation_id` and return at once (with `env`, else this process's environment).
    A worker the system cannot start (no such directory, no process to spare) is logged: the summary is
    attempted after a later reply."""
    try:
        return subprocess.Popen(
            worker_command(conversation_id, loaded, config_path), cwd=cwd, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
            env=dict(env) if env is not None else None,
        )
    except OSError as exc:
        from ...log import get_logger

        get_logger("session_memory").warning("the session summary worker could not be started: %s", exc)
        return None


def _only_worker(directory: Path):
    """An exclusive lock on the data directory's worker lock file, or None when another worker holds it:
    a second `zeph ask` while a worker still loads its model starts no second one."""
    try:
        import fcntl
    except ImportError:  # no POSIX locks here: run anyway (the summary's own clock still limits it)
        return object()
    directory.mkdir(parents=True, exist_ok=True)
    handle = open(directory / "session-summary.lock", "a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle  # held until the process exits


async def _work(conversation_id: int, overrides: dict[str, list[Any]], config_path: str) -> None:
    from ...agent.factory import build_agent, close_agent
    from ...frontends.cli.command_context import load, open_store, state
    from ...paths import database_path

    lock = _only_worker(database_path().parent)  # kept referenced: the lock lasts this whole job
    if lock is None:
        return
    state.config_path = config_path or None
    loaded = load({key: (value, flag) for key, (value, flag) in overrides.items()})
    store = open_store()
    try:
        agent, _ = await build_agent(loaded, store=store, env=os.environ, cwd=Path.cwd())
        try:
            await agent.session_memory.run_due(store.get_conversation(conversation_id))
        finally:
            await close_agent(agent)
    finally:
        store.close()


def run_in_background() -> None:
    """Lower this process (and the threads it starts later) by `WORKER_NICENESS`."""
    try:
        os.nice(WORKER_NICENESS)
    except (OSError, AttributeError):  # not allowed, or no such call here: run at the same priority
        pass


def main(argv: list[str]) -> int:
    from ...log import get_logger

    run_in_background()
    try:
        asyncio.run(_work(int(argv[0]), json.loads(argv[1]), argv[2] if len(argv) > 2 else ""))
    except Exception as exc:  # noqa: BLE001 — nobody is watching: the log file says what went wrong
        get_logger("session_memory").warning("the session summary worker failed: %s", exc, exc_info=exc)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
