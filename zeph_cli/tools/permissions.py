"""Who decides whether a tool call runs: config rules, session grants, or the user.

Invariant: pure. A `deny` rule always wins; read tools run without asking
(confinement is enforced by the tools themselves); write and exec tools run
without asking only when an `allow` rule covers every command they contain, or
the user said "always" for that tool in this session; otherwise the user is asked.
A command that writes outside the workspace is always asked about, and a rule
covers a command that redirects into a file only if the rule names a redirection.
Blocked commands are refused before this policy is consulted.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

# Asking the user lives in `approval`; its names stay importable from here.
from .approval import Approval, ApprovalDecision, ApprovalRequest, Approver, approve_all, deny_all

__all__ = [
    "Action", "Approval", "ApprovalDecision", "ApprovalRequest", "Approver", "PermissionPolicy", "Rule",
    "ToolCallSubject", "Verdict", "approve_all", "deny_all",
]

Action = Literal["run", "ask", "deny"]


@dataclass(frozen=True)
class Rule:
    """`TOOL` or `TOOL:GLOB` (TOOL may be `*`); GLOB matches a command or a path."""

    tool: str
    glob: str | None
    text: str

    @classmethod
    def parse(cls, text: str) -> "Rule":
        tool, sep, glob = text.partition(":")
        return cls(tool.strip(), glob.strip() if sep else None, text)

    def covers(self, tool: str, subject: str, *, redirects: bool = False) -> bool:
        """Whether the rule matches; a subject that redirects into a file needs a rule naming `>`."""
        if not fnmatch.fnmatchcase(tool, self.tool):
            return False
        if redirects and (self.glob is None or ">" not in self.glob):
            return False
        return self.glob is None or fnmatch.fnmatchcase(subject, self.glob)


@dataclass(frozen=True)
class Verdict:
    action: Action
    reason: str = ""


@dataclass(frozen=True)
class ToolCallSubject:
    """What the rules look at for one call.

    `whole` is the full command or path as the model wrote it; `parts` are the
    pieces that must each be allowed (every simple command of a shell command
    with its `NAME=value` prefixes and redirections, or the path spellings of a
    file); `complete` is False when a command could not be fully parsed, so it
    can never be allowed by a rule. `redirecting` names the parts that redirect
    into a file; `outside_writes` the paths written outside the workspace (or
    only known at run time), which always need the user's approval;
    `bare_parts` are the same commands without prefixes and redirections, which
    `deny` rules also match (a prefix never hides a denied command).
    """

    whole: str
    parts: tuple[str, ...] = ()
    complete: bool = True
    redirecting: frozenset[str] = frozenset()
    outside_writes: tuple[str, ...] = ()
    bare_parts: tuple[str, ...] = ()


@dataclass
class PermissionPolicy:
    allow: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    session_grants: set[str] = field(default_factory=set)

    @classmethod
    def from_config(cls, allow: Sequence[str], deny: Sequence[str]) -> "PermissionPolicy":
        return cls(tuple(Rule.parse(r) for r in allow), tuple(Rule.parse(r) for r in deny))

    def unknown_tools(self, known: Sequence[str]) -> list[str]:
        """Rules naming a tool that does not exist (likely typos), for a warning."""
        return [
            r.text
            for r in (*self.allow, *self.deny)
            if not any(fnmatch.fnmatchcase(name, r.tool) for name in known)
        ]

    def decide(self, tool: str, kind: str, subject: ToolCallSubject) -> Verdict:
        candidates = (subject.whole, *subject.parts, *subject.bare_parts)
        for rule in self.deny:
            if any(rule.covers(tool, s) for s in candidates):
                return Verdict("deny", f"refused by the tools.deny rule {rule.text!r}")
        if kind == "read":
            return Verdict("run")
        if subject.outside_writes:
            shown = ", ".join(subject.outside_writes[:3])
            return Verdict("ask", f"it writes outside the workspace ({shown})")
        if tool in self.session_grants:
            return Verdict("run", "allowed for this session")
        parts = subject.parts or (subject.whole,)
        if subject.complete and self.allow:
            covering = [
                next((r for r in self.allow if r.covers(tool, p, redirects=p in subject.redirecting)), None)
                for p in parts
            ]
            if all(covering):
                names = sorted({r.text for r in covering if r})
                return Verdict("run", "allowed by tools.allow " + ", ".join(repr(n) for n in names))
        return Verdict("ask")

    def grant(self, tool: str) -> None:
        self.session_grants.add(tool)
