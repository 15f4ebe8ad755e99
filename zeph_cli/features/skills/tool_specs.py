"""What the model is told about load_skill: name, kind, description and argument schema.

Invariant: data only (the registry offers tools from declarations; the implementation in `tools.py` is
imported when the tool is first used).
"""

from __future__ import annotations

from ...tools.specs import ToolDeclaration

LOAD_SKILL = ToolDeclaration(
    "load_skill",
    "read",
    "Read a skill: its full instructions and the list of files in its folder. "
    "With `file`, read one of those files instead (a path relative to the skill's folder).",
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The skill's name, as listed in the skills blocks."},
            "file": {"type": "string", "description": "A file in the skill's folder, relative to it (optional)."},
        },
        "required": ["name"],
    },
    ("zeph_cli.features.skills.tools", "LoadSkillTool"),
    "skill tools",
)
