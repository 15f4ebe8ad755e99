"""The global prompt (ETOS 1): the session's named profile as a `<system_prompt>` block.

Invariant: pure. A session keeps the profile it chose (conversation metadata
`prompt_profile`, "" = none); a session that never chose one follows the
configured default. A chosen name missing from the config gives no block and
says so, rather than sending some other profile's text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

PROFILE_KEY = "prompt_profile"  # conversation metadata: the session's global prompt profile


@dataclass(frozen=True)
class GlobalPrompt:
    """The global prompt profile a session uses, rendered, or why it is missing."""
    name: str  # "" = none
    text: str  # the rendered block, "" when none or missing
    problem: str = ""  # e.g. the chosen profile is no longer in the config

    @property
    def detail(self) -> str:
        return self.problem or (f"profile {self.name}" if self.name else "")


def session_profile(metadata: Mapping[str, object], default: str) -> str:
    """The profile name the session uses: its own choice, else the configured default."""
    chosen = metadata.get(PROFILE_KEY)
    return chosen if isinstance(chosen, str) else default


def global_prompt(name: str, profiles: Mapping[str, str]) -> GlobalPrompt:
    if not name:
        return GlobalPrompt("", "")
    if name not in profiles:
        return GlobalPrompt(name, "", f"profile {name!r} is not in [prompt.profiles]; no global prompt sent")
    text = profiles[name].strip()
    if not text:
        return GlobalPrompt(name, "")
    text = text.replace("</system_prompt", "<\\/system_prompt")  # it cannot close its own block
    return GlobalPrompt(name, f"<system_prompt>\n{text}\n</system_prompt>")


def profile_lines(current: str, profiles: Mapping[str, str]) -> list[str]:
    """The configured profiles for a listing, the session's marked, each with its first line."""
    if not profiles:
        return ["no global prompt profiles: add them under [prompt.profiles] in the config"]
    lines = [f"global prompt: {f'profile {current}' if current else 'none'}"]
    for name, text in profiles.items():
        first = next((line.strip() for line in text.splitlines() if line.strip()), "(empty)")
        first = first if len(first) <= 70 else first[:69] + "…"
        lines.append(f"{'*' if name == current else ' '} {name}: {first}")
    return lines
