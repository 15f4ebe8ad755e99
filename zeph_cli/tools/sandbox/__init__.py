"""The OS sandbox for every process a tool starts (see `sandbox.Sandbox`).

Invariant: importing this package imports no backend library; `landlock` is
only ever imported by the launcher, inside the child.
"""

from .policy import SandboxPolicy
from .sandbox import Sandbox, SandboxRefused, SandboxState

__all__ = ["Sandbox", "SandboxPolicy", "SandboxRefused", "SandboxState"]
