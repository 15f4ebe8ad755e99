"""`recall()` on a real zeph database with each offline embedder (minilm, the default, and wordllama) and both
vector backends."""

from __future__ import annotations

import dataclasses

import pytest

from zeph_cli.config import Config
from zeph_cli.features.memory.embedders.embedded import shared_embedded
from zeph_cli.features.memory.embedders.select import EMBEDDED_MODELS, shared_offline
from zeph_cli.features.memory.indexer import embed_pending
from zeph_cli.features.memory.recall import recall
from zeph_cli.features.memory.routing import Route
from zeph_cli.features.memory.vectors.qdrant_index import QdrantVectorIndex
from zeph_cli.features.memory.vectors.sqlite_index import SqliteVectorIndex
from zeph_cli.messages import Message
from zeph_cli.store import ConversationStore, open_database
from tests.fakes.server import closed_port_url

FACTS = [
    "The staging database listens on port 6543 behind pgbouncer.",
    "We decided to deploy with the blue-green script deploy.sh every Tuesday.",
    "The user prefers pytest fixtures over setUp methods.",
]
NOISE = [f"Refactored module number {i} and renamed a variable in the parser." for i in range(30)] + [
    "Please run the tests, fix it if they fail, then continue. Looks good, go ahead."
]


@pytest.fixture(params=sorted(EMBEDDED_MODELS))
def embedder(request):
    return shared_offline(EMBEDDED_MODELS[request.param])


@pytest.fixture
def world(tmp_path, embedder):
    path = tmp_path / "zeph.db"
    store = ConversationStore(open_database(path))
    past = store.create_conversation(provider="p", model="m", cwd="/", title="infra notes")
    ids = {}
    for text in FACTS + NOISE:
        ids[text] = store.add_message(past.id, Message.user(text)).id
        store.add_message(past.id, Message.assistant("Noted."))
    now = store.create_conversation(provider="p", model="m", cwd="/", title="today")
    index = SqliteVectorIndex(store.db, path)
    embed_pending(index, embedder)
    index.embedder = embedder  # the embedder of this world's vectors, for the queries below
    yield store, index, ids, past, now
    store.close()


def _recall(store, index, query, conversation_id, **memory):
    config = Config().memory
    if memory:
        config = dataclasses.replace(config, semantic=dataclasses.replace(config.semantic, **memory))
    return recall(store.db, query, config, conversation_id=conversation_id, embedder=index.embedder, index=index)


def test_both_legs_run_for_every_query_and_find_the_fact_in_another_session(world):
    store, index, ids, _, now = world
    question = _recall(store, index, "Which port does the staging database listen on?", now.id)
    assert question.route is Route.HYBRID and question.searched == ("sqlite", "fts5")
    assert question.hits[0].message_id == ids[FACTS[0]] and question.hits[0].via == "both"
    keyword = _recall(store, index, "pgbouncer", now.id)
    assert keyword.searched == ("sqlite", "fts5")
    assert keyword.hits[0].message_id == ids[FACTS[0]]
    identifier = _recall(store, index, "what runs `deploy.sh`?", now.id)  # a backtick weighs, never empties
    assert identifier.route is Route.KEYWORD and identifier.hits[0].message_id == ids[FACTS[1]]
    hybrid = _recall(store, index, "blue-green deploy script schedule", now.id)
    assert hybrid.route is Route.HYBRID and hybrid.hits[0].message_id == ids[FACTS[1]] and hybrid.hits[0].via == "both"


def test_unrelated_and_excluded_and_compacted_messages_are_not_recalled(world):
    store, index, ids, past, now = world
    for follow_up in ("hello there", "continue", "go ahead", "fix it", "run the tests", "looks good"):
        assert _recall(store, index, follow_up, now.id).hits == (), follow_up  # they name no topic
    assert _recall(store, index, "kubernetes helm", now.id).hits == ()  # no such words, nothing close
    target = ids[FACTS[0]]
    excluded = recall(store.db, "pgbouncer", Config().memory, conversation_id=now.id, exclude_ids={target},
                      embedder=index.embedder, index=index)
    assert excluded.hits == ()
    store.db.execute("update messages set agent_visible = 0 where id = ?", [target])  # as compaction does
    store.db.conn.commit()
    after = _recall(store, index, "Which port does the staging database listen on?", now.id)
    assert target not in [h.message_id for h in after.hits]
    assert _recall(store, index, "pgbouncer", now.id).hits == ()
    # the limit holds, and tool-call rows or assistant filler never crowd facts out
    many = _recall(store, index, "Refactored parser module variable renamed", now.id, recall_limit=3)
    assert len(many.hits) == 3


