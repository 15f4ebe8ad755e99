"""Realistic filler for benchmarks: prose, code lines and identifiers from a seeded random source.

Invariant: pure functions of the `random.Random` they are given, so a seed gives the same texts.
"""

from __future__ import annotations

import random

WORDS = (
    "the a to of and in that is for it this with as on be we can should will file function test "
    "error config value return call make sure check change update read write path module class "
    "import build run output line case type list string number request response session store "
    "message token budget context history summary tool result command shell workspace directory "
    "parse handle raise exception retry timeout cache index query row column migration schema "
    "because so then now next first also instead only still already when if not but or let me "
    "look see think fix add remove rename move keep use need want try found looks works fails"
).split()
IDENTIFIERS = (
    "conversation_id message_id history agent_visible position token_count counter budget report "
    "allocation summary compaction store db rows items result calls parts metadata config path "
    "workspace confinement output content stamp record_event replace_with_summary assemble"
).split()
TOOLS = ("read_file", "bash", "grep", "edit_file", "list_files", "write_file")


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 22))]
    return " ".join(words).capitalize() + rng.choice((".", ".", ".", "?", ":"))


def prose(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        paragraph = " ".join(sentence(rng) for _ in range(rng.randint(2, 5)))
        out.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(out)


def code_line(rng: random.Random) -> str:
    indent = "    " * rng.randint(0, 3)
    a, b, c = rng.choice(IDENTIFIERS), rng.choice(IDENTIFIERS), rng.choice(IDENTIFIERS)
    return indent + rng.choice(
        (
            f"{a} = {b}.{c}({rng.choice(IDENTIFIERS)})",
            f"if {a} is None or {b} > {rng.randint(0, 4096)}:",
            f"return [{a} for {a} in {b} if {a}.{c}]",
            f"def {a}_{b}(self, {c}: int) -> list[str]:",
            f'raise ValueError(f"bad {a}: {{{b}!r}}")',
            f"# {sentence(rng)}",
            f"{a}.{b}.append({c})",
        )
    )


def code(rng: random.Random, chars: int) -> str:
    lines: list[str] = []
    size = 0
    while size < chars:
        line = code_line(rng)
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)
