"""Memory end to end through the real `zeph`: recall across sessions with the embedded embedder
(no embedding server configured), keyword-routed queries, long-term memory scopes."""

from __future__ import annotations

import json

from tests.cli_helpers import db_rows, err, out, run_zeph
from tests.fakes import openai_wire

RECALL = "[semantic recall]"


def _reply(server, text: str = "Noted.") -> None:
    server.queue(openai_wire.stream_response(openai_wire.text_chunks([text])))


def _sent(request) -> list[dict]:
    return request.json["messages"]


def _recall_blocks(request) -> list[str]:
    return [m["content"] for m in _sent(request) if m["role"] == "system" and m["content"].startswith(RECALL)]


def _chat_requests(server):
    return server.requests_to("/v1/chat/completions")


def test_a_fact_from_one_session_is_recalled_in_a_fresh_one(fake_server, compatible):
    _reply(fake_server, "Got it, port 6543 for staging.")
    told = run_zeph("ask", "For the record: the staging database listens on port 6543 behind pgbouncer.", env=compatible)
    assert told.returncode == 0, err(told)
    # the fact was embedded after the reply, by the embedded model (nothing was asked of the server for it)
    vectors = db_rows("select model, conversation_id from message_vectors")
    assert vectors and all(v["model"] == "minilm/all-MiniLM-L6-v2-int8" for v in vectors)
    assert not [r.path for r in fake_server.requests if "embed" in r.path]

    _reply(fake_server, "Port 6543.")
    asked = run_zeph("ask", "Which port does the staging database listen on?", env=compatible)
    assert asked.returncode == 0, err(asked)
    blocks = _recall_blocks(_chat_requests(fake_server)[-1])
    assert len(blocks) == 1 and "6543" in blocks[0], _sent(_chat_requests(fake_server)[-1])
    # the recall block sits after the prompt layers and before the conversation
    roles = [m["role"] for m in _sent(_chat_requests(fake_server)[-1])]
    assert roles[-1] == "user" and roles.index("user") > max(i for i, m in enumerate(_sent(_chat_requests(fake_server)[-1])) if m["content"].startswith(RECALL))

    # an unrelated short query recalls nothing
    _reply(fake_server, "Hi!")
    hello = run_zeph("ask", "hello there", env=compatible)
    assert hello.returncode == 0, err(hello)
    assert _recall_blocks(_chat_requests(fake_server)[-1]) == []

    # a one-word query finds it through both legs
    _reply(fake_server, "ok")
    keyword = run_zeph("ask", "pgbouncer", env=compatible)
    assert keyword.returncode == 0, err(keyword)
    blocks = _recall_blocks(_chat_requests(fake_server)[-1])
    assert len(blocks) == 1 and "6543" in blocks[0]

    # recall is never stored
    assert db_rows("select count(*) as n from messages where content like '%semantic recall%'")[0]["n"] == 0
    assert len(db_rows("select id from conversations")) == 4

    # zeph context shows what the session's last turn recalled
    shown = run_zeph("context", "--json", env=compatible)
    assert shown.returncode == 0, err(shown)
    report = json.loads(out(shown))
    assert any(line.startswith("recall: route hybrid (sqlite+fts5)") for line in report["memory"]), report["memory"]
    assert report["context"]["recalled_ids"]


def test_recall_off_sends_no_recall(fake_server, compatible):
    env = {**compatible, "ZEPH_MEMORY_SEMANTIC_ENABLED": "false"}
    _reply(fake_server)
    assert run_zeph("ask", "The deploy key lives in vault path secret/deploy.", env=env).returncode == 0
    _reply(fake_server)
    assert run_zeph("ask", "Where does the deploy key live in vault?", env=env).returncode == 0
    assert _recall_blocks(_chat_requests(fake_server)[-1]) == []
    assert db_rows("select count(*) as n from message_vectors")[0]["n"] == 0


def _memory_blocks(request) -> list[str]:
    return [m["content"] for m in _sent(request) if m["role"] == "system" and m["content"].startswith("<memory>")]


