"""Workspace confinement: which paths the file tools may touch.

Invariant: a path is allowed only if, fully resolved (`~`, `..` and every
symlink followed), it lies inside the workspace root or one of the extra
allowed directories, and not in a hidden path (a secret store or zeph's own
files, even inside the workspace); everything else is refused with a message naming the
path and the root; a path that cannot be resolved (a link the kernel will
not follow) is refused the same way. Pure path logic: no file is read or written here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from .failures import PathOutsideWorkspace


class Confinement:
    """`hidden` gives the paths inside the roots that the tools must not touch at all (secret stores,
    zeph's own files); it is asked once, when a path is first resolved. `read_only` gives those they may
    read but not write (`check_write`), asked on each write (a `.git` may appear)."""

    def __init__(
        self, root: Path, extra: Sequence[Path] = (), *, cwd: Path | None = None,
        hidden: Callable[[], Sequence[Path]] | None = None,
        read_only: Callable[[], Sequence[Path]] | None = None,
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self.extra = tuple(Path(os.path.realpath(Path(p).expanduser())) for p in extra)
        self._hidden_source = hidden
        self._hidden: tuple[Path, ...] | None = None
        self._read_only_source = read_only
        # Paths are shown relative to where the user works (which may be below the root).
        self.cwd = Path(os.path.realpath(cwd)) if cwd is not None else self.root

    @property
    def allowed(self) -> tuple[Path, ...]:
        return (self.root, *self.extra)

    def contains(self, path: Path) -> bool:
        try:
            resolved = Path(os.path.realpath(path))
        except OSError:
            return False  # a path that cannot even be resolved is not known to be inside
        return any(resolved == base or resolved.is_relative_to(base) for base in self.allowed)

    def resolve(self, raw: str, base: Path) -> Path:
        """The real absolute path `raw` names (relative to `base`), if it is allowed."""
        if "\x00" in raw:
            raise PathOutsideWorkspace(f"path {raw!r} contains a NUL byte")
        candidate = Path(raw).expanduser()
        if not candidate.is_absolute():
            candidate = base / candidate
        try:
            resolved = Path(os.path.realpath(candidate))
        except OSError as exc:  # e.g. /proc/1/cwd/x: the kernel refuses to follow the link
            raise PathOutsideWorkspace(
                f"{raw} cannot be resolved ({exc.strerror or exc}), so it is not known to be inside the workspace "
                f"{self.root}; access refused"
            ) from None
        if not any(resolved == b or resolved.is_relative_to(b) for b in self.allowed):
            where = f"the workspace {self.root}"
            if self.extra:
                where += " or tools.allowed_paths (" + ", ".join(str(p) for p in self.extra) + ")"
            via = f" (it resolves to {resolved})" if str(resolved) != str(candidate) else ""
            raise PathOutsideWorkspace(f"{raw} is outside {where}{via}; access refused")
        secret = next((h for h in self.hidden if resolved == h or resolved.is_relative_to(h)), None)
        if secret is not None:
            raise PathOutsideWorkspace(
                f"{raw} is in {secret}, which is hidden from tools (a secret store or zeph's own files); access refused. "
                "The user can list it in [tools.sandbox] allow_read"
            )
        return resolved

    def check_write(self, path: Path, raw: str) -> None:
        """Refuse writing `path` (resolved) when it is one of the files that run or speak later, outside the
        sandbox: a git directory's config and hooks, `.zeph/`, shell startup files when the home is a root."""
        guarded = tuple(self._read_only_source()) if self._read_only_source is not None else ()
        base = next((g for g in guarded if path == g or path.is_relative_to(g)), None)
        if base is not None:
            raise PathOutsideWorkspace(
                f"{raw} is in {base}, which the tools may not change (git or zeph would run or obey it later); "
                "write refused. The user can change it themselves"
            )

    @property
    def hidden(self) -> tuple[Path, ...]:
        if self._hidden is None:
            self._hidden = tuple(self._hidden_source()) if self._hidden_source is not None else ()
        return self._hidden

    def display(self, path: Path) -> str:
        """A path as the model should see it: relative to the working directory when
        inside the workspace (`../x` for a file above it), absolute otherwise."""
        if not (path == self.root or path.is_relative_to(self.root)):
            return str(path)
        return os.path.relpath(path, self.cwd)


def workspace_root(cwd: Path) -> Path:
    """The git work tree containing `cwd`, else `cwd` itself."""
    cwd = Path(os.path.realpath(cwd))
    for directory in [cwd, *cwd.parents]:
        if (directory / ".git").exists():
            return directory
    return cwd
