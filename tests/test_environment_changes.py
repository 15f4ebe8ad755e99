"""The `<environment>` block kept current from turn to turn: a branch switched in another terminal, a
session continued from another directory; a stat of `.git/HEAD` per turn, never a subprocess."""

from __future__ import annotations

import subprocess
from contextlib import contextmanager
from pathlib import Path

from zeph_cli.agent import workspace
from zeph_cli.context.environment import SEEN_KEY, EnvironmentFacts, noticed, render_environment
from tests.agent_helpers import close_agents  # noqa: F401  (autouse fixture)
from tests.fakes import openai_wire
from tests.test_agent import collect, make_agent


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo, check=True,
                   capture_output=True)


def repo_at(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "a.txt").write_text("a\n")
    git(path, "add", "a.txt")
    git(path, "commit", "-q", "-m", "first")
    return path


def environment_sent(fake_server, index: int = -1) -> str:
    messages = fake_server.requests_to("/v1/chat/completions")[index].json["messages"]
    text = "\n".join(m["content"] for m in messages if m["role"] == "system" and isinstance(m["content"], str))
    start = text.index("<environment>\nworking_directory")
    return text[start:text.index("</environment>", start)]


@contextmanager
def counted(monkeypatch):
    """Count the subprocesses started and the HEAD files read inside the block."""
    counts = {"processes": 0, "head_reads": 0}
    real_init, real_read = subprocess.Popen.__init__, workspace.read_head

    def popen(self, *args, **kwargs):
        counts["processes"] += 1
        real_init(self, *args, **kwargs)

    def read_head(path):
        counts["head_reads"] += 1
        return real_read(path)

    with monkeypatch.context() as patch:
        patch.setattr(subprocess.Popen, "__init__", popen)
        patch.setattr(workspace, "read_head", read_head)
        yield counts


def reply(fake_server, n: int = 1) -> None:
    for _ in range(n):
        fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["ok"])))


async def test_a_branch_switched_in_another_terminal_is_said_on_the_next_turn_only(fake_server, tmp_path, monkeypatch):
    repo = repo_at(tmp_path / "repo")
    reply(fake_server, 4)
    agent = make_agent(fake_server, repo)
    conversation = agent.new_conversation("work")
    await collect(agent, conversation, "one")
    assert "git_branch: main\n" in environment_sent(fake_server) + "\n"
    git(repo, "checkout", "-q", "-b", "feature-x")  # the user, in another terminal
    with counted(monkeypatch) as counts:
        await collect(agent, conversation, "two")
        assert counts == {"processes": 0, "head_reads": 1}
        assert "git_branch: feature-x (switched from main since the last turn)" in environment_sent(fake_server)
        await collect(agent, conversation, "three")
        await collect(agent, conversation, "four")
        assert counts == {"processes": 0, "head_reads": 1}  # two more turns: a stat each, no read
    third, fourth = environment_sent(fake_server, 2), environment_sent(fake_server, 3)
    assert "git_branch: feature-x\n" in third + "\n" and "since the last turn" not in third
    assert third == fourth  # the cached prefix stays the same while nothing changes
    stored = agent.store.get_conversation(conversation.id).metadata[SEEN_KEY]
    assert stored == {"working_directory": str(repo), "git_branch": "feature-x"}


async def test_detached_head_and_a_worktree_are_followed(fake_server, tmp_path):
    repo = repo_at(tmp_path / "repo")
    reply(fake_server, 2)
    agent = make_agent(fake_server, repo)
    conversation = agent.new_conversation("work")
    await collect(agent, conversation, "one")
    git(repo, "checkout", "-q", "--detach")
    await collect(agent, conversation, "two")
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout[:7]
    assert f"git_branch: detached at {sha} (switched from main since the last turn)" in environment_sent(fake_server)

    # Still detached, at a new commit (a rebase or bisect step): the block says where, without a note.
    (repo / "a.txt").write_text("b\n")
    git(repo, "commit", "-q", "-am", "second")
    reply(fake_server, 2)
    await collect(agent, conversation, "three")
    moved = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout[:7]
    assert moved != sha and f"git_branch: detached at {moved}\n" in environment_sent(fake_server) + "\n"
    assert "since the last turn" not in environment_sent(fake_server)
    git(repo, "checkout", "-q", "main")  # back on a branch: said
    await collect(agent, conversation, "four")
    assert f"git_branch: main (switched from detached at {moved} since the last turn)" in environment_sent(fake_server)

    git(repo, "worktree", "add", "-q", "-b", "wt-branch", str(tmp_path / "wt"))  # `.git` there is a file
    watch = workspace.HeadWatch(tmp_path / "wt")
    assert watch.branch() == "wt-branch"
    git(tmp_path / "wt", "checkout", "-q", "-b", "wt-next")
    assert watch.branch() == "wt-next"


