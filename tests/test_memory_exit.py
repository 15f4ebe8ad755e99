"""A process that ends while the embedder works on a background thread ends cleanly.

onnxruntime (the default embedder's runtime) aborts the whole process ("terminate called without an active
exception", exit 134) when the interpreter finalizes while a daemon thread is inside it. This runs a real
process with the real default embedder on a real database and ends it mid-batch (the same wait covers a
process that ends while the embedder loads: the summary worker with no session to summarize did, 3 times in
10)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.vector_helpers import add_conversation, open_store

SCRIPT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from zeph_cli.config import Config
    from zeph_cli.features.memory.embedders.select import embedder_for
    from zeph_cli.features.memory.service import MemoryService
    from zeph_cli.features.memory.vectors import open_index
    from zeph_cli.store import open_database

    config = Config()
    db = open_database(Path(sys.argv[1]))
    service = MemoryService(config, db, project_root=Path("."), make_embedder=lambda: embedder_for(config, None),
                            make_index=lambda d, p: open_index(config, d if d is not None else db, p))
    service.index_in_background(0)  # loads the embedder, then embeds every message, batch by batch
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not db.execute("select count(*) from message_vectors").fetchone()[0]:
        time.sleep(0.01)
    time.sleep(0.05)  # inside a later batch
    print(db.execute("select count(*) from message_vectors").fetchone()[0], flush=True)
""")


def run(db_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", SCRIPT, str(db_path)], capture_output=True, text=True, timeout=180)


def test_ending_while_messages_are_embedded_waits_for_the_batch_and_exits_cleanly(tmp_path):
    db_path = tmp_path / "zeph.db"
    store = open_store(db_path)
    add_conversation(store, 3000, text="the staging database on the shared host listens on port")
    store.close()
    for _ in range(2):
        result = run(db_path)
        assert result.returncode == 0, result.stderr[-2000:]
        assert "terminate called" not in result.stderr
    stored = open_store(db_path).db.execute("select count(*) from message_vectors").fetchone()[0]
    assert 0 < stored < 3000  # stopped after a batch: the rest is left to the next turn or zeph memory reindex

