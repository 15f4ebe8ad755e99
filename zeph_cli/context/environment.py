"""The `<environment>` block: where the agent is running and with which model.

Invariant: pure formatting of facts gathered once per process by the caller;
no file, process or network access here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class EnvironmentFacts:
    """The facts the <environment> block states."""
    working_directory: str
    os: str
    git_branch: str | None
    model: str

    def with_model(self, model: str) -> "EnvironmentFacts":
        return replace(self, model=model)


def render_environment(facts: EnvironmentFacts) -> str:
    lines = [
        "<environment>",
        f"working_directory: {facts.working_directory}",
        f"os: {facts.os}",
    ]
    if facts.git_branch:
        lines.append(f"git_branch: {facts.git_branch}")
    lines.append(f"model: {facts.model}")
    lines.append("</environment>")
    return "\n".join(lines)
