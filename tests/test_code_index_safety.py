"""What the code index never reads or gives out: files outside the project (through links), credentials,
names it cannot store, the home folder; secrets in the code it gives out are redacted."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path


from zeph_cli.config import Config
from zeph_cli.features.code_index.build import update
from zeph_cli.features.code_index.scan import IndexSettings
from zeph_cli.features.code_index.service import CodeIndex, project_root_for
from zeph_cli.features.code_index.store import CodeStore
from zeph_cli.store import open_database
from zeph_cli.tokens import default_counter

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # the shape of a GitHub token (not a real one)


def git_project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root.resolve()


def commit(root: Path) -> None:
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"],
                   check=True)


def stored_paths(tmp_path: Path, root: Path) -> tuple[set[str], dict[str, int]]:
    store = CodeStore(open_database(tmp_path / "zeph.db"))
    report = update(store, root, settings=IndexSettings())
    project = store.project(root)
    assert project is not None
    return set(store.files(project)), report.skipped


def test_a_folder_swapped_for_a_link_outside_the_project_is_not_read(tmp_path):
    root = git_project(tmp_path)
    (root / "d").mkdir()
    (root / "d" / "x.py").write_text("def inside():\n    return 1\n")
    (root / "ok.py").write_text("def fine():\n    return 2\n")
    commit(root)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.py").write_text("OUTSIDE_SECRET = 'never indexed'\n")
    for child in (root / "d").iterdir():
        child.unlink()
    (root / "d").rmdir()
    (root / "d").symlink_to(outside, target_is_directory=True)  # git still lists d/x.py
    paths, skipped = stored_paths(tmp_path, root)
    assert paths == {"ok.py"}
    assert skipped.get("unreadable") == 1


def test_credentials_are_never_read(tmp_path):
    root = git_project(tmp_path)
    files = {".env": "API_KEY=abc\n", ".env.example": "API_KEY=\n", ".aws/credentials": "[default]\n",
             ".config/gh/hosts.yml": "oauth_token: x\n", "keys/server.pem": "-----BEGIN-----\n",
             "config/secrets.yaml": "password: x\n", "app/password_reset.py": "def reset():\n    return 1\n"}
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    paths, skipped = stored_paths(tmp_path, root)
    assert paths == {".env.example", "app/password_reset.py"}
    assert skipped["secret"] == 5


def test_a_name_that_is_not_utf8_is_skipped_and_the_rest_indexed(tmp_path):
    root = git_project(tmp_path)
    (root / "ok.py").write_text("def fine():\n    return 2\n")
    with open(os.path.join(os.fsencode(root), b"caf\xe9.py"), "wb") as handle:
        handle.write(b"def other():\n    return 3\n")
    paths, skipped = stored_paths(tmp_path, root)
    assert paths == {"ok.py"} and skipped["bad name"] == 1


def test_secrets_in_indexed_code_are_redacted_in_searches_and_the_map(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEPH_HOME", str(tmp_path / "home"))
    root = git_project(tmp_path)
    (root / "settings.py").write_text(f'GITHUB_TOKEN = "{TOKEN}"\n\n\ndef github_client():\n    return GITHUB_TOKEN\n')
    path = tmp_path / "zeph.db"
    index = CodeIndex(Config(), open_database(path), path, root)
    try:
        assert index.build_now(embed=False) is not None
        hits = asyncio.run(index.search("github token client", 5))
        assert hits and all(TOKEN not in hit.text for hit in hits)
        assert any("[REDACTED]" in hit.text for hit in hits)
        shown = asyncio.run(index.repo_map(identifiers={"GITHUB_TOKEN"}, budget_tokens=300,
                                           count_tokens=default_counter().count))
        assert shown is not None and "GITHUB_TOKEN" in shown.text and TOKEN not in shown.text
    finally:
        index.close()


def test_the_home_folder_is_never_a_project(tmp_path, monkeypatch):
    home = git_project(tmp_path)  # a dotfiles repository makes the home a work tree
    monkeypatch.setenv("HOME", str(home))
    (home / "src").mkdir()
    assert project_root_for(Config(), home / "src", {}) is None
    assert project_root_for(Config(), home, {"index.enabled": "env ZEPH_INDEX_ENABLED"}) is None
    project = git_project(home / "src")
    assert project_root_for(Config(), project, {}) == project
