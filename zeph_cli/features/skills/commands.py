"""`zeph skills`: list the skills found here, show one.

Invariant: presentation only — the skills come from a `SkillService` built as
the agent builds it (imported inside the commands, so `zeph --help` stays
light); a bad SKILL.md is a warning line, an unknown name one error line and
exit 1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ...errors import NotFound
from ...frontends.cli.stderr import eprint

if TYPE_CHECKING:
    from .service import SkillService

skills_app = typer.Typer(
    help="Skills: folders with a SKILL.md matched to each message.\n\n"
    "They are found in the config dir's skills/ and the project's .zeph/skills/.",
    no_args_is_help=True,
)


def _service() -> "SkillService":
    from ...frontends.cli.command_context import load
    from .service import service_for

    return service_for(load(), os.environ, Path.cwd())


def _warn(service: "SkillService") -> None:
    for warning in service.take_warnings():
        eprint(f"zeph: warning: {warning}")


@skills_app.command("list")
def skills_list(json_output: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the skills found here.

    Name, source, description and injection-scan flags; a project skill wins over a user skill.
    """
    service = _service()
    skills = service.skills()
    _warn(service)
    if json_output:
        print(json.dumps([
            {"name": s.name, "source": s.source, "description": s.description, "triggers": list(s.triggers),
             "tools": list(s.tools), "folder": str(s.folder), "flags": list(s.flags)}
            for s in skills
        ], indent=2, ensure_ascii=False))
        return
    if not skills:
        eprint("no skills: add a folder with a SKILL.md to " + " or ".join(str(d) for d in service.dirs))
        return
    for skill in skills:
        flags = f"\tflagged: {', '.join(skill.flags)}" if skill.flags else ""
        print(f"{skill.name}\t{skill.source}\t{skill.description}{flags}")


@skills_app.command("show")
def skills_show(name: str = typer.Argument(..., metavar="NAME", help="The skill's name.")) -> None:
    """Show a skill's SKILL.md and where it lives.

    Its front matter and body, as written.
    """
    service = _service()
    skill = service.get(name)
    _warn(service)
    if skill is None:
        known = ", ".join(service.names()) or "none"
        raise NotFound(f"no skill named {name!r} (skills: {known})")
    print(f"# {skill.file} ({skill.source})")
    if skill.flags:
        print(f"# flagged by the injection scan: {', '.join(skill.flags)}")
    try:
        print(skill.file.read_text(encoding="utf-8").rstrip("\n"))
    except (OSError, UnicodeDecodeError):  # it changed since it loaded: show what loaded
        print(skill.body)