def test_reindex_backfills_messages_stored_without_vectors(fake_server, compatible):
    off = {**compatible, "ZEPH_MEMORY_SEMANTIC_ENABLED": "false"}
    for text in ("The release branch is cut every second Tuesday.", "Our CI runs on self-hosted runners."):
        _reply(fake_server)
        assert run_zeph("ask", text, env=off).returncode == 0
    assert db_rows("select count(*) as n from message_vectors")[0]["n"] == 0
    hint = json.loads(out(run_zeph("context", "--json", env=compatible)))["memory"]
    assert hint[0].startswith("recall index: 4 stored messages have no vector yet; `zeph memory reindex`"), hint
    result = run_zeph("memory", "reindex", env=compatible)
    assert result.returncode == 0, err(result)
    assert "indexed 4 messages with embedded minilm/all-MiniLM-L6-v2-int8 (offline)" in out(result)
    assert db_rows("select count(*) as n from message_vectors")[0]["n"] == 4
    again = run_zeph("memory", "reindex", env=compatible)
    assert "indexed 0 messages" in out(again)  # resumable: nothing is embedded twice
    down = run_zeph("memory", "reindex", "--all", env={**compatible, "ZEPH_MEMORY_VECTOR_BACKEND": "qdrant",
                                                         "ZEPH_MEMORY_QDRANT_URL": "http://127.0.0.1:1"})
    assert down.returncode == 1 and "Traceback" not in err(down)
    assert err(down).strip().splitlines()[-1].startswith("zeph: error: reindex stopped: qdrant at http://127.0.0.1:1")


def test_saved_memories_reach_the_model_in_their_project_only(fake_server, compatible, tmp_path):
    here, elsewhere = tmp_path / "proj-a", tmp_path / "proj-b"
    for path in (here, elsewhere):
        (path / ".git").mkdir(parents=True)
    added = run_zeph("memory", "add", "--scope", "project", "Deploys go through the blue-green script deploy.sh", env=compatible, cwd=here)
    assert added.returncode == 0, err(added)
    assert run_zeph("memory", "add", "--scope", "user", "The user prefers short answers", env=compatible, cwd=here).returncode == 0

    _reply(fake_server)
    assert run_zeph("ask", "How do we deploy?", env=compatible, cwd=here).returncode == 0
    blocks = _memory_blocks(_chat_requests(fake_server)[-1])
    assert len(blocks) == 1 and "deploy.sh" in blocks[0] and "short answers" in blocks[0]
    assert "never" in blocks[0].lower() and "instruction" in blocks[0].lower()  # reference, not instructions

    _reply(fake_server)
    assert run_zeph("ask", "How do we deploy?", env=compatible, cwd=elsewhere).returncode == 0
    blocks = _memory_blocks(_chat_requests(fake_server)[-1])
    assert len(blocks) == 1 and "deploy.sh" not in blocks[0] and "short answers" in blocks[0]

    memory_id = json.loads(out(run_zeph("memory", "list", "--json", env=compatible, cwd=here)))[0]["id"]
    assert run_zeph("memory", "forget", str(memory_id), "--yes", env=compatible, cwd=here).returncode == 0
    _reply(fake_server)
    assert run_zeph("ask", "How do we deploy?", env=compatible, cwd=here).returncode == 0
    assert all("deploy.sh" not in b for b in _memory_blocks(_chat_requests(fake_server)[-1]))
    assert not db_rows("select id from memories where content like '%deploy.sh%'")


def test_a_down_qdrant_does_not_break_the_turn_and_is_named_once(fake_server, compatible):
    from tests.fakes.server import closed_port_url

    env = {**compatible, "ZEPH_MEMORY_VECTOR_BACKEND": "qdrant", "ZEPH_MEMORY_QDRANT_URL": closed_port_url()}
    _reply(fake_server, "Noted.")
    first = run_zeph("ask", "The nightly backup runs at 02:30 from cron on the db host.", env=env)
    assert first.returncode == 0, err(first)
    _reply(fake_server, "02:30")
    second = run_zeph("ask", "When does the nightly backup run on the db host?", env=env)
    assert second.returncode == 0 and "Traceback" not in err(second)
    assert err(second).count("semantic recall fell back to keyword search: qdrant at") == 1, err(second)


def _cache_dir():
    import os
    from pathlib import Path

    from zeph_cli.features.memory.embedders.minilm import MODEL
    from zeph_cli.features.memory.vectors.matrix_cache import MatrixCache

    return MatrixCache(Path(os.environ["ZEPH_HOME"]) / "zeph.db.vectors", MODEL).dir


def _segments() -> list[str]:
    from zeph_cli.features.memory.vectors.matrix_cache import MANIFEST

    return [s["file"] for s in json.loads((_cache_dir() / MANIFEST).read_text())["segments"]]


def _recall_line(shown) -> str:
    return next(line for line in json.loads(out(shown))["memory"] if line.startswith("recall:"))


