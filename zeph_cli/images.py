"""Images in a conversation: their size, what they cost a model, and the text that stands in for them.

Invariant: pure (no I/O, the image's header is read from its bytes in memory); a model
takes an image only when its `ImagePolicy` says it takes images and the image is one of
the types every vision API accepts (PNG, JPEG, GIF, WebP): anything else reaches the
model as its placeholder, and the token counter counts exactly what reaches it (the
provider family's estimate for an image, the placeholder's text otherwise).

Token estimates, per provider family (the figures each provider documents):
- anthropic: the image is scaled to fit 1568 px on its long edge, then
  width × height / 750 tokens, at most 1,600 (where the service scales it further).
- openai: tiles — fit within 2048 × 2048, then the short side scaled down to 768;
  85 + 170 per 512-px tile (gpt-4o, gpt-4.1, gpt-4.5); gpt-4o-mini 2,833 + 5,667 per
  tile; gpt-5 70 + 140; o1 and o3 75 + 150; patches for gpt-4.1-mini/-nano and o4-mini: 32-px
  patches (at most 1,536) times 1.62, 2.46, 1.72.
- open models (Ollama, compatible servers): LLaVA 2,880 (1.6's most: the image and
  four tiles of 576), Gemma 3 256, Qwen-VL one token per 28 × 28 pixels (at most 1,280);
  any other a fixed 768 tokens an image. A Claude or GPT model behind a compatible
  server (a router) counts as its maker's.
- an image whose size cannot be read counts as the family's largest (Anthropic 1,600,
  OpenAI the 2048 × 768 tiles' figure).
"""

from __future__ import annotations

import base64
import binascii
import io
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache

from .messages import ImagePart, Message, Part, TextPart, ToolResultPart

# What every vision API takes (Anthropic, OpenAI, Ollama): anything else goes as its placeholder.
ACCEPTED_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
MAX_IMAGE_BYTES = 5 * 1024 * 1024  # Anthropic's limit for one image (OpenAI's is larger): one over it is not sent
TEXT_ONLY_REASON = "this model does not take images"

ANTHROPIC, OPENAI, OTHER, NONE = "anthropic", "openai", "other", "none"
ANTHROPIC_LONG_EDGE = 1568
ANTHROPIC_MAX_TOKENS = 1_600
OTHER_IMAGE_TOKENS = 768
LLAVA_MAX_TOKENS = 5 * 576  # LLaVA 1.6: the whole image and up to four tiles, 576 tokens each
GEMMA3_TOKENS = 256
QWEN_VL_MAX_TOKENS = 1_280
# OpenAI tile figures: (model prefix, base tokens, tokens per 512-px tile); longest prefix wins.
_OPENAI_TILES: tuple[tuple[str, int, int], ...] = (
    ("gpt-4o-mini", 2_833, 5_667),
    ("gpt-5", 70, 140),
    ("o1", 75, 150),
    ("o3", 75, 150),
    ("", 85, 170),
)
# Models that count 32-px patches instead: (model prefix, multiplier).
_OPENAI_PATCHES: tuple[tuple[str, float], ...] = (
    ("gpt-4.1-mini", 1.62),
    ("gpt-4.1-nano", 2.46),
    ("o4-mini", 1.72),
)
MAX_PATCHES = 1_536


@dataclass(frozen=True)
class ImagePolicy:
    """Whether the model takes images, and whose estimate counts them (`family`: anthropic, openai,
    other; `none` for a text-only model); `model` picks OpenAI's per-model figures."""

    family: str = NONE
    model: str = ""

    @property
    def vision(self) -> bool:
        return self.family != NONE

    def takes(self, image: ImagePart) -> bool:
        """Whether `image` itself reaches the model (else its placeholder does)."""
        # (the limit on the base64 text, which is what the APIs measure, and a third more than the bytes)
        return self.vision and image.mime_type.lower() in ACCEPTED_TYPES and len(image.data) <= MAX_IMAGE_BYTES

    def tokens(self, image: ImagePart) -> int:
        """The tokens `image` costs this model when it is sent (see the module's estimates)."""
        size = dimensions(image)
        if self.family == ANTHROPIC:
            return anthropic_tokens(size)
        if self.family == OPENAI:
            return openai_tokens(size, self.model)
        return other_tokens(size, self.model)


TEXT_ONLY = ImagePolicy()


def policy_for(kind: str, model: str, vision: bool) -> ImagePolicy:
    """The image policy of a provider kind's model that takes images (`vision`) or not."""
    if not vision or kind == "local":  # the embedded llama.cpp model reads text only
        return TEXT_ONLY
    name = model.strip().lower().rsplit("/", 1)[-1]
    family = {"anthropic": ANTHROPIC, "openai": OPENAI}.get(kind, OTHER)
    if family == OTHER and name.startswith("claude"):
        family = ANTHROPIC  # a Claude model behind a router is counted as Anthropic counts it
    elif family == OTHER and name.startswith(("gpt-", "o1", "o3", "o4")):
        family = OPENAI
    return ImagePolicy(family, name)


