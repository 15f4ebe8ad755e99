"""The debug dump: provider requests, responses and compaction results as numbered JSON files.

Invariant: every file is named `{id:04}-{kind}.json` with one counter shared by
all kinds that continues after the highest number already in the directory, so
no run overwrites another; writes are atomic and never raise — the first
failure is kept in `problem` and turns the dump off.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..atomic_file import write_atomically
from ..messages import Message, ToolCallPart, ToolSpec, Usage, part_to_dict

if TYPE_CHECKING:
    from ..context.probe.run import ProbeResult
    from ..context.report import ContextReport
    from ..providers.base import ChatRequest

_NUMBERED = re.compile(r"(\d+)-")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def message_to_dict(message: Message) -> dict[str, Any]:
    return {"role": message.role, "parts": [part_to_dict(p) for p in message.parts]}


def tool_spec_to_dict(spec: ToolSpec) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description, "parameters": spec.parameters}


def request_record(
    request: ChatRequest, *, provider: str, model: str, report: ContextReport | None = None
) -> dict[str, Any]:
    """The `{id:04}-request.json` shape: the request exactly as the provider receives it."""
    return {
        "provider": provider,
        "model": model,
        "created_at": _now(),
        "messages": [message_to_dict(m) for m in request.messages],
        "tools": [tool_spec_to_dict(t) for t in request.tools],
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "stream": request.stream,
        "context_window": request.context_window,
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

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory).expanduser()
        self.problem: str | None = None
        self._last_id: int | None = None  # read from the directory on the first write

    def request(
        self, request: ChatRequest, *, provider: str, model: str, report: ContextReport | None = None
    ) -> int | None:
        """Dump one provider request; its id numbers the matching `response`."""
        return self._write_next("request", lambda: request_record(request, provider=provider, model=model, report=report))

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
        record = response_record(id, text=text, tool_calls=tool_calls, usage=usage, stop_reason=stop_reason, error=error)
        self._write(f"{id:04}-response.json", record)

    def probe(self, result: ProbeResult) -> int | None:
        """Dump one compaction probe result, in exactly `ProbeResult.to_dict()`'s shape."""
        return self._write_next("compaction-probe", result.to_dict)

    def compaction(self, record: dict[str, Any]) -> int | None:
        """Dump one compaction as the caller describes it (kind, tokens before/after, method, summary)."""
        return self._write_next("compaction", lambda: dict(record))

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

    def _write(self, name: str, record: dict[str, Any]) -> bool:
        try:
            data = json.dumps(record, indent=2, ensure_ascii=False, default=str) + "\n"
            payload = data.encode("utf-8", errors="replace")  # lone surrogates from undecodable input
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
