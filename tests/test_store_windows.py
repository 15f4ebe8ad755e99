"""Learned context windows on a real SQLite file: remembered per provider, model and endpoint."""

from __future__ import annotations

import sqlite3

import pytest
from zeph_cli.store.sqlite import Database

from zeph_cli.store import forget_window, open_database, remember_window, remembered_window
from zeph_cli.store.migrations import migrate

URL = "http://127.0.0.1:8080/v1"
MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "data" / "zeph.db"


def test_remembered_across_connections(db_path):
    db = open_database(db_path)
    assert remembered_window(db, "compatible", MODEL, URL) is None
    remember_window(db, "compatible", MODEL, URL, 2048, "the server's context-length error")
    db.close()

    again = open_database(db_path)
    try:
        assert remembered_window(again, "compatible", MODEL, URL) == (2048, "the server's context-length error")
    finally:
        again.close()


def test_an_unnamed_model_uses_the_endpoints_newest_learned_window(db_path):
    # A compatible server whose listing did not answer in time leaves the model unnamed; what that
    # endpoint taught before still holds, so the next request does not pay a rejection to learn it again.
    db = open_database(db_path)
    try:
        assert remembered_window(db, "compatible", "", URL) is None
        remember_window(db, "compatible", MODEL, URL, 2048, "the server's context-length error")
        assert remembered_window(db, "compatible", "", URL) == (2048, "the server's context-length error")
        remember_window(db, "compatible", "other.gguf", URL, 4096, "the server's /props")
        assert remembered_window(db, "compatible", "", URL) is None  # the window depends on the model: no guess
        remember_window(db, "compatible", "", URL, 1024, "the server's context-length error")
        assert remembered_window(db, "compatible", "", URL) == (1024, "the server's context-length error")
        assert remembered_window(db, "compatible", "", "http://127.0.0.1:9090/v1") is None
        assert remembered_window(db, "local-gpu", "", URL) is None
    finally:
        db.close()


def test_keyed_by_provider_model_and_endpoint(db_path):
    db = open_database(db_path)
    try:
        remember_window(db, "compatible", MODEL, URL, 2048, "error")
        assert remembered_window(db, "local-gpu", MODEL, URL) is None
        assert remembered_window(db, "compatible", "other.gguf", URL) is None
        assert remembered_window(db, "compatible", MODEL, "http://127.0.0.1:9090/v1") is None
    finally:
        db.close()


def test_remembering_again_replaces(db_path):
    db = open_database(db_path)
    try:
        remember_window(db, "compatible", MODEL, URL, 2048, "error")
        remember_window(db, "compatible", MODEL, URL, 4096, "llama.cpp /props n_ctx")
        assert remembered_window(db, "compatible", MODEL, URL) == (4096, "llama.cpp /props n_ctx")
        assert db.execute("select count(*) from learned_windows").fetchone()[0] == 1
    finally:
        db.close()


def test_only_positive_windows(db_path):
    db = open_database(db_path)
    try:
        with pytest.raises(ValueError, match="positive"):
            remember_window(db, "compatible", MODEL, URL, 0, "error")
        with pytest.raises(sqlite3.IntegrityError):  # the schema refuses it too
            db.execute("insert into learned_windows values ('p', 'm', 'u', -1, 's', 't')")
        assert remembered_window(db, "compatible", MODEL, URL) is None
    finally:
        db.close()


def test_forget(db_path):
    db = open_database(db_path)
    try:
        remember_window(db, "compatible", MODEL, URL, 2048, "error")
        assert forget_window(db, "compatible", MODEL, URL) is True
        assert remembered_window(db, "compatible", MODEL, URL) is None
        assert forget_window(db, "compatible", MODEL, URL) is False
    finally:
        db.close()


def test_an_older_database_gains_the_table_and_keeps_its_rows(db_path):
    db_path.parent.mkdir(parents=True)
    old = Database(sqlite3.connect(db_path))
    migrate(old, upto="m007_compression_guidelines")
    old["conversations"].insert({"id": 1, "title": "kept", "created_at": "t", "updated_at": "t"})
    assert "learned_windows" not in old.table_names()
    old.close()

    db = open_database(db_path)
    try:
        assert "learned_windows" in db.table_names()
        assert db.execute("select title from conversations").fetchall() == [("kept",)]
        remember_window(db, "ollama", "llama3.1:8b", "http://127.0.0.1:11434", 8192, "error")
        assert remembered_window(db, "ollama", "llama3.1:8b", "http://127.0.0.1:11434") == (8192, "error")
    finally:
        db.close()
