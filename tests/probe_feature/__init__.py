"""A feature that exists only in the tests: one registration, to show that a new feature's source, tool,
command group and chat-app command reach zeph with no change anywhere else (tests/test_feature_registry.py)."""

from zeph_cli.context.blocks import Registration
from zeph_cli.features import ChatCommand, CommandGroup, Feature, Isolation
from zeph_cli.tools.specs import ToolDeclaration

PROBE_LOOKUP = ToolDeclaration(
    "probe_lookup",
    "read",
    "Look up the probe's value for a key and return it.",
    {"type": "object", "properties": {"key": {"type": "string", "description": "The key."}}, "required": ["key"]},
    (f"{__name__}.parts", "ProbeLookupTool"),
    "probe tools",
)

FEATURE = Feature(
    "probe",
    sources=(Registration(f"{__name__}.parts", "ProbeSource"),),
    tools=(PROBE_LOOKUP,),
    command_group=CommandGroup("probe", f"{__name__}.parts", "probe_app"),
    chat_commands=(
        ChatCommand("probe", "[KEY]", "Show the probe's value for a key.", (f"{__name__}.parts", "probe_command"),
                    check="probe_problem"),
    ),
    isolation=Isolation(frozenset({"probe"}), frozenset({"probe tools"}), ("the probe",)),
)
