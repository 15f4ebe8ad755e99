"""Provider-neutral conversation values and stream events.

Invariant: this module imports nothing from the package and does no I/O; every
other layer speaks in these types, and adapters translate them to and from the
wire. `ReplyBuilder` is the one place where streamed deltas are accumulated.
An image travels as an `ImagePart` (its MIME type and base64 data, never decoded
here), in a user message's parts or in a tool result's `images`; a message's
`content` is its text only, and a part without images serializes exactly as it
did before images existed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, Union

Role = Literal["system", "context", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "context", "user", "assistant", "tool")


@dataclass(frozen=True)
class TextPart:
    """Text in a message."""
    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True)
class ImagePart:
    """An image in a message: its MIME type and its bytes, base64-encoded (as the wire APIs take them)."""
    mime_type: str
    data: str
    type: Literal["image"] = "image"

    @property
    def size(self) -> int:
        """The image's size in bytes (decoded), read from the base64 text's length."""
        return base64_size(self.data)


def base64_size(data: str) -> int:
    """Bytes of base64 `data` once decoded, from its length (without decoding it)."""
    data = data.strip()
    return max(len(data) * 3 // 4 - (len(data) - len(data.rstrip("="))), 0)


@dataclass(frozen=True)
class ToolCallPart:
    """A tool call the model made: its id, the tool's name and the parsed arguments."""
    id: str
    name: str
    arguments: dict[str, Any]
    type: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True)
class ToolResultPart:
    """What a tool returned for one call, matched to it by `tool_call_id`."""
    tool_call_id: str
    content: str
    name: str = ""
    is_error: bool = False
    type: Literal["tool_result"] = "tool_result"
    images: tuple[ImagePart, ...] = ()


Part = Union[TextPart, ImagePart, ToolCallPart, ToolResultPart]


def _image_to_dict(image: ImagePart) -> dict[str, Any]:
    return {"type": "image", "mime_type": image.mime_type, "data": image.data}


def _image_from_dict(data: dict[str, Any]) -> ImagePart:
    return ImagePart(str(data.get("mime_type", "")), str(data.get("data", "")))