def test_vectors_of_another_model_are_never_compared(world):
    store, index, ids, _, now = world

    class Other:
        model = "other/model"

        def embed(self, texts):
            return index.embedder.embed(texts)

    result = recall(store.db, "Which port does the staging database listen on?", Config().memory,
                    conversation_id=now.id, embedder=Other(), index=index)
    assert result.hits and result.hits[0].message_id == ids[FACTS[0]]
    assert all(h.via == "keyword" for h in result.hits)  # nothing is indexed for "other/model"


def test_a_down_qdrant_degrades_to_keywords_with_a_note(world):
    store, index, ids, _, now = world
    down = QdrantVectorIndex(store.db, closed_port_url())
    result = recall(store.db, "staging database port pgbouncer", Config().memory, conversation_id=now.id,
                    embedder=index.embedder, index=down)
    assert result.searched == ("fts5",)
    assert result.note.startswith("semantic recall fell back to keyword search: qdrant at")
    assert result.hits and result.hits[0].message_id == ids[FACTS[0]]


def test_qdrant_local_mode_serves_the_same_recall(world):
    from qdrant_client import QdrantClient

    store, sqlite_index, ids, _, now = world
    index = QdrantVectorIndex(store.db, "http://unused", client=QdrantClient(location=":memory:"))
    embed_pending(index, sqlite_index.embedder)
    result = recall(store.db, "Which port does the staging database listen on?", Config().memory,
                    conversation_id=now.id, embedder=sqlite_index.embedder, index=index)
    assert result.searched == ("qdrant", "fts5") and result.hits[0].message_id == ids[FACTS[0]]


def test_decay_and_mmr_change_the_order(world):
    store, index, ids, past, now = world
    old = ids[FACTS[0]]
    store.db.execute("update messages set created_at = '2020-01-01T00:00:00+00:00' where id = ?", [old])
    store.db.conn.commit()
    query = "staging database port pgbouncer blue-green deploy"
    plain = _recall(store, index, query, now.id)
    decayed = _recall(store, index, query, now.id, temporal_decay_enabled=True, temporal_decay_half_life_days=30)
    assert old in [h.message_id for h in plain.hits]
    rank = lambda r: [h.message_id for h in r.hits].index(old) if old in [h.message_id for h in r.hits] else 99  # noqa: E731
    assert rank(decayed) > rank(plain)
    query = "Refactored module number renamed variable parser pytest"
    plain = _recall(store, index, query, now.id, recall_limit=3)
    diverse = _recall(store, index, query, now.id, mmr_enabled=True, mmr_lambda=0.3, recall_limit=3)
    # 30 near-duplicates of little information never crowd out the one distinct fact (the information
    # prior), with or without MMR (whose arithmetic test_recall_logic checks)
    for result in (plain, diverse):
        assert result.hits[0].content == FACTS[2] and len(result.hits) == 3


