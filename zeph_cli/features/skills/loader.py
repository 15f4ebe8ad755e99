"""Reading one SKILL.md: YAML front matter, then a Markdown body.

Invariant: `load_skill_file` returns a `Skill` or raises `SkillFileError` whose
text is one line naming the file and the fault — never another exception.
The front matter needs `description`; `name` (letters, digits, `-`, `_`)
defaults to the folder's name; `triggers` and `tools` are a list or a
comma-separated string. Unknown keys are ignored (other agents' skills carry
their own, such as `license`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...config.user_text import UnusableText, read_user_text
from .model import Skill, SkillSource

SKILL_FILE = "SKILL.md"
MAX_SKILL_BYTES = 256 * 1024  # a skill bigger than this is not a skill
NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_FRONT = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", re.DOTALL | re.MULTILINE)


class SkillFileError(Exception):
    """A SKILL.md that cannot be used: the message names the file and the fault."""


def load_skill_file(path: Path, source: SkillSource, *, scan_body: bool = True) -> Skill:
    def fault(text: str) -> SkillFileError:
        return SkillFileError(f"skill {path}: {text}; skipped")

    try:
        text = read_user_text(path, MAX_SKILL_BYTES)
    except UnusableText as problem:
        raise fault(problem.reason) from None
    front, body = split_front_matter(text)
    if front is None:
        raise fault("has no front matter (a '---' block with name and description at the top)")
    meta = _parse_yaml(front, fault)
    folder = path.parent
    name = meta.get("name", folder.name)
    if not isinstance(name, str) or not NAME.match(name):
        raise fault(f"name {name!r} must be letters, digits, '-' or '_' (at most 64)")
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        raise fault("front matter needs a description (one line saying when to use the skill)")
    triggers = _words(meta.get("triggers"), "triggers", fault)
    tools = _words(meta.get("tools"), "tools", fault)
    body = body.strip()
    # Every part that reaches the prompt is scanned: the body, the description, and the triggers and tools.
    from ...context.injection_scan import scan  # its patterns compile only when a skill is read

    flags = scan("\n".join((body, description, *triggers, *tools))) if scan_body else ()
    return Skill(name=name, description=" ".join(description.split()), triggers=triggers, tools=tools,
                 body=body, folder=folder, source=source, flags=flags)


def split_front_matter(text: str) -> tuple[str | None, str]:
    """(front matter, body); front matter is None when the text does not open with a `---` block."""
    found = _FRONT.match(text)
    if found is None:
        return None, text
    return found.group(1), text[found.end():]


def _parse_yaml(front: str, fault) -> dict[str, Any]:
    import yaml

    try:
        meta = yaml.safe_load(front)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise fault(f"front matter is not valid YAML{where} ({problem})") from None
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise fault("front matter must be a mapping of keys (name, description, triggers, tools)")
    return meta


def _words(value: Any, key: str, fault) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        items = [str(v) for v in value]
    else:
        raise fault(f"{key} must be a list of strings or a comma-separated string")
    return tuple(dict.fromkeys(item.strip() for item in items if item.strip()))
