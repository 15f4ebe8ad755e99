"""The debug dump: provider requests as sent on the wire, responses and compaction results as numbered JSON files.

Invariant: every file is named `{id:04}-{kind}.json` with one counter shared by
all kinds that continues after the highest number already in the directory, so
no run overwrites another (a compaction's subgoal registry is the one text file,
`{id:04}-subgoal-registry.txt`, numbered like the compaction it belongs to); a request file's `wire` is the body the adapter sent
(`ChatRequest.wire_tap`: the HTTP body, or the arguments handed to llama.cpp),
kept apart from zeph's own `context` report, and never a header; every string
written passes through secret redaction and the configured API keys are replaced
wherever they occur, so no file holds a key; writes are atomic and never raise —
the first failure is kept in `problem` and turns the dump off.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from datetime import datetime, UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..atomic_file import write_atomically
from ..messages import ToolCallPart, Usage, part_to_dict
from ..tools.redact import REDACTED, redact_secrets

if TYPE_CHECKING:
    from ..context.probe.run import ProbeResult
    from ..context.report import ContextReport

_NUMBERED = re.compile(r"(\d+)-")
MIN_SECRET_CHARS = 8  # a configured key shorter than this is no secret worth hiding (and would hide words)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def wire_body(body: Any) -> Any:
    """A request body as the dump holds it: sent bytes as the JSON they encode (as text when they do
    not), anything else (the arguments handed to llama.cpp) as it is."""
    if isinstance(body, (bytes, bytearray)):
        text = bytes(body).decode("utf-8", errors="replace")
        try:
            return json.loads(text)
        except ValueError:
            return text
    return body


def request_record(
    *, provider: str, model: str, report: ContextReport | None = None, to: str | None = None, body: Any = None
) -> dict[str, Any]:
    """The `{id:04}-request.json` shape: where the request went and its body exactly as sent (`wire`, null
    until it leaves), and zeph's report of the context it carries (`context`)."""
    return {
        "provider": provider,
        "model": model,
        "created_at": _now(),
        "wire": None if to is None else {"to": to, "body": wire_body(body)},
        "context": report.to_dict() if report is not None else None,
    }


def response_record(
    request_id: int, *, text: str, tool_calls: list[ToolCallPart], usage: Usage, stop_reason: str, error: str | None = None
) -> dict[str, Any]:
    """The `{id:04}-response.json` shape, numbered like the request it answers."""
    return {
        "request_id": request_id,
        "created_at": _now(),
        "text": text,
        "tool_calls": [part_to_dict(c) for c in tool_calls],
        "usage": usage.to_dict(),
        "stop_reason": stop_reason,
        "error": error,
    }


def highest_number(directory: Path) -> int:
    """The largest `NNNN-` file number in `directory` (0 when there is none)."""
    if not directory.is_dir():
        return 0
    numbers = (int(m.group(1)) for entry in os.scandir(directory) if (m := _NUMBERED.match(entry.name)))
    return max(numbers, default=0)


class DebugDump:
    """Numbered JSON files in one directory, created on the first write."""

    def __init__(self, directory: Path | str, secrets: Iterable[str] = ()) -> None:
        self.directory = Path(directory).expanduser()
        self.problem: str | None = None
        self._last_id: int | None = None  # read from the directory on the first write
        # the longest first, so that a key containing another is replaced whole
        self._secrets = sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)
        self._waiting: dict[int, dict[str, Any]] = {}  # request records whose body has not gone out yet

    def request(self, *, provider: str, model: str, report: ContextReport | None = None) -> int | None:
        """Dump one provider request (its `wire` comes with `tap`); its id numbers the matching `response`."""
        record = request_record(provider=provider, model=model, report=report)
        number = self._write_next("request", lambda: record)
        if number is not None:
            self._waiting[number] = record
        return number

    def tap(self, id: int | None) -> Callable[[str, Any], None] | None:
        """The `ChatRequest.wire_tap` for request `id`: the first body it is told (a retry sends the same)
        completes the request's file."""
        if id is None:
            return None

        def sent(to: str, body: Any) -> None:
            record = self._waiting.pop(id, None)
            if record is not None and not self.problem:
                self._write(f"{id:04}-request.json", {**record, "wire": {"to": to, "body": wire_body(body)}})

        return sent

    def response(
        self,
        id: int | None,
        *,
        text: str,
        tool_calls: list[ToolCallPart],
        usage: Usage,
        stop_reason: str,
        error: str | None = None,
    ) -> None:
        """Dump the reply to request `id` (nothing when the request was not dumped)."""
        if id is None or self.problem:
            return
        self._waiting.pop(id, None)  # a request that never went out stays `wire: null`
        record = response_record(id, text=text, tool_calls=tool_calls, usage=usage, stop_reason=stop_reason, error=error)
        self._write(f"{id:04}-response.json", record)

    def probe(self, result: ProbeResult) -> int | None:
        """Dump one compaction probe result, in exactly `ProbeResult.to_dict()`'s shape."""
        return self._write_next("compaction-probe", result.to_dict)

    def compaction(self, record: dict[str, Any]) -> int | None:
        """Dump one compaction as the caller describes it (kind, tokens before/after, method, summary); its
        `subgoal_registry` text, when there is one, goes to `{id:04}-subgoal-registry.txt` beside it."""
        registry = record.get("subgoal_registry")
        number = self._write_next("compaction", lambda: {k: v for k, v in record.items() if k != "subgoal_registry"})
        if number is not None and isinstance(registry, str):
            self._write_text(f"{number:04}-subgoal-registry.txt", registry)
        return number

    # ---- writing ------------------------------------------------------------------

    def _write_next(self, kind: str, build) -> int | None:
        if self.problem:
            return None
        try:
            if self._last_id is None:
                self._last_id = highest_number(self.directory)
        except OSError as exc:
            self._fail(exc)
            return None
        number = self._last_id + 1
        if not self._write(f"{number:04}-{kind}.json", build()):
            return None
        self._last_id = number
        return number

    def _scrubbed(self, value: Any) -> Any:
        """`value` with every string in it, at any depth, redacted and stripped of the configured keys."""
        if isinstance(value, str):
            for secret in self._secrets:
                value = value.replace(secret, REDACTED)
            return redact_secrets(value)[0]
        if isinstance(value, dict):
            return {key: self._scrubbed(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._scrubbed(item) for item in value]
        return value

    def _write(self, name: str, record: dict[str, Any]) -> bool:
        try:
            data = json.dumps(self._scrubbed(record), indent=2, ensure_ascii=False, default=str) + "\n"
        except ValueError as exc:
            self._fail(exc)
            return False
        return self._save(name, data)

    def _write_text(self, name: str, text: str) -> bool:
        return self._save(name, self._scrubbed(text))

    def _save(self, name: str, text: str) -> bool:
        """Write `text` (scrubbed already) as the file `name`; False when the dump failed."""
        try:
            payload = text.encode("utf-8", errors="replace")  # lone surrogates from undecodable input
            self.directory.mkdir(parents=True, exist_ok=True)
            write_atomically(self.directory / name, payload)
        except (OSError, ValueError) as exc:
            self._fail(exc)
            return False
        return True

    def _fail(self, exc: Exception) -> None:
        if isinstance(exc, (FileExistsError, NotADirectoryError)):
            reason = "a file is in the way of the directory"
        else:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        self.problem = f"debug dump stopped: cannot write to {self.directory}: {reason}"
