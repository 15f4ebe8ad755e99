"""Reading the user's workspace: ZEPH.md files, git branch, OS.

Invariant: the only file-system reads behind the context layers live here, and
they run once per process (at agent start), except the git branch: each turn
stats `.git/HEAD` and reads it only when the stat changed. Git is read from
`.git` files directly, never by spawning a process.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..context.environment import DETACHED, EnvironmentFacts, noticed
from ..context.project import ProjectContext, ProjectFile
from ..context.prompt_modules import PromptModule
from ..errors import ZephError
from .prompt_files import load_prompt_modules
from ..config.user_text import UnusableText, read_user_text

PROJECT_FILE_NAMES = ("ZEPH.md", "ZEPH.local.md", ".zeph/config.md")
MAX_PROJECT_FILE_BYTES = 1_000_000


def current_directory() -> Path:
    """The working directory; a `ZephError` naming it when it no longer exists (deleted under the shell)."""
    try:
        return Path(os.getcwd())
    except OSError as exc:
        shown = os.environ.get("PWD") or "the current directory"
        raise ZephError(
            f"the working directory {shown} cannot be used ({exc.strerror or exc}; was it deleted?): "
            "cd to an existing directory and run zeph again"
        ) from None


def os_name() -> str:
    system = platform.system().lower()
    return {"darwin": "macos"}.get(system, system or "unknown")


def _read_text(path: Path, warnings: list[str]) -> str | None:
    try:
        return read_user_text(path, MAX_PROJECT_FILE_BYTES)
    except UnusableText as problem:
        warnings.append(f"{path}: {problem.reason}, not used as project context")
        return None


def find_project_files(cwd: Path, global_file: Path | None) -> tuple[list[ProjectFile], list[str]]:
    """Project-context files in spec order: the global file, then each directory
    from the filesystem root down to `cwd` (ZEPH.md, ZEPH.local.md, .zeph/config.md)."""
    warnings: list[str] = []
    found: list[ProjectFile] = []
    candidates: list[Path] = []
    if global_file is not None:
        candidates.append(global_file)
    cwd = cwd.resolve()
    for directory in reversed([cwd, *cwd.parents]):
        candidates.extend(directory / name for name in PROJECT_FILE_NAMES)
    seen: set[Path] = set()
    for path in candidates:
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        text = _read_text(path, warnings)
        if text is not None:
            found.append(ProjectFile(str(path), text))
    return found, warnings


def _git_dir(start: Path) -> Path | None:
    for directory in [start, *start.parents]:
        dot_git = directory / ".git"
        if dot_git.is_dir():
            return dot_git
        if dot_git.is_file():  # worktree or submodule: "gitdir: <path>"
            try:
                line = dot_git.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError):
                return None
            if line.startswith("gitdir:"):
                target = Path(line.split(":", 1)[1].strip())
                return target if target.is_absolute() else (directory / target).resolve()
            return None
    return None


def read_head(head_file: Path) -> str | None:
    """The branch a HEAD file names (or `detached at <sha>`); None when it cannot be read."""
    try:
        head = head_file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if head.startswith("ref:"):
        ref = head.split(":", 1)[1].strip()
        return ref.removeprefix("refs/heads/")
    return f"{DETACHED}{head[:7]}" if head else None


def git_branch(cwd: Path) -> str | None:
    """The checked-out branch (or `detached at <sha>`), read from `.git/HEAD`."""
    return HeadWatch(cwd).branch()


class HeadWatch:
    """The branch checked out under `cwd`, kept current cheaply: `branch()` stats the HEAD file and reads it
    only when its stat changed (a checkout replaces the file); outside a repository it looks for `.git` again
    (a few stats), so a `git init` later is seen. Never a subprocess."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd.resolve()
        self._head: Path | None = None
        self._stat: tuple[int, int, int] | None = None
        self._branch: str | None = None

    def branch(self) -> str | None:
        if self._head is None:
            git_dir = _git_dir(self.cwd)
            if git_dir is None:
                return None
            self._head = git_dir / "HEAD"
        try:
            stat = os.stat(self._head)
        except OSError:  # the repository is gone (or HEAD moved): find it again next time
            self._head, self._stat, self._branch = None, None, None
            return None
        key = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        if key != self._stat:
            self._stat, self._branch = key, read_head(self._head)
        return self._branch


def environment_facts(cwd: Path, model: str, head: HeadWatch) -> EnvironmentFacts:
    return EnvironmentFacts(str(cwd), os_name(), head.branch(), model)


@dataclass
class Workspace:
    """Facts about where the agent runs, gathered once per process."""

    environment: EnvironmentFacts
    project: ProjectContext
    warnings: list[str] = field(default_factory=list)
    prompts: dict[str, PromptModule] = field(default_factory=lambda: load_prompt_modules(None, None)[0])
    head: HeadWatch | None = None  # keeps `environment`'s branch current from turn to turn

    def refresh_environment(self, seen: object, cwd_at_start: str | None = None) -> EnvironmentFacts:
        """The environment as it is now (the branch from a stat of `.git/HEAD`), with what changed since the
        session last saw it (`seen`, its metadata under `SEEN_KEY`); it becomes `environment`."""
        facts = self.environment
        if self.head is not None:
            facts = replace(facts, git_branch=self.head.branch())
        self.environment = noticed(facts, seen, cwd_at_start)
        return self.environment