@pytest.mark.parametrize("port", ["12", "21"])
@pytest.mark.parametrize("query", ["Is the staging database on port {}?", "staging database port {} settings"])
def test_numbers_the_embedder_cannot_tell_apart_are_told_apart_by_their_words(tmp_path, port, query):
    """"port 12" and "port 21" are the same tokens to a mean of token vectors: one vector. The number in
    the query decides, on the vector route (a question) and the hybrid one, whichever was said last."""
    path = tmp_path / "zeph.db"
    store = ConversationStore(open_database(path))
    past = store.create_conversation(provider="p", model="m", cwd="/", title="ports")
    said = {n: store.add_message(past.id, Message.user(f"The staging database listens on port {n}.")).id
            for n in ("12", "21")}
    now = store.create_conversation(provider="p", model="m", cwd="/", title="today")
    index = SqliteVectorIndex(store.db, path)
    embed_pending(index, shared_embedded())
    index.embedder = shared_embedded()  # wordllama's mean of token vectors: one vector for both numbers
    vectors = shared_embedded().embed([f"The staging database listens on port {n}." for n in ("12", "21")])
    assert float(vectors[0] @ vectors[1]) == pytest.approx(1.0, abs=1e-6)
    result = _recall(store, index, query.format(port), now.id, recall_limit=1)
    assert "sqlite" in result.searched
    assert [h.message_id for h in result.hits] == [said[port]]


def test_the_cosine_floor_for_a_hit_sharing_no_word_is_the_embedders_own(tmp_path):
    """A sentence encoder's unrelated pairs sit higher than static vectors' ("I'm not sure." is 0.12 from a
    question about a licence with all-MiniLM-L6-v2, -0.03 with wordllama): its floor is its `min_support`."""
    from zeph_cli.features.memory.embedders.minilm import MiniLMEmbedder

    path = tmp_path / "zeph.db"
    store = ConversationStore(open_database(path))
    past = store.create_conversation(provider="p", model="m", cwd="/", title="past")
    unsure = store.add_message(past.id, Message.assistant("I'm not sure.")).id
    store.add_message(past.id, Message.user("We switched the build to meson last spring."))
    store.add_message(past.id, Message.user("The parser library got a second maintainer in March."))
    now = store.create_conversation(provider="p", model="m", cwd="/", title="today")
    index = SqliteVectorIndex(store.db, path)
    minilm = MiniLMEmbedder()
    embed_pending(index, minilm)

    class LowerFloor(MiniLMEmbedder):
        min_support = 0.1

    lower = LowerFloor()
    query = "Which licence does the parser library use?"
    found = {h.message_id for h in recall(store.db, query, Config().memory, conversation_id=now.id,
                                          embedder=lower, index=index).hits}
    assert unsure in found  # over wordllama's floor: recalled though it says nothing
    found = {h.message_id for h in recall(store.db, query, Config().memory, conversation_id=now.id,
                                          embedder=minilm, index=index).hits}
    assert unsure not in found
    store.close()


def test_the_answer_to_a_repeated_question_carries_its_own_relevance_and_legs(tmp_path, embedder):
    """The answer that takes a repeated question's place ranks where the question ranked, but its relevance
    is its own (not the question's 1.0) and its legs are the searches that found it, plus "answer"."""
    path = tmp_path / "zeph.db"
    store = ConversationStore(open_database(path))
    past = store.create_conversation(provider="p", model="m", cwd="/", title="release")
    question = "How do I publish a release of the parser library?"
    store.add_message(past.id, Message.user(question))
    answer = store.add_message(past.id, Message.assistant("Run make dist, then push a signed tag like v1.4.0.")).id
    for text in NOISE[:5]:
        store.add_message(past.id, Message.user(text))
    now = store.create_conversation(provider="p", model="m", cwd="/", title="today")
    index = SqliteVectorIndex(store.db, path)
    embed_pending(index, embedder)

    words_only = recall(store.db, question, Config().memory, conversation_id=now.id)
    assert [(h.message_id, h.via, h.relevance) for h in words_only.hits[:1]] == [(answer, "answer", 0.0)]
    both = recall(store.db, question, Config().memory, conversation_id=now.id, embedder=embedder, index=index)
    first = both.hits[0]
    query_vector, answer_vector = embedder.embed([question, "Run make dist, then push a signed tag like v1.4.0."])
    cosine = float(query_vector @ answer_vector) / float((query_vector @ query_vector) * (answer_vector @ answer_vector)) ** 0.5
    assert first.message_id == answer and first.via == "vector+answer"  # the vector leg found it too
    assert first.relevance == pytest.approx(cosine, abs=1e-3) and first.relevance < 0.9
    assert question not in [h.content for h in both.hits]
    store.close()
