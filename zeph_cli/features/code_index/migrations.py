"""The code index's tables: projects, their files, chunks, tags, chunk words for BM25 and chunk vectors.

Invariant: registered with the shared runner (`store/migrations.py`) under their numbers, which never
change. A project is one root (absolute, resolved); its files are keyed by their path relative to it
('/'-separated); deleting a project or a file deletes its chunks, tags and vectors (foreign keys) and
the chunks' words (a trigger: FTS5 rows are not reached by foreign keys). Vectors are keyed by chunk and
embedding model: two embedders' vectors never mix, and a qdrant backend keeps the row with a null vector
so this table always says what is embedded.
"""

from __future__ import annotations

from ...store.migrations import migration
from ...store.sqlite import Database


@migration
def m016_code_index(db: Database) -> None:
    db.execute(
        """
        create table code_projects (
            id integer primary key,
            root text not null unique,
            created_at text not null,
            indexed_at text  -- when a build last finished (null: never)
        )
        """
    )
    db.execute(
        """
        create table code_files (
            id integer primary key,
            project_id integer not null references code_projects(id) on delete cascade,
            path text not null,  -- relative to the root, '/'-separated
            language text not null,  -- the grammar's name; '' for a file indexed as text
            sha text not null,  -- the content's hash: a file whose hash is unchanged is not parsed again
            size integer not null,
            mtime_ns integer not null,
            imports text not null default '',  -- the file's import lines, put in front of each chunk to embed
            unique (project_id, path)
        )
        """
    )
    db.execute(
        """
        create table code_chunks (
            id integer primary key,
            file_id integer not null references code_files(id) on delete cascade,
            start_line integer not null,
            end_line integer not null,
            symbol text not null,
            kind text not null,
            signature text not null,
            text text not null
        )
        """
    )
    db.execute("create index code_chunks_file on code_chunks (file_id)")
    db.execute(
        """
        create table code_tags (
            file_id integer not null references code_files(id) on delete cascade,
            name text not null,
            role text not null check (role in ('def', 'ref')),
            kind text not null,
            line integer not null,
            code text not null default ''  -- a definition's line of source, stripped (the map shows it); '' for a use
        )
        """
    )
    db.execute("create index code_tags_file on code_tags (file_id)")
    db.execute("create index code_tags_name on code_tags (name, role)")
    # BM25 over a chunk's identifier-aware words (`words.words` of its path, symbol and text), rowid = the
    # chunk's id; unicode61 splits only at the spaces that join them.
    db.execute("create virtual table code_chunk_words using fts5 (words, tokenize = 'unicode61')")
    db.execute(
        """
        create table code_vectors (
            chunk_id integer not null references code_chunks(id) on delete cascade,
            model text not null,
            dim integer not null,
            vector blob,  -- float32, L2-normalized; null when the qdrant backend holds it
            primary key (chunk_id, model)
        )
        """
    )
    db.execute(
        "create trigger code_chunks_words_ad after delete on code_chunks "
        "begin delete from code_chunk_words where rowid = old.id; end"
    )


@migration
def m017_code_index_versions(db: Database) -> None:
    # Counters a reader keys its caches by: `version` moves whenever a project's chunks change (the repo map,
    # the chunks' matrix), `vectors_version` whenever its vectors do (the matrix of an embedding model).
    db.execute("alter table code_projects add column version integer not null default 0")
    db.execute("alter table code_projects add column vectors_version integer not null default 0")
