"""The skills in a list of folders, kept current cheaply.

Invariant: `refresh()` returns every loadable skill by name (a later folder's
skill replacing an earlier one of the same name) and re-reads a SKILL.md only
when its (mtime, size) signature changed or it appeared; a skill whose file or
folder is gone disappears. A folder is either a skill itself (it holds a
SKILL.md) or a folder of skill folders. Files that cannot be loaded give
one warning line each, in `problems`, until they change or go.
"""

from __future__ import annotations

import os
import stat as stat_kind
from collections.abc import Sequence
from pathlib import Path

from .folders import SkillFolder
from .loader import SKILL_FILE, SkillFileError, load_skill_file
from .model import Skill

Signature = tuple[int, int]  # (mtime_ns, size)


class SkillCatalog:
    def __init__(self, folders: Sequence[SkillFolder], *, scan: bool = True) -> None:
        self.folders = list(folders)
        self.scan = scan
        self._loaded: dict[Path, tuple[Signature, Skill | str]] = {}  # SKILL.md → (signature, skill or fault)
        self.reads = 0  # SKILL.md files parsed so far (what the change check saves)

    def refresh(self) -> tuple[dict[str, Skill], list[str]]:
        """(skills by name, one line per file that could not be loaded)."""
        seen: dict[Path, tuple[Signature, SkillFolder]] = {}
        for folder in self.folders:
            for file, signature in _skill_files(folder.path):
                seen[file] = (signature, folder)
        for gone in set(self._loaded) - set(seen):
            del self._loaded[gone]
        skills: dict[str, Skill] = {}
        problems: list[str] = []
        for file, (signature, folder) in seen.items():
            cached = self._loaded.get(file)
            if cached is None or cached[0] != signature:
                cached = (signature, self._read(file, folder))
                self._loaded[file] = cached
            loaded = cached[1]
            if isinstance(loaded, str):
                problems.append(loaded)
            else:
                skills.pop(loaded.name, None)
                skills[loaded.name] = loaded
        return skills, problems

    def _read(self, file: Path, folder: SkillFolder) -> Skill | str:
        self.reads += 1
        try:
            return load_skill_file(file, folder.source, scan_body=self.scan)
        except SkillFileError as exc:
            return str(exc)


def _skill_files(root: Path) -> list[tuple[Path, Signature]]:
    """The SKILL.md files `root` holds (itself, or one level of skill folders), with their signatures."""
    own = _signature(root / SKILL_FILE)
    if own is not None:
        return [(root / SKILL_FILE, own)]
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return []
    found = []
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        file = Path(entry.path) / SKILL_FILE
        signature = _signature(file)
        if signature is not None:
            found.append((file, signature))
    return found


def _signature(file: Path) -> Signature | None:
    try:
        stat = file.stat()
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size) if stat_kind.S_ISREG(stat.st_mode) else None
