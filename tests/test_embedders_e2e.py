"""Each offline embedder through the real `zeph`: the config selects it, the import and `zeph memory reindex`
store its vectors under its own model, and recall finds by meaning alone (the vector leg) what shares no word
with the question. Switching embedders leaves the other's vectors alone and `zeph memory reindex` fills in the
new one's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_helpers import assert_one_line_error, db_rows, err, out, run_zeph

MODELS = {"minilm": "minilm/all-MiniLM-L6-v2-int8", "wordllama": "wordllama/l2_supercat_256"}
HISTORY = [
    ("family", "user", "My sister Ana adopted a golden retriever puppy named Biscuit."),
    ("family", "assistant", "Biscuit is a lovely name for a golden retriever."),
    ("work", "user", "The staging database listens on port 6543 behind pgbouncer."),
    ("work", "assistant", "Noted: staging Postgres on 6543 through pgbouncer."),
    ("trip", "user", "We booked the Lisbon flight TP1234 for the 14th of June."),
    ("trip", "assistant", "Flight TP1234 to Lisbon on June 14th, noted."),
]
QUESTION = "what kind of dog did her sibling get?"  # no word in common with the history


def _config(tmp_path: Path, embedder: str) -> dict[str, str]:
    path = tmp_path / f"{embedder}.toml"
    path.write_text(f'[memory]\nembedder = "{embedder}"\n')
    return {"ZEPH_CONFIG": str(path)}


def _import(tmp_path: Path, env: dict[str, str]) -> None:
    source = tmp_path / "history.jsonl"
    source.write_text("".join(json.dumps({"session": s, "role": r, "content": c}) + "\n" for s, r, c in HISTORY))
    imported = run_zeph("sessions", "import", str(source), env=env)
    assert imported.returncode == 0, err(imported)


def _vectors() -> dict[str, int]:
    return {row["model"]: row["n"] for row in db_rows("select model, count(*) as n from message_vectors group by model")}


def _recall(env: dict[str, str]) -> list[dict]:
    result = run_zeph("recall", "--json", QUESTION, env=env)
    assert result.returncode == 0, err(result)
    return json.loads(out(result))


@pytest.mark.parametrize("embedder", ["minilm", "wordllama"])
def test_the_configured_embedder_indexes_and_recalls_by_meaning(tmp_path, embedder):
    env = _config(tmp_path, embedder)
    _import(tmp_path, env)  # the import embeds as `zeph memory reindex` does
    assert _vectors() == {MODELS[embedder]: len(HISTORY)}
    reindexed = run_zeph("memory", "reindex", env=env)
    assert reindexed.returncode == 0, err(reindexed)
    assert f"indexed 0 messages with embedded {MODELS[embedder]} (offline)" in out(reindexed)
    hits = _recall(env)
    assert hits and hits[0]["text"] == HISTORY[0][2] and hits[0]["legs"] == ["vector"], hits
    shown = run_zeph("config", "show", env=env)
    line = next(line for line in out(shown).splitlines() if line.startswith("memory.embedder "))
    assert line.endswith(f'= "{embedder}"  # file'), line


def test_switching_embedders_reindexes_for_the_new_one_and_keeps_the_other(tmp_path):
    wordllama, minilm = _config(tmp_path, "wordllama"), _config(tmp_path, "minilm")
    _import(tmp_path, wordllama)
    assert _vectors() == {MODELS["wordllama"]: len(HISTORY)}
    # the default embedder now: none of the history has its vectors, and recall says so
    hint = run_zeph("recall", QUESTION)
    assert f"{len(HISTORY)} stored messages have no vector yet" in err(hint), err(hint)
    reindexed = run_zeph("memory", "reindex")
    assert reindexed.returncode == 0, err(reindexed)
    assert f"indexed {len(HISTORY)} messages with embedded {MODELS['minilm']} (offline)" in out(reindexed)
    assert _vectors() == {MODELS["wordllama"]: len(HISTORY), MODELS["minilm"]: len(HISTORY)}
    for env in (minilm, wordllama, {}):
        hits = _recall(env)
        assert hits and hits[0]["text"] == HISTORY[0][2] and "vector" in hits[0]["legs"], hits
    # --all drops and rebuilds the selected embedder's vectors only
    again = run_zeph("memory", "reindex", "--all", env=wordllama)
    assert again.returncode == 0, err(again)
    assert f"dropped {len(HISTORY)} vectors of {MODELS['wordllama']}" in err(again)
    assert _vectors() == {MODELS["wordllama"]: len(HISTORY), MODELS["minilm"]: len(HISTORY)}


def test_an_unknown_embedder_is_one_error_line_naming_the_choices(tmp_path):
    result = run_zeph("memory", "reindex", env={"ZEPH_MEMORY_EMBEDDER": "potion"})
    first = assert_one_line_error(result, 2, "ZEPH_MEMORY_EMBEDDER")
    assert "minilm" in first and "wordllama" in first
    result = run_zeph("memory", "reindex", env=_config(tmp_path, "potion-base-8M"))
    first = assert_one_line_error(result, 2, "memory.embedder")
    assert "minilm" in first and "wordllama" in first