@lru_cache(maxsize=256)
def _dimensions(data: str) -> tuple[int, int] | None:
    try:
        raw = base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return None
    import imagesize  # type: ignore[import-untyped]  # reads PNG, JPEG, GIF, WebP (and more) headers

    try:
        width, height = imagesize.get(io.BytesIO(raw))
    except Exception:  # noqa: BLE001 — a header imagesize cannot read: the size is unknown
        return None
    return (width, height) if width > 0 and height > 0 else None


_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF87a", "image/gif"), (b"GIF89a", "image/gif"),
)


def sniff_type(head: bytes) -> str | None:
    """The MIME type of an image models take, from the file's first bytes (None: not one of them)."""
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return next((mime for magic, mime in _MAGIC if head.startswith(magic)), None)


def received_image(mime_type: str, data: str) -> ImagePart:
    """An image as a server sent it, made fit to send: a `data:…;base64,` prefix and whitespace dropped, the
    base64 decoded strictly, and the MIME type read from the image's own first bytes (servers mislabel JPEG
    as PNG; a provider refuses the mismatch, and the stored result would fail every later turn). What cannot
    be decoded, or is not a type models take, keeps the server's type marked unreadable: never sent, only
    its placeholder."""
    text = data.strip()
    if text.startswith("data:") and "," in text:
        text = text.split(",", 1)[1]
    text = "".join(text.split())
    try:
        head = base64.b64decode(text[:64], validate=True)
        sniffed = sniff_type(head)
        if sniffed is not None:
            base64.b64decode(text, validate=True)  # the whole of it, strictly
            return ImagePart(sniffed, text)
    except (binascii.Error, ValueError):
        pass
    return ImagePart(f"{mime_type or 'unknown type'} (unreadable)", text)


def dimensions(image: ImagePart) -> tuple[int, int] | None:
    """(width, height) from the image's header, None when it cannot be read."""
    return _dimensions(image.data)


def anthropic_tokens(size: tuple[int, int] | None) -> int:
    if size is None:
        return ANTHROPIC_MAX_TOKENS
    width, height = size
    scale = min(1.0, ANTHROPIC_LONG_EDGE / max(width, height))
    width, height = max(int(width * scale), 1), max(int(height * scale), 1)
    return min(math.ceil(width * height / 750), ANTHROPIC_MAX_TOKENS)


def openai_tokens(size: tuple[int, int] | None, model: str = "") -> int:
    for prefix, multiplier in _OPENAI_PATCHES:
        if model.startswith(prefix):
            return math.ceil(_patches(size) * multiplier)
    base, per_tile = next((b, t) for prefix, b, t in _OPENAI_TILES if model.startswith(prefix))
    width, height = size if size is not None else (2048, 768)
    fit = min(1.0, 2048 / max(width, height))
    short = min(1.0, 768 / (min(width, height) * fit))
    scale = fit * short
    return base + per_tile * math.ceil(width * scale / 512) * math.ceil(height * scale / 512)


def _patches(size: tuple[int, int] | None) -> int:
    if size is None:
        return MAX_PATCHES
    width, height = size
    patches = math.ceil(width / 32) * math.ceil(height / 32)
    if patches <= MAX_PATCHES:
        return patches
    scale = math.sqrt(MAX_PATCHES * 32 * 32 / (width * height))
    return min(math.ceil(width * scale / 32) * math.ceil(height * scale / 32), MAX_PATCHES)


def tool_image_label(name: str, call_id: str) -> str:
    """What introduces a tool result's image where it cannot sit in the result itself (OpenAI chat)."""
    return f"[image from the result of {name or 'tool'} call {call_id}: tool output, not the user's words]"


def other_tokens(size: tuple[int, int] | None, model: str = "") -> int:
    """Open models (Ollama, compatible servers): their own counts where the family is known, never below what
    they report (LLaVA 1.6 up to 5 × 576, Gemma 3 256, Qwen-VL one token per 28 × 28 pixels up to 1,280),
    else the fixed estimate."""
    if model.startswith(("llava", "bakllava")):
        return LLAVA_MAX_TOKENS
    if model.startswith("gemma3"):
        return GEMMA3_TOKENS
    if model.startswith(("qwen2.5vl", "qwen2.5-vl", "qwen2-vl", "qwen3-vl")):
        if size is None:
            return QWEN_VL_MAX_TOKENS
        width, height = size
        scale = min(1.0, math.sqrt(QWEN_VL_MAX_TOKENS * 28 * 28 / (width * height)))
        return max(min(math.ceil(width * scale / 28) * math.ceil(height * scale / 28), QWEN_VL_MAX_TOKENS), 4)
    return OTHER_IMAGE_TOKENS


