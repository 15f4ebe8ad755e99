"""The log file: what the user channel does not carry — warnings from background work
(tool-pair summaries, probe verdicts, summary fallbacks), what background learning did,
and internal errors with their tracebacks.

Invariant: records of the `zeph.*` loggers at INFO and above go to one file,
`<data dir>/zeph.log` (rotated at 1 MB, 3 old files kept), never to the terminal, which
the chat app owns; nothing is created before the first record; a log that cannot be
written is skipped silently, so logging never fails a command. Import this module only
where work is done: `zeph --help` does not load `logging`.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

LOG_NAME = "zeph.log"
MAX_BYTES = 1_000_000
BACKUP_COUNT = 3
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_root = logging.getLogger("zeph")


class _LogFile(logging.Handler):
    """The rotating log file, set up at its first record (a command that logs nothing never imports
    `logging.handlers`); creates its directory then; a failed write is dropped, not printed."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.baseFilename = str(path)
        self._file: logging.Handler | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self._file is None:
                self._file = _rotating_file(self.baseFilename)
                self._file.setFormatter(self.formatter)
            self._file.emit(record)
        except Exception:  # noqa: BLE001 — a failing log file must never fail the program: logging's handleError decides
            self.handleError(record)

    def handleError(self, record: logging.LogRecord) -> None:
        pass

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        super().close()


def _rotating_file(path: str) -> logging.Handler:
    from logging.handlers import RotatingFileHandler

    class RotatingLogFile(RotatingFileHandler):
        def _open(self):
            Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
            return super()._open()

        def handleError(self, record: logging.LogRecord) -> None:
            pass

    return RotatingLogFile(path, maxBytes=MAX_BYTES, backupCount=BACKUP_COUNT, encoding="utf-8", delay=True)


def _file_handler() -> _LogFile | None:
    return next((h for h in _root.handlers if isinstance(h, _LogFile)), None)


def log_to(directory: Path) -> Path:
    """Send zeph's warnings to `directory/zeph.log`, replacing an earlier destination."""
    path = Path(os.path.abspath(directory / LOG_NAME))
    current = _file_handler()
    if current is not None:
        if Path(current.baseFilename) == path:
            return path
        _root.removeHandler(current)
        current.close()
    handler = _LogFile(path)
    handler.setFormatter(logging.Formatter(FORMAT))
    _root.addHandler(handler)
    _root.setLevel(logging.INFO)
    _root.propagate = False
    return path


def current_log_path() -> Path | None:
    """Where warnings go now (None before `log_to`)."""
    handler = _file_handler()
    return Path(handler.baseFilename) if handler is not None else None


def get_logger(name: str) -> logging.Logger:
    """The logger of one part of zeph ("compaction", "chat", …)."""
    return logging.getLogger(f"zeph.{name}")
