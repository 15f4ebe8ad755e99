"""Recall in any script, on real zeph databases with each offline embedder: the words recall searches and
weighs are folded as the store's FTS5 index (unicode61) folds them, a run of CJK characters still gives the
keyword leg something to look for, and both legs run for any query that has content, ASCII or not."""

from __future__ import annotations

import pytest

from zeph_cli.config import Config
from zeph_cli.features.memory.embedders.select import EMBEDDED_MODELS, shared_offline
from zeph_cli.features.memory.fusion import is_cjk, terms
from zeph_cli.features.memory.indexer import embed_pending
from zeph_cli.features.memory.recall import recall
from zeph_cli.features.memory.service import MemoryService
from zeph_cli.features.memory.vectors.sqlite_index import SqliteVectorIndex
from zeph_cli.messages import Message
from zeph_cli.store import ConversationStore, open_database

NOISE = [
    "Сегодня мы обновили документацию проекта и закрыли две задачи.",
    "Спасибо, всё работает!",
    "Я купил новый ноутбук на прошлой неделе.",
    "今天天气很好，我们去公园散步了。",
    "谢谢！",
    "The parser got a second maintainer in March.",
    "Thanks, sounds good.",
]


@pytest.fixture(params=sorted(EMBEDDED_MODELS))
def embedder(request):
    return shared_offline(EMBEDDED_MODELS[request.param])


def _history(tmp_path, embedder, facts: list[str]):
    path = tmp_path / "zeph.db"
    store = ConversationStore(open_database(path))
    past = store.create_conversation(provider="p", model="m", cwd="/", title="past")
    ids = {}
    for text in [*facts, *NOISE]:
        ids[text] = store.add_message(past.id, Message.user(text)).id
        store.add_message(past.id, Message.assistant("OK."))
    now = store.create_conversation(provider="p", model="m", cwd="/", title="now")
    index = SqliteVectorIndex(store.db, path)
    embed_pending(index, embedder)
    return store, index, ids, now


def _ask(store, index, embedder, query, now):
    return recall(store.db, query, Config().memory, conversation_id=now.id, embedder=embedder, index=index)


def test_a_russian_question_recalls_the_russian_fact(tmp_path, embedder):
    fact = "База данных слушает порт 5433 за pgbouncer."
    store, index, ids, now = _history(tmp_path, embedder, [fact])
    result = _ask(store, index, embedder, "Какой порт у базы данных?", now)
    assert result.searched == ("sqlite", "fts5")
    assert result.hits and result.hits[0].message_id == ids[fact], result.hits
    assert result.hits[0].via == "both"  # "порт", "данных": the keyword leg found it as well
    store.close()


@pytest.mark.parametrize("query", ["cafe Muller", "café Müller", "CAFÉ MÜLLER"])
def test_accents_and_case_fold_as_the_index_folds_them(tmp_path, embedder, query):
    fact = "We had lunch at the café Müller near the station."
    store, index, ids, now = _history(tmp_path, embedder, [fact, "We had lunch at the station again."])
    result = _ask(store, index, embedder, query, now)
    assert result.hits and result.hits[0].message_id == ids[fact], result.hits
    assert result.hits[0].via == "both"
    assert result.hits[0].relevance == 1.0  # every word of the query is in it, accents or not
    store.close()


def test_a_chinese_question_finds_the_related_chinese_message(tmp_path, embedder):
    """unicode61 keeps a clause of Chinese as one token: the keyword leg looks for the question's character
    pairs at the start of tokens, and the vector leg runs; a question about the port is not left empty."""
    fact = "数据库端口是5433，在pgbouncer后面。"
    store, index, ids, now = _history(tmp_path, embedder, [fact])
    result = _ask(store, index, embedder, "数据库的端口是多少？", now)
    assert result.searched == ("sqlite", "fts5")
    assert result.hits and result.hits[0].message_id == ids[fact], result.hits
    assert "keyword" in result.hits[0].via or result.hits[0].via == "both"
    assert ids["谢谢！"] not in [h.message_id for h in result.hits]
    store.close()


def test_ascii_queries_recall_as_before(tmp_path, embedder):
    fact = "The staging database listens on port 6543 behind pgbouncer."
    store, index, ids, now = _history(tmp_path, embedder, [fact, "We deploy with deploy.sh every Tuesday."])
    result = _ask(store, index, embedder, "Which port does the staging database listen on?", now)
    assert result.hits[0].message_id == ids[fact] and result.hits[0].via == "both"
    assert _ask(store, index, embedder, "what runs `deploy.sh`?", now).hits[0].message_id == ids[
        "We deploy with deploy.sh every Tuesday."]
    assert _ask(store, index, embedder, "hello there", now).hits == ()
    store.close()


def test_the_words_recall_weighs_are_the_words_fts5_stores(tmp_path):
    """Recall's words of a text (`terms`) are the tokens FTS5 stores for it, read from the index's own
    vocabulary, in Latin with accents, Cyrillic, Greek and German; CJK pairs are recall's own."""
    text = ("Straße café Müller naïve Ærøskøbing İstanbul ÉCOLE élève Ǘber "
            "База данных ПОРТ йогурт ёлка Σοφία ΟΔΟΣ μικρός 数据库端口 user_id deploy.sh v1.2")
    store = ConversationStore(open_database(tmp_path / "zeph.db"))
    conversation = store.create_conversation(provider="p", model="m", cwd="/", title="t")
    store.add_message(conversation.id, Message.user(text))
    store.db.execute("create virtual table temp.v using fts5vocab(main, messages_fts, row)")
    stored = {row[0] for row in store.db.execute("select term from temp.v").fetchall()}
    plain = {t for t in terms(text) if not is_cjk(t) and not any(c in t for c in "._:/-")}
    assert plain <= stored, plain - stored
    assert {t for t in stored if len(t) > 1 and t.isalpha() and not is_cjk(t[:2])} <= plain | {"user", "id", "deploy", "sh"}
    store.close()


def test_a_query_in_any_script_loads_the_embedder(tmp_path):
    store = ConversationStore(open_database(tmp_path / "zeph.db"))
    service = MemoryService(Config(), store.db, project_root=tmp_path, make_embedder=lambda: None,
                            make_index=lambda db, path: None)
    for query in ("Какой порт у базы данных?", "数据库的端口是多少？", "café Müller", "डेटाबेस का पोर्ट क्या है?"):
        assert service.embeds_for(query), query
    for query in ("hello there", "continue", "  ", "?"):
        assert not service.embeds_for(query), query
    store.close()
