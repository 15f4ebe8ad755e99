"""Where a command runs and what the paths it names resolve to.

Invariant: a path only known at run time (a variable, a substitution, `~+`
after an unknown `cd`) is None, never guessed; the only I/O is `realpath` and
the password database.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..shell_syntax import SimpleCommand

try:
    import pwd
except ImportError:  # pragma: no cover - not POSIX
    pwd = None  # type: ignore[assignment]

FS_ROOT = Path("/")


@dataclass(frozen=True)
class Where:
    """Where a command runs: its directory, the allowed roots (workspace first), the home directory."""

    cwd: Path
    roots: tuple[Path, ...]
    home: Path
    nesting: int = 0  # interpreter code checked as shell commands, to bound the recursion

    @classmethod
    def of(cls, cwd: Path, workspace: Sequence[Path], home: Path) -> Where:
        real_cwd = Path(os.path.realpath(cwd))
        roots = tuple(Path(os.path.realpath(Path(root).expanduser())) for root in workspace) or (real_cwd,)
        return cls(real_cwd, roots, Path(os.path.realpath(home)))

    @property
    def root(self) -> Path:
        return self.roots[0]

    def inside(self, path: Path) -> bool:
        return any(path == root or path.is_relative_to(root) for root in self.roots)

    def outside_text(self) -> str:
        if len(self.roots) == 1:
            return f"outside the workspace {self.root}"
        return f"outside the workspace {self.root} and the allowed directories"

    def base(self, command: SimpleCommand) -> Path | None:
        """The directory `command` runs in, following earlier cd/pushd; None when unknown."""
        base: Path | None = self.cwd
        for entry in command.cd_path:
            path = None if entry is None or base is None else self.expand(entry, base)
            base = None if path is None else real(path, follow_last=True)
            if base is None:
                return None
        return base

    def expand(self, word: str, base: Path | None) -> str | None:
        """`word` as an absolute path (~, $HOME and $PWD expanded), or None when only known at run time."""
        word = word.split("\x00", 1)[0]
        match = _HOME_OR_PWD.match(word)
        if match:
            if (match.group(1) or match.group(2)) == "HOME":
                word = str(self.home) + word[match.end():]
            elif base is None:
                return None
            else:
                word = str(base) + word[match.end():]
        elif word.startswith("~"):
            user, slash, rest = word[1:].partition("/")
            head = self._tilde(user, base)
            if head is None:
                return None
            word = head + slash + rest
        if any(marker in word for marker in ("$", "`", "<(", ">(")):
            return None
        if not word.startswith("/"):
            if base is None:
                return None
            word = f"{base}/{word}"
        return _squash(word)

    def _tilde(self, user: str, base: Path | None) -> str | None:
        if user == "":
            return str(self.home)
        if user == "+":
            return None if base is None else str(base)
        if user == "-" or pwd is None:
            return None
        try:
            return pwd.getpwnam(user).pw_dir
        except (KeyError, ValueError, OSError):
            return f"/home/{user}"  # an unknown user's home: judged like one, never as a relative name

    def locate(self, word: str, command: SimpleCommand, follow_last: bool = True) -> Path | None:
        path = self.expand(word, self.base(command))
        return None if path is None else real(path, follow_last or path.endswith("/"))


_HOME_OR_PWD = re.compile(r"\$(?:(HOME|PWD)(?![A-Za-z0-9_])|\{(HOME|PWD)\})")
_GLOB_COMPONENT = re.compile(r"[*?\[]|[!@+*?]\(")


def _squash(path: str) -> str:
    return "/" + path.lstrip("/") if path.startswith("//") else path


def real(path: str, follow_last: bool) -> Path | None:
    """The real path; with `follow_last` False a final symlink is the link itself (as rm treats it)."""
    path = _squash(path)
    try:
        if follow_last or path.endswith("/"):
            return Path(os.path.realpath(path))
        head, tail = os.path.split(path)
        if tail in ("", ".", ".."):
            return Path(os.path.realpath(path))
        return Path(os.path.realpath(head or "/")) / tail
    except (OSError, ValueError):
        return None


def glob_prefix(path: str) -> tuple[str, bool]:
    """For a glob, the directory whose entries it can match and True; else (path, False).

    `/*` → ("/", True); `../*` → (parent, True); `*/..` names the prefix itself
    (False) and `*/../..` its parent.
    """
    parts = path.split("/")
    for index, part in enumerate(parts):  # noqa: B007 — the index the loop breaks at is read after it
        if _GLOB_COMPONENT.search(part):
            break
    else:
        return path, False
    prefix = "/".join(parts[:index]) or "/"
    depth = lowest = 1
    for part in parts[index + 1:]:
        if part == "..":
            depth -= 1
        elif part not in ("", "."):
            depth += 1
        lowest = min(lowest, depth)
    if lowest >= 1:
        return prefix, True
    for _ in range(1 - lowest):
        prefix = os.path.dirname(prefix.rstrip("/")) or "/"
    return prefix, False


def path_candidates(word: str, command: SimpleCommand, where: Where) -> list[str]:
    """The absolute path as written and as resolved (symlinks followed)."""
    path = where.expand(word, where.base(command))
    if path is None:
        return []
    found = [os.path.normpath(path)]
    resolved = real(path, follow_last=True)
    if resolved is not None:
        found.append(str(resolved))
    return found
