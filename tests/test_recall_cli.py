"""`zeph recall` through the real executable, on an imported history: it prints exactly what a real turn
recalls (the entries of the recall block the fake server receives, the ids `zeph context` reports), one
JSON line per query for a set on standard input, and bad input as one-line errors. Nothing here pins a
ranking: the lists are compared with what the turn recalled, and only unambiguous evidence is looked for."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.cli_helpers import assert_one_line_error, err, out, run_zeph
from tests.conftest import isolate
from tests.fakes import openai_wire

pytestmark = pytest.mark.xdist_group("recall_cli")  # one worker runs the module (--dist loadgroup): the history is imported once

RECALL = "[semantic recall]"

HISTORY = [
    ("trip", "user", "We booked the Lisbon flight TP1234 for the 14th of June.", "t1"),
    ("trip", "assistant", "Noted: flight TP1234 to Lisbon on June 14th.", "t2"),
    ("trip", "user", "The hotel is the Memmo Alfama, check-in after 3 pm.", "t3"),
    ("trip", "assistant", "Memmo Alfama, check-in from 15:00. Anything else for the trip?", "t4"),
    ("food", "user", "My sister Maya is allergic to peanuts, keep them out of every recipe.", "f1"),
    ("food", "assistant", "Understood: no peanuts in any recipe for Maya.", "f2"),
    ("food", "user", "Tonight we are cooking a green curry with tofu for six people.", "f3"),
    ("food", "assistant", "For six, use two cans of coconut milk and 600 g of tofu.", "f4"),
    ("work", "user", "The staging database listens on port 6543 behind pgbouncer.", "w1"),
    ("work", "assistant", "Got it: staging Postgres on 6543 via pgbouncer.", "w2"),
    ("work", "user", "Deploys to production need two approvals in the release channel.", "w3"),
    ("work", "assistant", "Two approvals in the release channel before a production deploy.", "w4"),
    ("chat", "user", "Thanks, that was helpful!", "c1"),
    ("chat", "assistant", "You're welcome!", "c2"),
]
QUERIES = ["Which flight did we book to Lisbon?", "TP1234", "what is my sister allergic to?", "pgbouncer port"]
EVIDENCE = {"TP1234": "t1", "pgbouncer port": "w1"}  # one message holds these words: any ranker finds it
HIT_FIELDS = {"rank", "session", "session_title", "message_id", "external_id", "role", "time", "text", "score",
              "relevance", "legs", "entry"}


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    """HISTORY imported once by the real `zeph sessions import`, under a test's isolation: the data dir."""
    root = tmp_path_factory.mktemp("imported")
    source = root / "history.jsonl"
    lines = [{"session": s, "role": r, "content": c, "id": i, "timestamp": f"2024-03-{n // 4 + 1:02d}T10:{n:02d}:00Z"}
             for n, (s, r, c, i) in enumerate(HISTORY)]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        isolate(patch, root)
        result = run_zeph("sessions", "import", str(source))
    assert result.returncode == 0, err(result)
    return root / "zeph-home"


@pytest.fixture
def history(imported: Path) -> None:
    """This test's data dir is a copy of the imported history's (a test's turns stay its own)."""
    shutil.copytree(imported, os.environ["ZEPH_HOME"])


def _recall(query: str, *args: str, env: dict[str, str]) -> list[dict]:
    result = run_zeph("recall", "--json", *args, query, env=env)
    assert result.returncode == 0, err(result)
    return json.loads(out(result))


def _block_entries(request) -> list[str]:
    blocks = [m["content"] for m in request.json["messages"] if m["role"] == "system" and m["content"].startswith(RECALL)]
    assert len(blocks) <= 1
    return blocks[0].splitlines()[1:] if blocks else []


def test_recall_prints_the_list_a_real_turn_recalls(history, fake_server, compatible):
    for query in QUERIES:
        printed = _recall(query, env=compatible)
        fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Noted."])))
        asked = run_zeph("ask", query, env=compatible)
        assert asked.returncode == 0, err(asked)
        # the recall block the model got holds the entries zeph recall printed, in its order
        sent = _block_entries(fake_server.requests_to("/v1/chat/completions")[-1])
        assert sent == [hit["entry"] for hit in printed], query
        # zeph context reports the same messages for the turn's message
        context = json.loads(out(run_zeph("context", "--json", env=compatible)))
        assert context["context"]["recalled_ids"] == [hit["message_id"] for hit in printed], query
        # and so does zeph recall as the next turn of that session (its own messages excluded)
        assert _recall(query, "--session", str(context["session"]), env=compatible) == printed, query
        if query in EVIDENCE:
            assert EVIDENCE[query] in [hit["external_id"] for hit in printed], (query, printed)
    # imported messages carry the source's id; the ones zeph wrote itself (the turns above) none
    batch = run_zeph("recall", input="\n".join(QUERIES) + "\n", env=compatible)  # one JSON line per query
    assert batch.returncode == 0, err(batch)
    later = [hit for line in out(batch).splitlines() for hit in json.loads(line)["hits"]]
    assert later and all((hit["external_id"] is None) == (hit["session"] > 4) for hit in later)


