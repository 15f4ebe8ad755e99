"""Asking the user: what a tool call needs approved, the answer, and the approvers that need no one.

Invariant: plain values and functions, no policy: which calls are asked about is
`permissions.PermissionPolicy`'s; this module is what every front end (the
terminal prompt, the chat app, `-y`) shares, light enough for `zeph ask` to import.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

Approval = Literal["yes", "no", "always"]


@dataclass(frozen=True)
class ApprovalRequest:
    """What the user is asked to approve: the tool, its command or path, a preview, and which sub-agent asks
    (empty: the session the user talks to)."""

    tool: str
    kind: str
    subject: str
    arguments: dict[str, Any]
    preview: str = ""
    asker: str = ""


@dataclass(frozen=True)
class ApprovalDecision:
    """The user's answer; `reason` is told to the model when the answer is no."""

    approval: Approval
    reason: str = ""


Approver = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]


async def approve_all(request: ApprovalRequest) -> ApprovalDecision:
    return ApprovalDecision("yes")


def deny_all(reason: str) -> Approver:
    """An approver that refuses everything, telling the model why."""

    async def deny(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision("no", reason)

    return deny