def test_a_damaged_cache_segment_is_dropped_rebuilt_and_recall_still_finds_the_fact(fake_server, compatible):
    import os
    import random
    from pathlib import Path

    _reply(fake_server, "Noted.")
    told = run_zeph("ask", "For the record: the staging database listens on port 6543 behind pgbouncer.", env=compatible)
    assert told.returncode == 0, err(told)
    [damaged] = _segments()
    path = _cache_dir() / damaged
    # random bytes of the same size: no size check can tell, and the floats include NaNs and huge values
    path.write_bytes(random.Random(29).randbytes(path.stat().st_size))

    _reply(fake_server, "Port 6543.")
    asked = run_zeph("ask", "Which port does the staging database listen on?", env=compatible)
    assert asked.returncode == 0, err(asked)
    assert "Warning" not in err(asked) and "Traceback" not in err(asked), err(asked)
    blocks = _recall_blocks(_chat_requests(fake_server)[-1])
    assert len(blocks) == 1 and "6543" in blocks[0], _sent(_chat_requests(fake_server)[-1])
    assert _recall_line(run_zeph("context", "--json", env=compatible)).startswith("recall: route hybrid (sqlite+fts5)")
    log = (Path(os.environ["ZEPH_HOME"]) / "zeph.log").read_text()
    assert [line for line in log.splitlines() if damaged in line] == [line for line in log.splitlines() if "cache" in line]
    assert len([line for line in log.splitlines() if damaged in line]) == 1, log
    # the cache was rebuilt from the database: a new segment, the damaged file gone
    assert damaged not in _segments() and not path.exists()

    _reply(fake_server, "Still 6543.")
    again = run_zeph("ask", "What port is the staging database on?", env=compatible)
    assert again.returncode == 0 and "Warning" not in err(again), err(again)
    assert "6543" in _recall_blocks(_chat_requests(fake_server)[-1])[0]
    assert _recall_line(run_zeph("context", "--json", env=compatible)).startswith("recall: route hybrid (sqlite+fts5)")
    assert len([line for line in (Path(os.environ["ZEPH_HOME"]) / "zeph.log").read_text().splitlines()
                if "cache" in line]) == 1


def test_a_reply_that_repeats_an_injected_block_is_marked_reported_and_never_recalled(fake_server, compatible, tmp_path):
    """A model that answers with its memory block verbatim (seen with small local models) must not feed
    that text back through recall, and `zeph context` says which reply did it."""
    fact = "The nightly ledger export runs at 03:15 and mails the finance team a CSV with every refund of the day"
    assert run_zeph("memory", "add", "--scope", "user", fact, env=compatible, cwd=tmp_path).returncode == 0
    _reply(fake_server, f"Here is what I know: {fact}.")  # the memory block, repeated word for word
    echo = run_zeph("ask", "When does the nightly ledger export run?", env=compatible, cwd=tmp_path)
    assert echo.returncode == 0, err(echo)
    _reply(fake_server, "The refund CSV goes to finance after the nightly ledger export, which I scheduled myself.")
    own = run_zeph("ask", "Who gets the refund CSV from the nightly ledger export?", env=compatible, cwd=tmp_path)
    assert own.returncode == 0, err(own)
    marked = db_rows("select id, metadata from messages where role = 'assistant' order by id")
    assert json.loads(marked[0]["metadata"]).get("echo") == ["memory"]
    assert "echo" not in json.loads(marked[1]["metadata"])

    session = db_rows("select conversation_id from messages where id = ?", marked[0]["id"])[0]["conversation_id"]
    shown = run_zeph("context", "--json", "--session", str(session), env=compatible, cwd=tmp_path)
    assert shown.returncode == 0, err(shown)
    lines = json.loads(out(shown))["memory"]
    assert f"echo: reply #{marked[0]['id']} repeats the memory block verbatim; it is kept out of recall" in lines, lines

    _reply(fake_server, "ok")
    asked = run_zeph("ask", "What time does the nightly ledger export mail the refund CSV?", env=compatible, cwd=tmp_path)
    assert asked.returncode == 0, err(asked)
    recalled = "\n".join(_recall_blocks(_chat_requests(fake_server)[-1]))
    assert "which I scheduled myself" in recalled  # a reply of its own is recalled
    assert "Here is what I know" not in recalled  # the echo never is


