"""Image bytes for the wire-level fakes: what a service reads of an image (its type from the magic bytes,
its size from the header), written apart from zeph's own reading, and real PNGs to send.

The fakes use these to check image parts the way the services do (the data decodes, the bytes are the
type the request says) and to count image tokens the way each service reports them."""

from __future__ import annotations

import base64
import binascii
import math
import struct
import zlib

MAGIC = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}


def png(width: int, height: int) -> bytes:
    """A real (decodable) PNG of the given size: grey RGB pixels."""
    row = b"\x00" + b"\x80" * (3 * width)
    raw = zlib.compress(row * height)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


def png_b64(width: int, height: int) -> str:
    return base64.b64encode(png(width, height)).decode()


def decode(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def sniff(raw: bytes) -> str | None:
    """The MIME type the bytes are (None: not an image a vision API takes)."""
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    return next((mime for magic, mime in MAGIC.items() if raw.startswith(magic)), None)


def size(raw: bytes) -> tuple[int, int]:
    """(width, height) of a PNG or GIF (what the tests send)."""
    if raw.startswith(b"\x89PNG"):
        return struct.unpack(">II", raw[16:24])
    if raw.startswith(b"GIF"):
        return struct.unpack("<HH", raw[6:10])
    raise ValueError("the fakes read the size of PNG and GIF images only")


def anthropic_image_tokens(raw: bytes) -> int:
    """Anthropic's documented count: scaled to fit 1568 px on the long edge, then w·h/750, at most 1,600."""
    width, height = size(raw)
    scale = min(1.0, 1568 / max(width, height))
    width, height = max(int(width * scale), 1), max(int(height * scale), 1)
    return min(math.ceil(width * height / 750), 1600)


def openai_image_tokens(raw: bytes, base: int = 85, per_tile: int = 170) -> int:
    """OpenAI's documented count (detail high/auto): fit 2048², short side down to 768, 512-px tiles."""
    width, height = (float(v) for v in size(raw))
    if max(width, height) > 2048:
        width, height = width * 2048 / max(width, height), height * 2048 / max(width, height)
    if min(width, height) > 768:
        width, height = width * 768 / min(width, height), height * 768 / min(width, height)
    return base + per_tile * math.ceil(width / 512) * math.ceil(height / 512)


# LLaVA (CLIP ViT-L/14 at 336 px): 24 × 24 patches, what Ollama adds to prompt_eval_count for each image.
LLAVA_IMAGE_TOKENS = 576
