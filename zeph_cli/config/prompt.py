"""The `[prompt]` section: named global prompt profiles and the one new sessions use.

Invariant: a profile reaches `Config` only with a valid name (letters, digits,
`-` and `_`, not one of the words `/profile` uses) and its text in hand: a
profile given as `file = "PATH"` is read here (relative to the config file's
folder, `~` expanded), so a missing or unreadable file is a config error
naming the profile and the path, never a failure in the middle of a turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .keys import setting
from ..errors import ConfigError
from .user_text import UnusableText, read_user_text

PROFILE_NAME = re.compile(r"[A-Za-z0-9_-]{1,40}")
RESERVED_NAMES = ("none", "show", "edit", "clear", "list")  # words `/profile` reads as commands
MAX_PROFILE_BYTES = 100_000


@dataclass
class PromptConfig:
    """The [prompt] section: the global prompt profile and its profiles."""
    profile: str = setting(
        "", "Global prompt profile (a [prompt.profiles] name) new sessions start with; empty = none."
    )
    profiles: dict[str, str] = field(
        default_factory=dict,
        metadata={"doc": 'Named global prompts: NAME = "text", or NAME = { file = "path.md" }.'},
    )


def parse_profiles(raw: Any, where: str, config_dir: Path | None) -> dict[str, str]:
    """`[prompt.profiles]` as name → text; raises `ConfigError` naming the profile at fault."""
    if not isinstance(raw, dict):
        raise ConfigError(f'{where}: prompt.profiles must be a table, e.g. [prompt.profiles] reviewer = "You review code."')
    profiles: dict[str, str] = {}
    for name, value in raw.items():
        label = f"prompt.profiles.{name}"
        if not PROFILE_NAME.fullmatch(name):
            raise ConfigError(f"{where}: {label}: the name is not valid: expected 1-40 letters, digits, - or _")
        if name.lower() in RESERVED_NAMES:
            raise ConfigError(f"{where}: {label}: {name!r} is reserved for /profile; choose another name")
        profiles[name] = _profile_text(value, where, label, config_dir)
    return profiles


def _profile_text(value: Any, where: str, label: str, config_dir: Path | None) -> str:
    if isinstance(value, str):
        return value.strip()
    if not isinstance(value, dict) or set(value) - {"text", "file"} or len(value) != 1:
        raise ConfigError(f'{where}: {label} must be a string, or a table with one of text = "..." or file = "path"')
    if "text" in value:
        if not isinstance(value["text"], str):
            raise ConfigError(f"{where}: {label}.text must be a string")
        return value["text"].strip()
    if not isinstance(value["file"], str) or not value["file"].strip():
        raise ConfigError(f"{where}: {label}.file must be a path")
    path = Path(value["file"]).expanduser()
    if not path.is_absolute() and config_dir is not None:
        path = config_dir / path
    try:
        return read_user_text(path, MAX_PROFILE_BYTES).strip()
    except UnusableText as problem:
        raise ConfigError(f"{where}: {label}.file: {path}: {problem.reason}") from None


def check_profile_choice(config_profile: str, profiles: dict[str, str], origin: str) -> None:
    """`prompt.profile` must name a profile (or be empty)."""
    if config_profile and config_profile not in profiles:
        known = ", ".join(sorted(profiles)) or "none are defined"
        raise ConfigError(f"{origin}: prompt.profile = {config_profile!r} is not a [prompt.profiles] name (known: {known})")
