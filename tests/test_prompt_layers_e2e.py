"""Every prompt layer in one request, through the real `zeph` and the wire-level fake model: the
order ETOS gives (global prompt, topic, time, memory, recent conversations, user profile,
worldbook, enhancement last) around Zeph's own blocks, each only when its condition holds, and
`zeph context` listing each block with its tokens in that order (`--text`: each message under its block)."""

from __future__ import annotations

import json

from tests.chat_wire import chat_requests, queue_reply
from tests.cli_helpers import err, out, run_zeph
from tests.test_worldbook_e2e import _index, _messages, _store, project  # noqa: F401  (fixture)

CONFIG = '[prompt]\nprofile = "guide"\n[prompt.profiles]\nguide = "You are a patient guide to Wilderland."\n'


def _seed_other_session(env: dict, project) -> None:
    """An earlier session with its summary, and a user profile, written where zeph reads them."""
    from zeph_cli.features.memory.long_term_access import project_root_of
    from zeph_cli.paths import database_path
    from zeph_cli.store import open_database
    from zeph_cli.features.session_memory.store import DigestStore

    earlier = run_zeph("ask", "--profile", "none", "plan the billing refactor", env=env, cwd=project)
    assert earlier.returncode == 0, err(earlier)
    db = open_database(database_path())
    try:
        digests = DigestStore(db)
        digests.save(1, project_root_of(project)[0], "Planning the billing refactor: split invoices from payments.", 6)
        digests.set_profile("Prefers short answers with code.", "user")
        digests.profile_attempted()  # updated from that summary already: no profile request in this test
    finally:
        db.close()


def test_a_full_request_carries_every_block_in_order(fake_server, compatible, project, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(CONFIG)
    env = {**compatible, "ZEPH_CONFIG": str(config), "ZEPH_MEMORY_SEMANTIC_ENABLED": "false", "ZEPH_MEMORY_CROSS_SESSION_ENABLED": "true",
           "ZEPH_CONTEXT_ENHANCED_PROMPT": "Cite the file you used."}
    queue_reply(fake_server, "Split them.")
    _seed_other_session(env, project)
    for position in ("before", "after", "an_top", "outlet", "an_bottom"):
        _store(project, f"Dragon lore {position}.", keywords=["dragon"], position=position)
    _store(project, "Dragon lore at depth.", keywords=["dragon"], position="at_depth", depth=0)
    assert run_zeph("memory", "add", "--scope", "project", "Maps live in notes.txt", env=env, cwd=project).returncode == 0

    queue_reply(fake_server, "Hello.")
    queue_reply(fake_server, "Smaug.")
    assert run_zeph("ask", "--topic", "A tale of Wilderland.", "hello", env=env, cwd=project).returncode == 0
    first = _messages(chat_requests(fake_server)[-1])
    assert "<worldbook_" not in json.dumps(first)  # no keyword yet: no worldbook block
    assert "<recent_conversation_memory>" in json.dumps(first)  # the other session's summary
    result = run_zeph("ask", "-c", "Tell me about the dragon", env=env, cwd=project)
    assert result.returncode == 0, err(result)
    sent = _messages(chat_requests(fake_server)[-1])

    order = [
        "<worldbook_before>", "You are Zeph", "<environment>", "<system_prompt>", "<topic_prompt>", "<worldbook_after>",
        "hello", "Hello.",  # the history before the running turn: a cached prefix
        "<worldbook_an_top>", "<time>", "<memory>", "<recent_conversation_memory>", "<user_profile_memory>",
        "<worldbook_outlet>", "<worldbook_an_bottom>",
        "Tell me about the dragon", "<worldbook_at_depth>", "<enhanced_prompt>",
    ]
    places = [_index(sent, start) for start in order]
    assert places == sorted(places) and len(set(places)) == len(places), list(zip(order, places))
    assert places[-1] == len(sent) - 1  # the enhancement prompt is the last message
    assert all(m["role"] == "system" for m in sent[: places[order.index("<worldbook_after>")] + 1])
    profile = sent[places[order.index("<user_profile_memory>")]]["content"]
    assert "Prefers short answers with code." in profile
    recent = sent[places[order.index("<recent_conversation_memory>")]]["content"]
    assert "split invoices from payments" in recent

    shown = run_zeph("context", "--json", env=env, cwd=project)
    assert shown.returncode == 0, err(shown)
    blocks = json.loads(out(shown))["context"]["blocks"]
    names = [b["name"] for b in blocks]
    expected = ["worldbook before", "base prompt", "environment", "mode prompt", "global prompt", "topic prompt",
                "worldbook after", "worldbook an top", "time", "memory", "recent conversations", "user profile",
                "worldbook outlet", "worldbook an bottom", "history", "enhancement prompt"]
    assert [n for n in names if n in expected] == expected, names
    assert all(b["tokens"] > 0 for b in blocks if b["name"] in expected)
    # the entry before the base prompt fires by its keyword: no layer after it is the same from turn to turn
    assert json.loads(out(shown))["context"]["stable_prefix"] == {"tokens": 0, "ends_before": "worldbook before"}
    assert "cache-stable system text 0: the layers before worldbook before, which changes" in out(
        run_zeph("context", env=env, cwd=project))

    # --text: every message under the block it belongs to
    sections = json.loads(out(run_zeph("context", "--json", "--text", env=env, cwd=project)))["text"]
    tags = {"worldbook before": "<worldbook_before>", "base prompt": "You are Zeph", "environment": "<environment>",
            "mode prompt": "Mode: agent.", "global prompt": "<system_prompt>", "topic prompt": "<topic_prompt>",
            "worldbook after": "<worldbook_after>", "worldbook at depth 0": "<worldbook_at_depth>",
            "worldbook an top": "<worldbook_an_top>", "time": "<time>", "memory": "<memory>",
            "recent conversations": "<recent_conversation_memory>", "user profile": "<user_profile_memory>",
            "worldbook outlet": "<worldbook_outlet>", "worldbook an bottom": "<worldbook_an_bottom>",
            "enhancement prompt": "<enhanced_prompt>"}
    assert [s["block"] for s in sections] == [*list(tags)[:7], "tools", "history", *list(tags)[7:]]
    texts = {s["block"]: [m["parts"][0]["text"] for m in s.get("messages", [])] for s in sections}
    for block, tag in tags.items():
        assert len(texts[block]) == 1 and texts[block][0].startswith(tag), (block, texts[block])
    assert texts["history"] == ["hello", "Hello.", "Tell me about the dragon", "Smaug."]

    # isolation: memory, the summaries and the profile go; the prompts, time and worldbook stay
    assert run_zeph("worldbook", "isolate", "on", env=env, cwd=project).returncode == 0
    queue_reply(fake_server, "ok")
    assert run_zeph("ask", "-c", "and the dragon's hoard?", env=env, cwd=project).returncode == 0
    text = json.dumps(_messages(chat_requests(fake_server)[-1]))
    for gone in ("<memory>", "<recent_conversation_memory>", "<user_profile_memory>"):
        assert gone not in text, gone
    for kept in ("<system_prompt>", "<topic_prompt>", "<time>", "<worldbook_an_top>", "<enhanced_prompt>"):
        assert kept in text, kept
