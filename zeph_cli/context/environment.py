"""The `<environment>` block: where the agent is running and with which model.

Invariant: pure formatting of facts the caller gathered (and compared with
what the session last saw); no file, process or network access here. The
block changes only when its facts do: a branch switch or a new working
directory is said in one line on the turn that first sees it (a detached HEAD
moving to another commit is not: the block shows the commit it is at).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

# Conversation metadata: the working directory and branch the session's last turn saw.
SEEN_KEY = "environment_seen"
DETACHED = "detached at "  # how `git_branch` states a detached HEAD: "detached at <sha>"


@dataclass(frozen=True)
class EnvironmentFacts:
    """The facts the <environment> block states."""
    working_directory: str
    os: str
    git_branch: str | None
    model: str
    # What the session's previous turn saw, set only when it differs (the turn that notices the change).
    previous_directory: str | None = None
    previous_branch: str | None = None

    def with_model(self, model: str) -> "EnvironmentFacts":
        return replace(self, model=model)

    def seen(self) -> dict[str, str | None]:
        """What a session remembers of these facts (its metadata under `SEEN_KEY`)."""
        return {"working_directory": self.working_directory, "git_branch": self.git_branch}


def noticed(facts: EnvironmentFacts, seen: object, cwd_at_start: str | None = None) -> EnvironmentFacts:
    """`facts` with the changes since the session last saw them (`seen`: its metadata under `SEEN_KEY`; None
    for a session's first turn). A session stored before it remembered anything falls back to the directory
    it started in (`cwd_at_start`), and its branch is not known."""
    if isinstance(seen, dict):
        before_dir, before_branch = seen.get("working_directory"), seen.get("git_branch")
        branch_known = True
    else:
        before_dir, before_branch, branch_known = cwd_at_start, None, False
    facts = replace(facts, previous_directory=None, previous_branch=None)
    if isinstance(before_dir, str) and before_dir and before_dir != facts.working_directory:
        facts = replace(facts, previous_directory=before_dir)
    if branch_known and isinstance(before_branch, str) and before_branch != facts.git_branch \
            and not (_detached(before_branch) and _detached(facts.git_branch)):
        # A detached HEAD moving on (a rebase or bisect commits at every step) is not said: the block states
        # where it is now, and a one-turn note would change the cached prompt prefix twice per step.
        facts = replace(facts, previous_branch=before_branch)
    return facts


def _detached(branch: str | None) -> bool:
    return branch is not None and branch.startswith(DETACHED)


def render_environment(facts: EnvironmentFacts) -> str:
    directory = f"working_directory: {facts.working_directory}"
    if facts.previous_directory:
        directory += f" (changed from {facts.previous_directory} since the last turn)"
    lines = ["<environment>", directory, f"os: {facts.os}"]
    if facts.git_branch:
        branch = f"git_branch: {facts.git_branch}"
        if facts.previous_branch:
            branch += f" (switched from {facts.previous_branch} since the last turn)"
        lines.append(branch)
    elif facts.previous_branch:
        lines.append(f"git_branch: none (it was {facts.previous_branch} at the last turn)")
    lines.append(f"model: {facts.model}")
    lines.append("</environment>")
    return "\n".join(lines)