async def test_continuing_from_another_directory_or_branch_says_what_the_session_last_saw(fake_server, tmp_path):
    first_dir = repo_at(tmp_path / "one")
    other_dir = repo_at(tmp_path / "two")
    git(other_dir, "checkout", "-q", "-b", "topic")
    reply(fake_server, 3)
    first = make_agent(fake_server, first_dir)
    conversation = first.new_conversation("work")
    await collect(first, conversation, "one")
    second = make_agent(fake_server, other_dir)  # as `zeph ask --session N` run in another directory would be
    await collect(second, second.store.get_conversation(conversation.id), "two")
    sent = environment_sent(fake_server)
    assert f"working_directory: {other_dir} (changed from {first_dir} since the last turn)" in sent
    assert "git_branch: topic (switched from main since the last turn)" in sent
    await collect(second, second.store.get_conversation(conversation.id), "three")
    assert "since the last turn" not in environment_sent(fake_server)


async def test_a_session_stored_before_it_remembered_compares_with_the_directory_it_started_in(fake_server, tmp_path):
    reply(fake_server, 1)
    agent = make_agent(fake_server, tmp_path)
    conversation = agent.store.create_conversation(provider="compatible", model="gpt-4o", cwd="/elsewhere", title="old")
    await collect(agent, conversation, "hi")
    sent = environment_sent(fake_server)
    assert f"working_directory: {tmp_path} (changed from /elsewhere since the last turn)" in sent
    assert "git_branch" not in sent  # not a repository, and no branch was known


def test_the_block_says_changes_and_nothing_else():
    now = EnvironmentFacts("/a", "linux", "feature-x", "m")
    assert noticed(now, None) == now and noticed(now, now.seen()) == now
    gone = noticed(EnvironmentFacts("/a", "linux", None, "m"), {"working_directory": "/a", "git_branch": "main"})
    assert "git_branch: none (it was main at the last turn)" in render_environment(gone)
    new_repo = noticed(now, {"working_directory": "/a", "git_branch": None})
    assert render_environment(new_repo) == render_environment(now)
    stepped = noticed(EnvironmentFacts("/a", "linux", "detached at 1234567", "m"),
                      {"working_directory": "/a", "git_branch": "detached at abcdef0"})
    assert stepped.previous_branch is None and "git_branch: detached at 1234567\n" in render_environment(stepped)
    left = noticed(EnvironmentFacts("/a", "linux", "detached at 1234567", "m"), now.seen())
    assert left.previous_branch == "feature-x"


def test_zeph_ask_c_from_another_branch_then_another_directory(fake_server, compatible, tmp_path):
    from tests.cli_helpers import err, run_zeph

    repo = repo_at(tmp_path / "repo")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    reply(fake_server, 4)
    assert run_zeph("ask", "one", env=compatible, cwd=repo).returncode == 0
    git(repo, "checkout", "-q", "-b", "feature-x")
    second = run_zeph("ask", "-c", "two", env=compatible, cwd=repo)
    assert second.returncode == 0, err(second)
    assert "git_branch: feature-x (switched from main since the last turn)" in environment_sent(fake_server)
    third = run_zeph("ask", "-c", "three", env=compatible, cwd=elsewhere)
    assert third.returncode == 0, err(third)
    sent = environment_sent(fake_server)
    assert f"working_directory: {elsewhere} (changed from {repo} since the last turn)" in sent
    assert "git_branch: none (it was feature-x at the last turn)" in sent
    assert run_zeph("ask", "-c", "four", env=compatible, cwd=elsewhere).returncode == 0
    assert "since the last turn" not in environment_sent(fake_server)
