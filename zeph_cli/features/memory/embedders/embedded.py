"""The default embedder: wordllama's static token embeddings, offline, from the files in its wheel.

Invariant: the same vectors as `WordLlama.load(...).embed(texts, norm=True)` (tokens
without special tokens or truncation, ids clipped to the table, the mean of their
rows, L2-normalized) for every text of at most `max_chars` characters; a longer
text is embedded by its first `max_chars`, and a text with no tokens is a zero
row, never NaN. The wordllama package itself is never imported (it costs ~0.6 s):
only its weight and tokenizer files are read, on the first `load()` or `embed()`,
once per instance, under a lock. Importing this module costs nothing beyond the
standard library; numpy, safetensors and tokenizers are imported by `load()`.
"""

from __future__ import annotations

import importlib.util
import itertools
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base import EmbeddingError, LoadOnce

if TYPE_CHECKING:
    import numpy as np

MODEL = "wordllama/l2_supercat_256"
DIMENSIONS = 256
WEIGHTS_FILE = Path("weights") / "l2_supercat_256.safetensors"
TOKENIZER_FILE = Path("tokenizers") / "l2_supercat_tokenizer_config.json"
TENSOR_KEY = "embedding.weight"

# A text past this many characters is embedded by its beginning: one huge tool
# output must not cost seconds or hundreds of MB. (A mean of token vectors over
# 8,000 characters already says what the text is about.)
MAX_CHARS = 8000
# Texts are tokenized this many at a time, and their token rows gathered at most
# this many at a time (float32 × 256: 16 MB), whatever the batch looks like.
TOKENIZE_BATCH = 512
GATHER_TOKENS = 16384


def wordllama_folder() -> Path:
    """The installed wordllama package's folder, found without importing it."""
    try:
        spec = importlib.util.find_spec("wordllama")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(
            f"the embedded embedder ({MODEL}) needs the wordllama package: pip install wordllama "
            "(or set llm.embedding_model for an openai, ollama or compatible provider)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


class EmbeddedEmbedder:
    """wordllama's l2_supercat_256 model, loaded lazily from `folder` (default: the installed package)."""

    model = MODEL
    dimensions = DIMENSIONS

    def __init__(self, folder: Path | str | None = None, *, max_chars: int = MAX_CHARS) -> None:
        self._folder = Path(folder) if folder is not None else None
        self.max_chars = max_chars
        self._files: LoadOnce[tuple[np.ndarray, Any]] = LoadOnce(self._read_files)
        self._table: np.ndarray | None = None  # (vocabulary + 1, 256) float16, as shipped, plus a zero row
        self._tokenizer: Any = None

    @property
    def loaded(self) -> bool:
        return self._files.done

    def load(self) -> None:
        """Read the weights and the tokenizer (once; safe to call from any thread, e.g. to warm up
        in the background). A failure raises `EmbeddingError` now and on every later call."""
        self._table, self._tokenizer = self._files.get()

    def _read_files(self) -> tuple[np.ndarray, Any]:
        folder = self._folder or wordllama_folder()
        weights, tokenizer_file = folder / WEIGHTS_FILE, folder / TOKENIZER_FILE
        for path in (weights, tokenizer_file):
            if not path.is_file():
                raise EmbeddingError(f"the embedded embedder ({MODEL}) is missing {path}: reinstall wordllama")
        try:
            import numpy as np
            from safetensors import safe_open
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingError(f"the embedded embedder ({MODEL}) cannot import {exc.name}: pip install wordllama") from exc
        try:
            with safe_open(str(weights), framework="np") as tensors:
                table = tensors.get_tensor(TENSOR_KEY)
            tokenizer = Tokenizer.from_file(str(tokenizer_file))
        except Exception as exc:  # a damaged file: its library's own reason, on one line
            reason = " ".join(str(exc).split())[:200] or type(exc).__name__
            raise EmbeddingError(f"the embedded embedder ({MODEL}) cannot read its files in {folder}: {reason}") from exc
        if table.ndim != 2 or table.shape[1] != DIMENSIONS:
            raise EmbeddingError(
                f"the embedded embedder ({MODEL}) found a {table.shape} table in {weights}, expected (n, {DIMENSIONS})"
            )
        tokenizer.no_padding()
        tokenizer.no_truncation()
        # One zero row past the vocabulary: what padding positions gather.
        return np.concatenate([table, np.zeros((1, DIMENSIONS), dtype=table.dtype)]), tokenizer

    def embed(self, texts: list[str]) -> np.ndarray:
        """One unit float32 row per text, in order (a zero row for a text without tokens)."""
        self.load()
        import numpy as np

        from .rows import unit_rows

        token_ids: list[list[int]] = []
        for start in range(0, len(texts), TOKENIZE_BATCH):
            chunk = [text[: self.max_chars] for text in texts[start : start + TOKENIZE_BATCH]]
            encodings = self._tokenizer.encode_batch(chunk, add_special_tokens=False)
            token_ids.extend(encoding.ids for encoding in encodings)
        means = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        for group in _padded_groups([len(ids) for ids in token_ids], GATHER_TOKENS):
            means[group] = self._mean_rows([token_ids[i] for i in group])
        return unit_rows(means)

    def _mean_rows(self, token_ids: list[list[int]]) -> np.ndarray:
        """The mean table row of each (non-empty) id list: padded to the longest with the
        table's appended zero row, gathered, summed and divided, as wordllama pools."""
        import numpy as np

        lengths = np.fromiter((len(ids) for ids in token_ids), dtype=np.int64, count=len(token_ids))
        flat = np.fromiter(itertools.chain.from_iterable(token_ids), dtype=np.int64, count=int(lengths.sum()))
        table = self._table
        assert table is not None, "embed() loads the table first"
        zero_row = table.shape[0] - 1
        np.clip(flat, 0, zero_row - 1, out=flat)
        padded = np.full((len(token_ids), int(lengths.max())), zero_row, dtype=np.int64)
        text_of_token = np.repeat(np.arange(len(token_ids)), lengths)
        position = np.arange(flat.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        padded[text_of_token, position] = flat
        rows = table[padded].astype(np.float32)
        return np.sum(rows, axis=1, dtype=np.float32) / lengths[:, None].astype(np.float32)


def _padded_groups(lengths: list[int], budget: int) -> list[list[int]]:
    """Indexes of the texts with tokens, shortest first, grouped so that each group padded to
    its longest holds at most `budget` tokens (a longer text alone): little padding, bounded memory."""
    groups: list[list[int]] = []
    current: list[int] = []
    for index in sorted((i for i, n in enumerate(lengths) if n), key=lengths.__getitem__):
        if current and (len(current) + 1) * lengths[index] > budget:
            groups.append(current)
            current = []
        current.append(index)
    if current:
        groups.append(current)
    return groups


_shared: EmbeddedEmbedder | None = None
_shared_lock = threading.Lock()


def shared_embedded() -> EmbeddedEmbedder:
    """The process's one embedded embedder, so its 16 MB table is read once."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = EmbeddedEmbedder()
        return _shared
