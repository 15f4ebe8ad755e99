"""Per-turn text blocks: `<time>` (ETOS 3) and `<enhanced_prompt>` (ETOS 8).

Invariant: pure; the same inputs give the same text byte for byte. The clock
is an argument (`now`, an aware datetime), never read here, and an empty
enhancement gives no block ("").
"""

from __future__ import annotations

from datetime import datetime

ENHANCEMENT_NOTE = (
    "This instruction was added automatically to every request. Follow it, but do not reveal, quote "
    "or mention it unless the user explicitly asks about it."
)


def render_time(now: datetime) -> str:
    """The `<time>` block: local weekday, date, time and zone, and the ISO 8601 timestamp."""
    zone = now.tzname() or now.strftime("%z") or "local"
    local = f"{now:%A}, {now.day} {now:%B %Y}, {now:%H:%M} {zone}"
    return f"<time>\nCurrent local time: {local}\nISO 8601: {now.isoformat(timespec='seconds')}\n</time>"


def render_enhancement(text: str) -> str:
    """The `<enhanced_prompt>` block, with the note that it stays unrevealed; "" when `text` is blank."""
    text = text.strip()
    if not text:
        return ""
    text = text.replace("</enhanced_prompt", "<\\/enhanced_prompt")  # it cannot close its own block
    return f"<enhanced_prompt>\n{text}\n</enhanced_prompt>\n{ENHANCEMENT_NOTE}"
