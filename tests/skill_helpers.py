"""Writing skill folders for the skills tests."""

from __future__ import annotations

from pathlib import Path


def write_skill(root: Path, folder: str, text: str) -> Path:
    path = root / folder
    path.mkdir(parents=True, exist_ok=True)
    (path / "SKILL.md").write_text(text)
    return path


def skill_text(name: str, description: str, body: str = "Do it well.", triggers: str = "") -> str:
    extra = f"triggers: [{triggers}]\n" if triggers else ""
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n"
