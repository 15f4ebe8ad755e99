"""Where skills live: the folders to read, in order of precedence.

Invariant: pure path arithmetic (nothing is read; `places_for` only finds the project root). The list runs from lowest to
highest precedence: `[skills] paths` (or the user's config dir's `skills/` when
`paths` is empty), then the project's `.zeph/skills/`; a later folder's skill
wins over an earlier one of the same name, so project skills override user skills.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from ...config import SkillsConfig
from ...paths import config_dir

if TYPE_CHECKING:
    from .model import SkillSource

PROJECT_SKILLS = Path(".zeph") / "skills"


@dataclass(frozen=True)
class SkillFolder:
    """A folder skills are read from, and where it comes from."""
    path: Path
    source: SkillSource


def user_skills_dir(env: Mapping[str, str] | None = None) -> Path:
    """The user's own skills: the config dir's `skills/`."""
    return config_dir(env) / "skills"


class Places(TypedDict):
    project_root: Path | None
    user_dir: Path
    base_dir: Path | None


def places_for(loaded, env: Mapping[str, str], cwd: Path) -> Places:
    """Where a session started in `cwd` under `loaded` (a LoadedConfig) looks for skills: the
    `skill_folders` arguments besides the config (its project, the user's skills, the config's folder)."""
    from ...tools.confinement import workspace_root

    return {
        "project_root": workspace_root(cwd),
        "user_dir": user_skills_dir(env),
        "base_dir": loaded.path.parent if loaded.path else None,
    }


def skill_folders(
    config: SkillsConfig, *, project_root: Path | None, user_dir: Path, base_dir: Path | None
) -> list[SkillFolder]:
    """The folders to read, lowest precedence first; relative `paths` are taken from `base_dir`
    (the config file's folder), `~` is expanded."""
    folders: list[SkillFolder] = []
    if config.paths:
        for entry in config.paths:
            path = Path(entry).expanduser()
            if not path.is_absolute():
                path = (base_dir or Path.cwd()) / path
            folders.append(SkillFolder(path, "user" if path == user_dir else "config path"))
    else:
        folders.append(SkillFolder(user_dir, "user"))
    if project_root is not None:
        folders.append(SkillFolder(project_root / PROJECT_SKILLS, "project"))
    unique: dict[Path, SkillFolder] = {}
    for folder in folders:  # a folder named twice counts once, at its last (highest) place
        unique.pop(folder.path, None)
        unique[folder.path] = folder
    return list(unique.values())