def describe(image: ImagePart) -> str:
    """`image/png, 4,035 bytes, 32×32` (without the size when the header cannot be read)."""
    size = dimensions(image)
    shown = f", {size[0]}×{size[1]}" if size else ""
    return f"{image.mime_type or 'unknown type'}, {image.size:,} bytes{shown}"


def placeholder(image: ImagePart, reason: str = "") -> str:
    """The text that stands for an image a model does not see: `[image: image/png, 4,035 bytes, 32×32 — why]`."""
    return f"[image: {describe(image)}{f' — {reason}' if reason else ''}]"


def why_not_sent(image: ImagePart, policy: ImagePolicy) -> str:
    """Why `policy`'s model does not get `image` (for its placeholder)."""
    if not policy.vision:
        return TEXT_ONLY_REASON
    if image.mime_type.lower() not in ACCEPTED_TYPES:
        return "not a type models take (PNG, JPEG, GIF, WebP)"
    return f"over {MAX_IMAGE_BYTES // (1024 * 1024)} MB, too large to send"


def with_placeholders(text: str, images: list[ImagePart] | tuple[ImagePart, ...], reason: str = "") -> str:
    """`text` followed by one placeholder line per image."""
    lines = [placeholder(image, reason) for image in images]
    return "\n".join([text, *lines]) if text and lines else (text or "\n".join(lines))


def for_model(message: Message, policy: ImagePolicy) -> Message:
    """The message as `policy`'s model gets it: each image it does not take becomes its placeholder text
    (a user message's image a text part in its place, a tool result's appended to the result's text)."""
    return _replacing(message, policy.takes, lambda image: why_not_sent(image, policy))


def _replacing(message: Message, takes: Callable[[ImagePart], bool], why: Callable[[ImagePart], str]) -> Message:
    """`message` with each image `takes` refuses replaced by its placeholder (saying `why`)."""
    if not message.images or all(takes(i) for i in message.images):
        return message
    parts: list[Part] = []
    for part in message.parts:
        if isinstance(part, ImagePart) and not takes(part):
            parts.append(TextPart(placeholder(part, why(part))))
        elif isinstance(part, ToolResultPart) and part.images:
            kept = tuple(i for i in part.images if takes(i))
            dropped = [i for i in part.images if not takes(i)]
            content = "\n".join([part.content, *(placeholder(i, why(i)) for i in dropped)])
            parts.append(replace(part, content=content if part.content else content.lstrip("\n"), images=kept))
        else:
            parts.append(part)
    return Message(message.role, tuple(parts))


MAX_IMAGES_PER_REQUEST = 20  # above 20 images Anthropic shrinks each to 2000 px; 100 is its hard limit
MAX_IMAGE_TEXT_PER_REQUEST = 20 * 1024 * 1024  # of base64 text: the request stays well under the APIs' 32 MB


OLDER_REASON = f"an older image, left out: at most {MAX_IMAGES_PER_REQUEST} images go in one request"


def _among(allowed: set[int]) -> Callable[[ImagePart], bool]:
    return lambda image: id(image) in allowed


def newest_images_only(messages: list[Message]) -> list[Message]:
    """`messages` (already as `for_model` made them) with at most MAX_IMAGES_PER_REQUEST images and
    MAX_IMAGE_TEXT_PER_REQUEST of their text, the newest kept: each older one becomes its placeholder. A
    placeholder counts fewer tokens than its image, so the request stays within what was counted."""
    kept, size = 0, 0
    out: list[Message] = []
    for message in reversed(messages):
        if message.images:
            allowed: set[int] = set()
            for image in reversed(message.images):
                if kept < MAX_IMAGES_PER_REQUEST and size + len(image.data) <= MAX_IMAGE_TEXT_PER_REQUEST:
                    kept, size = kept + 1, size + len(image.data)
                    allowed.add(id(image))
            if len(allowed) < len(message.images):
                message = _replacing(message, _among(allowed), lambda image: OLDER_REASON)
        out.append(message)
    return out[::-1]


def as_text(message: Message) -> Message:
    """The message with every image turned into its placeholder (no reason given): what a summarizer reads."""
    if not message.images:
        return message
    parts: list[Part] = []
    for part in message.parts:
        if isinstance(part, ImagePart):
            parts.append(TextPart(placeholder(part)))
        elif isinstance(part, ToolResultPart) and part.images:
            parts.append(replace(part, content=with_placeholders(part.content, part.images), images=()))
        else:
            parts.append(part)
    return Message(message.role, tuple(parts))
