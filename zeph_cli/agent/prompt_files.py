"""Reading the prompt modules: shipped Markdown files and their user and project overrides.

Invariant: the only file-system reads behind the base and mode prompts; they
run once per process (at agent start). An override is `NAME.md` in the user's
config dir (`prompts/`) or the workspace's `.zeph/prompts/`; the project's wins.
An empty override removes the module; one that cannot be used (unreadable,
binary, not UTF-8, too large) gives one warning and the shipped text is sent.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

from ..context.prompt_modules import MODULE_NAMES, PromptModule
from ..config.user_text import UnusableText, read_user_text

MAX_PROMPT_FILE_BYTES = 200_000
PROJECT_PROMPTS_DIR = Path(".zeph") / "prompts"


@functools.cache
def shipped_text(name: str) -> str:
    return (resources.files("zeph_cli") / "prompts" / f"{name}.md").read_text(encoding="utf-8").strip()


def _override(path: Path, warnings: list[str]) -> str | None:
    """The override's text ("" removes the module), or None when there is none or it cannot be used."""
    try:
        if not path.is_file():
            return None
        return read_user_text(path, MAX_PROMPT_FILE_BYTES).strip()
    except UnusableText as problem:
        warnings.append(f"{path}: {problem.reason}, the shipped prompt module is used")
    except OSError as exc:  # is_file() itself (a directory that cannot be searched)
        warnings.append(f"{path}: cannot be read ({exc.strerror or exc}), the shipped prompt module is used")
    return None


def load_prompt_modules(user_dir: Path | None, workspace: Path | None) -> tuple[dict[str, PromptModule], list[str]]:
    """Every module by name, with the override that applies; warnings for overrides not used."""
    warnings: list[str] = []
    modules: dict[str, PromptModule] = {}
    places = [("user", user_dir), ("project", workspace / PROJECT_PROMPTS_DIR if workspace else None)]
    for name in MODULE_NAMES:
        module = PromptModule(name, shipped_text(name))
        for source, directory in places:
            if directory is None:
                continue
            path = directory / f"{name}.md"
            text = _override(path, warnings)
            if text is not None:
                module = PromptModule(name, text, source, str(path))
        modules[name] = module
    return modules, warnings
