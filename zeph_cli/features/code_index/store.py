"""The code index's rows: a project's files, their chunks (with the words BM25 reads) and tags, and which
chunks each embedding model has a vector for.

Invariant: a file's rows change together, in one write transaction (`replace_file`): its chunks, their
FTS5 words (`words.words` of the path, symbol, signature and text, joined by spaces), its tags and, through
the foreign keys, the vectors of the chunks it had. A project's `version` moves whenever its chunks change
(a file replaced, files forgotten, the project cleared) and only then; `vectors_version` whenever its vectors
do. Paths are relative to the project's root, '/'-separated; a project's root is absolute and resolved.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from ...store.sqlite import Database
from ...store.transactions import write_transaction
from .chunks import Chunk
from .words import words



@dataclass(frozen=True)
class Project:
    id: int
    root: str
    indexed_at: str | None


@dataclass(frozen=True)
class StoredFile:
    id: int
    path: str
    language: str
    sha: str
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class StoredChunk:
    id: int
    path: str
    start_line: int
    end_line: int
    symbol: str
    kind: str
    signature: str
    text: str
    language: str


@dataclass(frozen=True)
class StoredTag:
    path: str
    name: str
    role: str  # "def" | "ref"
    kind: str
    line: int
    code: str = ""  # a definition's source line, stripped; "" for a use


@dataclass(frozen=True)
class IndexStatus:
    files: int
    chunks: int
    tags: int
    embedded: dict[str, int] = field(default_factory=dict)  # chunks with a vector, per embedding model
    indexed_at: str | None = None
    languages: dict[str, int] = field(default_factory=dict)  # files per language ("" = indexed as text)


_CHUNK_COLUMNS = (
    "c.id, f.path, c.start_line, c.end_line, c.symbol, c.kind, c.signature, c.text, f.language"
)


def chunk_words(path: str, chunk: Chunk | StoredChunk) -> str:
    """What FTS5 indexes for a chunk: the words of its path, symbol, signature and text, joined by spaces."""
    return " ".join(words(" ".join((path, chunk.symbol, chunk.signature, chunk.text))))


def fts_query(query_words: Iterable[str]) -> str:
    """An FTS5 query matching any of the words (each quoted, so none is read as an operator); "" for none."""
    seen: dict[str, None] = {}
    for word in query_words:
        word = word.strip()
        if word:
            seen.setdefault(word, None)
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in seen)



class ClearsProject(Protocol):
    """A vectors backend, as `CodeStore.clear` uses it (`vectors.CodeVectors` is one)."""

    def clear(self, project: Project) -> None: ...


class CodeStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- projects ---------------------------------------------------------------------------------------

    def project(self, root: Path | str, *, create: bool = True) -> Project | None:
        resolved = str(Path(root).expanduser().resolve())
        row = self._project_row(resolved)
        if row is None and create:
            with write_transaction(self.db):
                self.db.execute(
                    "insert into code_projects (root, created_at) values (?, ?) on conflict (root) do nothing",
                    (resolved, _now()),
                )
            row = self._project_row(resolved)
        return None if row is None else Project(row["id"], row["root"], row["indexed_at"])

    def _project_row(self, root: str) -> dict[str, Any] | None:
        return next(self.db.query("select id, root, indexed_at from code_projects where root = ?", (root,)), None)

    def mark_indexed(self, project: Project) -> None:
        self.db.execute("update code_projects set indexed_at = ? where id = ?", (_now(), project.id))

    def version(self, project: Project) -> int:
        row = self.db.execute("select version from code_projects where id = ?", (project.id,)).fetchone()
        return int(row[0]) if row else -1

    def vectors_version(self, project: Project) -> int:
        row = self.db.execute("select vectors_version from code_projects where id = ?", (project.id,)).fetchone()
        return int(row[0]) if row else -1

    def bump_vectors_version(self, chunk_ids: Sequence[int]) -> None:
        """Say that the vectors of the projects these chunks belong to changed."""
        if not chunk_ids:
            return
        self.db.execute(
            "update code_projects set vectors_version = vectors_version + 1 where id in ("
            " select distinct f.project_id from code_chunks c join code_files f on f.id = c.file_id"
            " where c.id in (select value from json_each(?)))",
            (json_ids(chunk_ids),),
        )

    def _bump(self, project: Project) -> None:
        self.db.execute("update code_projects set version = version + 1 where id = ?", (project.id,))

    # -- files ------------------------------------------------------------------------------------------

    def files(self, project: Project) -> dict[str, StoredFile]:
        rows = self.db.query(
            "select id, path, language, sha, size, mtime_ns from code_files where project_id = ?", (project.id,)
        )
        return {row["path"]: StoredFile(**row) for row in rows}

    def replace_file(
        self,
        project: Project,
        path: str,
        *,
        language: str,
        sha: str,
        size: int,
        mtime_ns: int,
        imports: str,
        chunks: Sequence[Chunk],
        tags: Sequence[StoredTag],
        words_of_chunks: Sequence[str] | None = None,
    ) -> int:
        """Store a file's content as parsed, replacing what it had; its id. `words_of_chunks`: each chunk's
        `chunk_words`, when the caller has them already (computed here otherwise)."""
        with write_transaction(self.db):
            row = self.db.execute(
                "select id, sha from code_files where project_id = ? and path = ?", (project.id, path)
            ).fetchone()
            kept: dict[str, list[tuple[str, int, bytes]]] = {}
            if row is None:
                file_id = self.db.insert(
                    "code_files",
                    {"project_id": project.id, "path": path, "language": language, "sha": sha, "size": size,
                     "mtime_ns": mtime_ns, "imports": imports},
                )
            else:
                file_id = int(row[0])
                # vectors made by another format of chunks are not of the texts vector_text gives now
                if str(row[1]).split(":", 1)[0] == sha.split(":", 1)[0]:
                    kept = self._vectors_by_text(file_id, path)
                self.db.execute("delete from code_chunks where file_id = ?", (file_id,))  # words: trigger
                self.db.execute("delete from code_tags where file_id = ?", (file_id,))
                self.db.execute(
                    "update code_files set language = ?, sha = ?, size = ?, mtime_ns = ?, imports = ? where id = ?",
                    (language, sha, size, mtime_ns, imports, file_id),
                )
            reused = 0
            for position, chunk in enumerate(chunks):
                cursor = self.db.execute(
                    "insert into code_chunks (file_id, start_line, end_line, symbol, kind, signature, text)"
                    " values (?, ?, ?, ?, ?, ?, ?)",
                    (file_id, chunk.start_line, chunk.end_line, chunk.symbol, chunk.kind, chunk.signature,
                     chunk.text),
                )
                for model, dim, vector in kept.pop(chunk.vector_text(imports), ()):
                    self.db.execute("insert into code_vectors (chunk_id, model, dim, vector) values (?, ?, ?, ?)",
                                    (cursor.lastrowid, model, dim, vector))
                    reused += 1
                self.db.execute(
                    "insert into code_chunk_words (rowid, words) values (?, ?)",
                    (cursor.lastrowid,
                     words_of_chunks[position] if words_of_chunks is not None else chunk_words(path, chunk)),
                )
            self.db.conn.executemany(
                "insert into code_tags (file_id, name, role, kind, line, code) values (?, ?, ?, ?, ?, ?)",
                [(file_id, tag.name, tag.role, tag.kind, tag.line, tag.code) for tag in tags],
            )
            self._bump(project)
            if reused:
                self.db.execute("update code_projects set vectors_version = vectors_version + 1 where id = ?",
                                (project.id,))
        return file_id

    def _vectors_by_text(self, file_id: int, path: str) -> dict[str, list[tuple[str, int, bytes]]]:
        """The stored vectors (the sqlite backend's: qdrant keeps its own) of a file's chunks, by the text they
        were made of: a chunk whose text is unchanged by an edit keeps its vectors, wherever it moved."""
        row = self.db.execute("select imports from code_files where id = ?", (file_id,)).fetchone()
        imports = row[0] if row else ""
        kept: dict[str, list[tuple[str, int, bytes]]] = {}
        for symbol, kind, signature, text, model, dim, vector in self.db.execute(
            "select c.symbol, c.kind, c.signature, c.text, v.model, v.dim, v.vector from code_chunks c"
            " join code_vectors v on v.chunk_id = c.id where c.file_id = ? and v.vector is not null",
            (file_id,),
        ):
            key = Chunk(path, 0, 0, symbol, kind, signature, text).vector_text(imports)
            kept.setdefault(key, []).append((model, dim, vector))
        return kept

    def touch_file(self, project: Project, path: str, *, size: int, mtime_ns: int) -> None:
        """The file's content is unchanged (same hash), its stat is new: remember it so it is not read again."""
        self.db.execute(
            "update code_files set size = ?, mtime_ns = ? where project_id = ? and path = ?",
            (size, mtime_ns, project.id, path),
        )

    def forget_files(self, project: Project, paths: Iterable[str]) -> int:
        """Remove these files and everything of theirs; how many there were."""
        paths = list(paths)
        if not paths:
            return 0
        with write_transaction(self.db):
            cursor = self.db.execute(
                "delete from code_files where project_id = ? and path in (select value from json_each(?))",
                (project.id, json_list(paths)),
            )
            removed = cursor.rowcount
            if removed:
                self._bump(project)
        return removed

    def clear(self, project: Project, vectors: ClearsProject | None = None) -> None:
        """Everything the project has (files, chunks, words, tags, vector rows); it is again never indexed.
        `vectors`: the backend to clear as well (qdrant's collections of the project are dropped; without it
        their points are only filtered out, then dropped, as searches come across them)."""
        if vectors is not None:
            vectors.clear(project)
        with write_transaction(self.db):
            self.db.execute("delete from code_files where project_id = ?", (project.id,))
            self.db.execute(
                "update code_projects set indexed_at = null, version = version + 1,"
                " vectors_version = vectors_version + 1 where id = ?",
                (project.id,),
            )

    # -- reading ----------------------------------------------------------------------------------------

    def status(self, project: Project) -> IndexStatus:
        languages = {
            row[0]: int(row[1])
            for row in self.db.execute(
                "select language, count(*) from code_files where project_id = ? group by language", (project.id,)
            )
        }
        chunks = self.db.execute(
            "select count(*) from code_chunks c join code_files f on f.id = c.file_id where f.project_id = ?",
            (project.id,),
        ).fetchone()[0]
        tags = self.db.execute(
            "select count(*) from code_tags t join code_files f on f.id = t.file_id where f.project_id = ?",
            (project.id,),
        ).fetchone()[0]
        embedded = {
            row[0]: int(row[1])
            for row in self.db.execute(
                "select v.model, count(*) from code_vectors v join code_chunks c on c.id = v.chunk_id"
                " join code_files f on f.id = c.file_id where f.project_id = ? group by v.model",
                (project.id,),
            )
        }
        indexed_at = self.db.execute("select indexed_at from code_projects where id = ?", (project.id,)).fetchone()
        return IndexStatus(
            files=sum(languages.values()), chunks=int(chunks), tags=int(tags), embedded=embedded,
            indexed_at=indexed_at[0] if indexed_at else None, languages=languages,
        )

    def lexical(self, project: Project, query_words: list[str], limit: int) -> list[tuple[int, float]]:
        """The project's chunks matching any of the words, best BM25 first; scores higher = better."""
        match = fts_query(query_words)
        if not match or limit <= 0:
            return []
        rows = self.db.execute(
            "select w.rowid, bm25(code_chunk_words) as rank from code_chunk_words w"
            " join code_chunks c on c.id = w.rowid join code_files f on f.id = c.file_id"
            " where code_chunk_words match ? and f.project_id = ? order by rank limit ?",
            (match, project.id, limit),
        )
        return [(int(chunk_id), -float(rank)) for chunk_id, rank in rows]

    def chunks(self, ids: Sequence[int]) -> list[StoredChunk]:
        """The chunks of these ids, in their order (an id no longer stored is left out)."""
        if not ids:
            return []
        rows = self.db.execute(
            f"select {_CHUNK_COLUMNS} from code_chunks c join code_files f on f.id = c.file_id"
            " where c.id in (select value from json_each(?))",
            (json_ids(ids),),
        )
        found = {row[0]: StoredChunk(*row) for row in rows}
        return [found[i] for i in ids if i in found]

    def chunks_of_paths(self, project: Project, paths: Iterable[str]) -> list[StoredChunk]:
        """The chunks of these files, by path and line."""
        rows = self.db.execute(
            f"select {_CHUNK_COLUMNS} from code_chunks c join code_files f on f.id = c.file_id"
            " where f.project_id = ? and f.path in (select value from json_each(?))"
            " order by f.path, c.start_line",
            (project.id, json_list(list(paths))),
        )
        return [StoredChunk(*row) for row in rows]

    def tags(self, project: Project) -> list[StoredTag]:
        rows = self.db.execute(
            "select f.path, t.name, t.role, t.kind, t.line, t.code from code_tags t"
            " join code_files f on f.id = t.file_id where f.project_id = ? order by f.path, t.line",
            (project.id,),
        )
        return [StoredTag(*row) for row in rows]

    def missing_vectors(self, project: Project, model: str, limit: int, *, after: int = 0) -> list[tuple[int, str]]:
        """Up to `limit` of the project's chunks without a vector of `model` (ids above `after`), by id, with
        the text their vectors are made of (`Chunk.vector_text`)."""
        rows = self.db.execute(
            f"select {_CHUNK_COLUMNS}, f.imports from code_chunks c join code_files f on f.id = c.file_id"
            " where f.project_id = ? and c.id > ? and not exists"
            " (select 1 from code_vectors v where v.chunk_id = c.id and v.model = ?)"
            " order by c.id limit ?",
            (project.id, after, model, limit),
        )
        out = []
        for row in rows:
            chunk = Chunk(row[1], row[2], row[3], row[4], row[5], row[6], row[7])
            out.append((int(row[0]), chunk.vector_text(row[9])))
        return out

    def missing_count(self, project: Project, model: str) -> int:
        """How many of the project's chunks have no vector of `model`."""
        return int(self.db.execute(
            "select count(*) from code_chunks c join code_files f on f.id = c.file_id"
            " where f.project_id = ? and not exists"
            " (select 1 from code_vectors v where v.chunk_id = c.id and v.model = ?)",
            (project.id, model),
        ).fetchone()[0])

    def project_of_chunk(self, chunk_id: int) -> Project | None:
        row = next(
            self.db.query(
                "select p.id, p.root, p.indexed_at from code_chunks c join code_files f on f.id = c.file_id"
                " join code_projects p on p.id = f.project_id where c.id = ?",
                (chunk_id,),
            ),
            None,
        )
        return None if row is None else Project(row["id"], row["root"], row["indexed_at"])


def json_ids(ids: Iterable[int]) -> str:
    return "[" + ",".join(str(int(i)) for i in ids) + "]"


def json_list(values: Sequence[str]) -> str:
    import json

    return json.dumps(list(values))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