def test_a_reply_written_as_recall_entries_is_marked_reported_and_never_recalled(fake_server, compatible, tmp_path):
    """The small embedded model answers in the recall block's own format, with entries it made up (seen: "- [2026-11-28
    · "How do I check tyre pressure?" · user] How do you check the air in your car?"); recalled later, such lines feed the
    block's shape back into every turn. They are not a copy of any block, so the verbatim rule cannot see them."""
    made_up = ('- [2026-11-28 · "Staging" · user] The staging database of the ledger service listens on 6543.\n'
               '- [2026-11-29 · "Ports" · user] The ledger staging database uses port 6543 for every client.')
    _reply(fake_server, made_up)
    imitated = run_zeph("ask", "Which port does the ledger staging database listen on?", env=compatible, cwd=tmp_path)
    assert imitated.returncode == 0, err(imitated)
    _reply(fake_server, "Noted: the ledger staging database listens on 6543, behind the office VPN.")
    own = run_zeph("ask", "Remember: the ledger staging database listens on 6543.", env=compatible, cwd=tmp_path)
    assert own.returncode == 0, err(own)
    marked = db_rows("select id, metadata from messages where role = 'assistant' order by id")
    assert json.loads(marked[0]["metadata"]).get("echo") == ["recall entry format"]
    assert "echo" not in json.loads(marked[1]["metadata"])

    session = db_rows("select conversation_id from messages where id = ?", marked[0]["id"])[0]["conversation_id"]
    shown = run_zeph("context", "--json", "--session", str(session), env=compatible, cwd=tmp_path)
    assert shown.returncode == 0, err(shown)
    lines = json.loads(out(shown))["memory"]
    assert (f"echo: reply #{marked[0]['id']} is written as recall entries (copied or made up); it is kept out of "
            "recall") in lines, lines

    _reply(fake_server, "ok")
    asked = run_zeph("ask", "What port is the ledger staging database on?", env=compatible, cwd=tmp_path)
    assert asked.returncode == 0, err(asked)
    recalled = "\n".join(_recall_blocks(_chat_requests(fake_server)[-1]))
    assert "behind the office VPN" in recalled  # a reply of its own is recalled
    assert "for every client" not in recalled and "of the ledger service" not in recalled  # the made-up entries never


def test_a_question_naming_a_friend_recalls_what_was_said_not_the_small_talk_around_the_name(fake_server, compatible):
    """Greetings and thanks that carry a friend's name are most of what names them; a question about that
    friend must bring back what was said, and a backtick in a question must not leave recall empty."""
    for text in ("Thanks, Melanie!", "Hey Melanie, how are you?", "Bye Melanie!", "Thanks so much Melanie!"):
        _reply(fake_server, "You're welcome!")
        assert run_zeph("ask", text, env=compatible).returncode == 0
    _reply(fake_server, "Congrats to her!")
    told = run_zeph("ask", "Guess what, my sister adopted a beagle from the shelter and called him Biscuit.", env=compatible)
    assert told.returncode == 0, err(told)
    _reply(fake_server, "Noted.")
    assert run_zeph("ask", "We decided to deploy with deploy.sh every Tuesday from now on.", env=compatible).returncode == 0

    _reply(fake_server, "Biscuit.")
    asked = run_zeph("ask", "What is the name of Melanie's sister's dog?", env=compatible)
    assert asked.returncode == 0, err(asked)
    [block] = _recall_blocks(_chat_requests(fake_server)[-1])
    entries = [line for line in block.splitlines() if line.startswith("- [")]
    assert "Biscuit" in entries[0], block  # first, before any of the small talk naming Melanie

    _reply(fake_server, "Tuesdays.")
    asked = run_zeph("ask", "On which days do we run `deploy.sh`?", env=compatible)
    assert asked.returncode == 0, err(asked)
    [block] = _recall_blocks(_chat_requests(fake_server)[-1])
    assert "every Tuesday" in block.splitlines()[1], block


def test_a_question_asked_again_recalls_its_earlier_answer_not_itself(fake_server, compatible):
    _reply(fake_server, "Run make dist, then push a signed tag like v1.4.0; the CI publish job uploads the wheel to PyPI.")
    assert run_zeph("ask", "How do I publish a release of the parser library?", env=compatible).returncode == 0
    _reply(fake_server, "I'm not sure.")
    assert run_zeph("ask", "Which licence does the parser library use?", env=compatible).returncode == 0

    _reply(fake_server, "As before: make dist and a signed tag.")
    asked = run_zeph("ask", "How do I publish a release of the parser library?", env=compatible)
    assert asked.returncode == 0, err(asked)
    [block] = _recall_blocks(_chat_requests(fake_server)[-1])
    assert "signed tag like v1.4.0" in block.splitlines()[1], block  # the answer, in the question's place
    bodies = [line.split("] ", 1)[1] for line in block.splitlines()[1:]]
    assert "How do I publish a release of the parser library?" not in bodies  # the same question adds nothing

    _reply(fake_server, "Still not sure.")
    asked = run_zeph("ask", "Which licence does the parser library use?", env=compatible)
    assert asked.returncode == 0, err(asked)
    bodies = [line.split("] ", 1)[1] for b in _recall_blocks(_chat_requests(fake_server)[-1]) for line in b.splitlines()[1:]]
    assert not {"Which licence does the parser library use?", "I'm not sure."} & set(bodies), bodies  # nor its empty answer