def test_a_set_of_queries_runs_in_one_process_one_json_line_each(history, compatible):
    single = {query: _recall(query, env=compatible) for query in QUERIES}
    batch = run_zeph("recall", input="\n".join([*QUERIES, "", "hello there"]) + "\n", env=compatible)
    assert batch.returncode == 0, err(batch)
    assert "\x1b" not in err(batch)  # no progress bar on a pipe
    rows = [json.loads(line) for line in out(batch).splitlines()]
    assert [row["query"] for row in rows] == [*QUERIES, "", "hello there"]
    for query, row in zip(QUERIES, rows):
        assert row["hits"] == single[query], query
    assert rows[len(QUERIES)]["hits"] == [] and rows[len(QUERIES)]["route"] is None


def test_hits_carry_where_they_come_from(history, compatible):
    hits = _recall("TP1234", env=compatible)
    assert hits and all(set(hit) == HIT_FIELDS for hit in hits)
    evidence = next(hit for hit in hits if hit["external_id"] == "t1")
    assert evidence["role"] == "user" and evidence["time"] == "2024-03-01T10:00:00.000000+00:00"
    assert evidence["text"] == HISTORY[0][2] and evidence["session_title"] == HISTORY[0][2][:60].rstrip()
    assert evidence["legs"] and set(evidence["legs"]) <= {"vector", "keyword"}
    assert [hit["rank"] for hit in hits] == list(range(1, len(hits) + 1))
    assert len(_recall("Lisbon flight hotel trip", "-k", "1", env=compatible)) <= 1
    shown = run_zeph("recall", "TP1234", env=compatible)
    assert shown.returncode == 0 and "· id t1 ·" in out(shown) and HISTORY[0][2] in out(shown)


def test_nothing_recalled_and_bad_input(history, compatible):
    none = run_zeph("recall", "zyzzyva quux", env=compatible)
    assert none.returncode == 1 and "nothing recalled" in err(none) and out(none) == ""
    assert json.loads(out(run_zeph("recall", "--json", "zyzzyva quux", env=compatible))) == []
    assert_one_line_error(run_zeph("recall", "-k", "101", "x", env=compatible), 2, "option -k", "recall_limit")
    assert_one_line_error(run_zeph("recall", "--session", "99", "x", env=compatible), 1, "no session with id 99")
    assert_one_line_error(run_zeph("recall", "  ", env=compatible), 2, "the query is empty")
    off = {**compatible, "ZEPH_MEMORY_SEMANTIC_ENABLED": "false"}
    assert_one_line_error(run_zeph("recall", "TP1234", env=off), 1, "semantic recall is off")


def test_any_script_and_a_repeated_question_through_zeph(tmp_path, compatible):
    """A Russian question loads the embedder and recalls the Russian fact by both legs; the answer that takes
    a repeated question's place says so in its legs and carries its own relevance."""
    question = "How do I publish a release of the parser library?"
    lines = [
        {"session": "db", "role": "user", "content": "База данных слушает порт 5433 за pgbouncer.", "id": "r1"},
        {"session": "db", "role": "assistant", "content": "Понял: порт 5433.", "id": "r2"},
        {"session": "db", "role": "user", "content": "Спасибо, всё работает!", "id": "r3"},
        {"session": "rel", "role": "user", "content": question, "id": "q1"},
        {"session": "rel", "role": "assistant", "content": "Run make dist, then push a signed tag like v1.4.0.", "id": "a1"},
    ]
    source = tmp_path / "history.jsonl"
    source.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    assert run_zeph("sessions", "import", str(source)).returncode == 0
    russian = _recall("Какой порт у базы данных?", env=compatible)
    assert russian and russian[0]["external_id"] == "r1" and russian[0]["legs"] == ["vector", "keyword"], russian
    repeated = _recall(question, env=compatible)
    assert repeated[0]["external_id"] == "a1" and repeated[0]["legs"] == ["vector", "answer"], repeated
    assert 0 < repeated[0]["relevance"] < 0.9
    assert "q1" not in [hit["external_id"] for hit in repeated]
