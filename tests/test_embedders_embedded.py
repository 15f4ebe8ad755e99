"""The embedded embedder: wordllama's own vectors, from its wheel's files, without importing wordllama."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from zeph_cli.features.memory.embedders import embedded
from zeph_cli.features.memory.embedders.base import EmbeddingError
from zeph_cli.features.memory.embedders.embedded import MODEL, EmbeddedEmbedder, shared_embedded, wordllama_folder

pytestmark = pytest.mark.xdist_group("embedders_embedded")  # one worker runs the module (--dist loadgroup): the embedder is loaded once

ROOT = Path(__file__).resolve().parents[1]
TEXTS = [
    "The cat sat on the mat.",
    "How do I rebase a git branch onto main?",
    "def square(x):\n    return x ** 2  # the square",
    "Ünïcödé ✓ 你好 世界 — naïve café",
    "SELECT id, content FROM messages WHERE session_id = ? ORDER BY id",
    "a",
    "word " * 600,
]


@pytest.fixture(scope="module")
def embedder() -> EmbeddedEmbedder:
    return EmbeddedEmbedder()


def test_vectors_equal_wordllamas_own(embedder):
    from wordllama import WordLlama

    reference = WordLlama.load(cache_dir=wordllama_folder(), disable_download=True).embed(TEXTS, norm=True)
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), 256)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, reference, rtol=1e-5, atol=1e-6)


def test_similar_sentences_score_higher_than_unrelated_ones(embedder):
    query, similar, unrelated = embedder.embed(
        [
            "my database migration failed with a locked table error",
            "the sqlite migration broke because the database table was locked",
            "grandma baked an apple pie for the summer picnic",
        ]
    )
    assert float(query @ similar) > float(query @ unrelated) + 0.2


def test_rows_are_unit_length_and_a_text_without_tokens_is_a_zero_row(embedder):
    vectors = embedder.embed(["", "hello world", ""])
    assert not np.isnan(vectors).any()
    assert np.all(vectors[0] == 0) and np.all(vectors[2] == 0)
    assert np.linalg.norm(vectors[1]) == pytest.approx(1.0, abs=1e-5)
    assert embedder.embed([]).shape == (0, 256)


def test_a_long_text_is_embedded_by_its_first_max_chars():
    capped = EmbeddedEmbedder(max_chars=40)
    text = "sqlite migrations and database tables " + "apple pie picnic " * 50
    assert np.array_equal(capped.embed([text]), capped.embed([text[:40]]))
    assert not np.allclose(EmbeddedEmbedder().embed([text]), capped.embed([text]))


def test_a_huge_text_costs_no_more_than_its_cap(embedder):
    huge = "tool output line with numbers 12345\n" * 200_000  # 7 MB
    vector = embedder.embed([huge])
    assert np.array_equal(vector, embedder.embed([huge[: embedded.MAX_CHARS]]))


def test_batches_of_mixed_lengths_equal_texts_embedded_one_by_one(embedder, monkeypatch):
    texts = [("alpha beta " * n).strip() for n in (1, 30, 2, 0, 7, 120, 3)] + TEXTS
    one_by_one = np.vstack([embedder.embed([text]) for text in texts])
    monkeypatch.setattr(embedded, "GATHER_TOKENS", 16)  # many small groups, one text alone past the budget
    monkeypatch.setattr(embedded, "TOKENIZE_BATCH", 3)
    np.testing.assert_allclose(embedder.embed(texts), one_by_one, rtol=1e-6, atol=1e-7)


def test_loading_is_lazy_and_happens_once_across_threads():
    reads: list[int] = []

    class Counting(EmbeddedEmbedder):
        def _read_files(self):
            reads.append(1)
            return super()._read_files()

    fresh = Counting()
    assert not fresh.loaded
    results: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: results.append(fresh.embed(["a shared sentence"]))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fresh.loaded and len(reads) == 1 and len(results) == 8
    assert all(np.array_equal(r, results[0]) for r in results)


def test_missing_files_are_one_line_errors_every_time(tmp_path):
    broken = EmbeddedEmbedder(folder=tmp_path)
    for _ in range(2):
        with pytest.raises(EmbeddingError) as caught:
            broken.embed(["hello"])
        message = str(caught.value)
        assert "\n" not in message and MODEL in message and "l2_supercat_256.safetensors" in message
    assert not broken.loaded


def test_a_damaged_weights_file_is_a_one_line_error(tmp_path):
    (tmp_path / "weights").mkdir()
    (tmp_path / "tokenizers").mkdir()
    (tmp_path / embedded.WEIGHTS_FILE).write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00not json")
    (tmp_path / embedded.TOKENIZER_FILE).write_text((wordllama_folder() / embedded.TOKENIZER_FILE).read_text())
    with pytest.raises(EmbeddingError, match=r"cannot read its files in") as caught:
        EmbeddedEmbedder(folder=tmp_path).load()
    assert "\n" not in str(caught.value)


def test_without_wordllama_installed_the_error_says_to_install_it(tmp_path):
    """A real interpreter whose path holds zeph_cli but not site-packages."""
    code = (
        "from zeph_cli.features.memory.embedders.embedded import EmbeddedEmbedder\n"
        "from zeph_cli.features.memory.embedders.base import EmbeddingError\n"
        "try:\n    EmbeddedEmbedder().embed(['hi'])\n"
        "except EmbeddingError as exc:\n    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r})\n" + code],
        capture_output=True, text=True, timeout=60, env={**os.environ},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().count("\n") == 0
    assert "needs the wordllama package: pip install wordllama" in result.stdout


def test_the_shared_instance_is_one_per_process():
    assert shared_embedded() is shared_embedded()
    assert shared_embedded().model == "wordllama/l2_supercat_256"
