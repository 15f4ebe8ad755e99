"""Reading the user's workspace: ZEPH.md files, git branch, OS.

Invariant: the only file-system reads behind the context layers live here, and
they run once per process (at agent start); git is read from `.git` files
directly, never by spawning a process.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

from ..context.environment import EnvironmentFacts
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


def git_branch(cwd: Path) -> str | None:
    """The checked-out branch (or `detached at <sha>`), read from `.git/HEAD`."""
    git_dir = _git_dir(cwd.resolve())
    if git_dir is None:
        return None
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if head.startswith("ref:"):
        ref = head.split(":", 1)[1].strip()
        return ref.removeprefix("refs/heads/")
    return f"detached at {head[:7]}" if head else None


def environment_facts(cwd: Path, model: str) -> EnvironmentFacts:
    return EnvironmentFacts(str(cwd), os_name(), git_branch(cwd), model)


@dataclass
class Workspace:
    """Facts about where the agent runs, gathered once per process."""

    environment: EnvironmentFacts
    project: ProjectContext
    warnings: list[str] = field(default_factory=list)
    prompts: dict[str, PromptModule] = field(default_factory=lambda: load_prompt_modules(None, None)[0])