def part_to_dict(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        return _image_to_dict(part)
    if isinstance(part, ToolCallPart):
        return {"type": "tool_call", "id": part.id, "name": part.name, "arguments": part.arguments}
    stored = {
        "type": "tool_result",
        "tool_call_id": part.tool_call_id,
        "name": part.name,
        "content": part.content,
        "is_error": part.is_error,
    }
    if part.images:
        stored["images"] = [_image_to_dict(i) for i in part.images]
    return stored


def part_from_dict(data: dict[str, Any]) -> Part:
    kind = data.get("type")
    if kind == "text":
        return TextPart(str(data.get("text", "")))
    if kind == "image":
        return _image_from_dict(data)
    if kind == "tool_call":
        return ToolCallPart(str(data["id"]), str(data["name"]), dict(data.get("arguments") or {}))
    if kind == "tool_result":
        return ToolResultPart(
            str(data["tool_call_id"]),
            str(data.get("content", "")),
            name=str(data.get("name", "")),
            is_error=bool(data.get("is_error", False)),
            images=tuple(_image_from_dict(i) for i in data.get("images") or () if isinstance(i, dict)),
        )
    raise ValueError(f"unknown message part type: {kind!r}")


@dataclass(frozen=True)
class Message:
    """One entry of a conversation, independent of any provider's wire format."""

    role: Role
    parts: tuple[Part, ...]

    @classmethod
    def text(cls, role: Role, text: str) -> "Message":
        return cls(role, (TextPart(text),))

    @classmethod
    def system(cls, text: str) -> "Message":
        return cls.text("system", text)

    @classmethod
    def context(cls, text: str) -> "Message":
        return cls.text("context", text)

    @classmethod
    def user(cls, text: str) -> "Message":
        return cls.text("user", text)

    @classmethod
    def assistant(cls, text: str) -> "Message":
        return cls.text("assistant", text)

    @property
    def content(self) -> str:
        """The message's plain text (text parts joined; tool results included)."""
        chunks: list[str] = []
        for part in self.parts:
            if isinstance(part, TextPart):
                chunks.append(part.text)
            elif isinstance(part, ToolResultPart):
                chunks.append(part.content)
        return "".join(chunks)

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def tool_results(self) -> list[ToolResultPart]:
        return [p for p in self.parts if isinstance(p, ToolResultPart)]

    @property
    def images(self) -> list[ImagePart]:
        """Every image the message carries: its own image parts and those inside its tool results."""
        found: list[ImagePart] = []
        for part in self.parts:
            if isinstance(part, ImagePart):
                found.append(part)
            elif isinstance(part, ToolResultPart):
                found.extend(part.images)
        return found

    def parts_json(self) -> str:
        return json.dumps([part_to_dict(p) for p in self.parts], ensure_ascii=False)

    @classmethod
    def from_parts_json(cls, role: Role, parts_json: str | None, content: str = "") -> "Message":
        if not parts_json:
            return cls.text(role, content)
        return cls(role, tuple(part_from_dict(p) for p in json.loads(parts_json)))


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model: name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class Usage:
    """Token counts a provider reported for one reply."""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        """Every token of the request, whether read from a cache or not."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }


# ---- stream events: what a provider adapter yields -------------------------


@dataclass(frozen=True)
class TextDelta:
    """A piece of streamed reply text."""
    text: str


@dataclass(frozen=True)
class ToolCallDelta:
    """A fragment of a tool call; fragments with the same index belong together."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True)
class UsageUpdate:
    """Usage reported by the provider; later updates overwrite non-zero fields."""

    usage: Usage


@dataclass(frozen=True)
class StreamEnd:
    """The end of a streamed reply and why it stopped."""
    stop_reason: str = "stop"


StreamEvent = Union[TextDelta, ToolCallDelta, UsageUpdate, StreamEnd]

# Each wire API's own words for why a reply ended, in one vocabulary.
_STOP_REASONS = {
    "end_turn": "stop",
    "stop": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "max_tokens": "length",
    "length": "length",
    "content_filter": "content_filter",
    "refusal": "content_filter",
}


def normalize_stop_reason(reason: str | None) -> str:
    """stop | tool_calls | length | content_filter (anything else is passed through)."""
    if not reason:
        return "stop"
    return _STOP_REASONS.get(reason, reason)


class MalformedToolCall(ValueError):
    """A tool call whose streamed arguments are not a JSON object."""


@dataclass
class _PendingCall:
    """A streamed tool call still being assembled from its deltas."""
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass
class ReplyBuilder:
    """Accumulates stream events into the assistant message and its usage."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, _PendingCall] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    stop_reason: str | None = None

    @classmethod
    def from_events(cls, events: "list[StreamEvent]") -> "ReplyBuilder":
        builder = cls()
        for event in events:
            builder.add(event)
        return builder

    def add(self, event: StreamEvent) -> None:
        if isinstance(event, TextDelta):
            self.text.append(event.text)
        elif isinstance(event, ToolCallDelta):
            call = self.calls.setdefault(event.index, _PendingCall())
            if event.id:
                call.id = event.id
            if event.name:
                call.name = event.name
            call.arguments += event.arguments
        elif isinstance(event, UsageUpdate):
            u = event.usage
            self.input_tokens = u.input_tokens or self.input_tokens
            self.output_tokens = u.output_tokens or self.output_tokens
            self.cache_read_tokens = u.cache_read_tokens or self.cache_read_tokens
            self.cache_write_tokens = u.cache_write_tokens or self.cache_write_tokens
        elif isinstance(event, StreamEnd):
            self.stop_reason = event.stop_reason

    @property
    def content(self) -> str:
        return "".join(self.text)

    @property
    def usage(self) -> Usage:
        return Usage(self.input_tokens, self.output_tokens, self.cache_read_tokens, self.cache_write_tokens)

    def parsed_tool_calls(self) -> list[tuple[ToolCallPart, str | None]]:
        """Every call, each with the reason its arguments are unusable (None when fine).

        A call whose arguments are not a JSON object keeps its id and name with
        empty arguments, so it can still be answered with an error result.
        """
        parsed: list[tuple[ToolCallPart, str | None]] = []
        for index in sorted(self.calls):
            pending = self.calls[index]
            raw = pending.arguments.strip() or "{}"
            problem: str | None = None
            try:
                arguments = json.loads(raw)
            except json.JSONDecodeError:
                arguments, problem = {}, f"the arguments of {pending.name or 'this call'} are not valid JSON: {raw[:200]!r}"
            if not isinstance(arguments, dict):
                arguments, problem = {}, f"the arguments of {pending.name or 'this call'} must be a JSON object, got {raw[:200]!r}"
            parsed.append((ToolCallPart(pending.id or f"call_{index}", pending.name, arguments), problem))
        return parsed

    def tool_calls(self) -> list[ToolCallPart]:
        calls: list[ToolCallPart] = []
        for index in sorted(self.calls):
            pending = self.calls[index]
            raw = pending.arguments.strip() or "{}"
            try:
                arguments = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise MalformedToolCall(
                    f"tool call {pending.name or index!r} has arguments that are not valid JSON: {raw[:200]!r}"
                ) from exc
            if not isinstance(arguments, dict):
                raise MalformedToolCall(f"tool call {pending.name!r} arguments must be a JSON object, got {raw[:200]!r}")
            calls.append(ToolCallPart(pending.id or f"call_{index}", pending.name, arguments))
        return calls

    def message(self) -> Message:
        parts: list[Part] = []
        if self.text:
            parts.append(TextPart(self.content))
        parts.extend(self.tool_calls())
        return Message("assistant", tuple(parts))
