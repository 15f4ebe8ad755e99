"""Read `python -X importtime` output: what a run imported and what each top-level package cost.

Invariant: every figure comes from the lines CPython prints, nothing is estimated.
A package's *own* time is the sum of the self times of its modules (these add up
to the run's total import time); its *cumulative* time is the wall time spent in
imports entered from outside the package, its dependencies included (an import
of the package nested in another import of it is not counted twice).
A module imported through `importlib.import_module` gets no line of its own
(sqlite-utils imports numpy that way; numpy's submodules still get theirs), so a
package counts as imported when it or any of its submodules has a line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \| ( *)(\S+)$")


@dataclass
class Module:
    name: str
    self_us: int
    cumulative_us: int
    children: list["Module"] = field(default_factory=list)

    @property
    def package(self) -> str:
        return self.name.split(".")[0]


@dataclass
class PackageCost:
    name: str
    own_ms: float
    cumulative_ms: float


def parse(stderr: str) -> list[Module]:
    """The import tree, roots in import order (CPython prints children before their parent)."""
    waiting: dict[int, list[Module]] = {}  # level -> modules not yet adopted by a parent
    for line in stderr.splitlines():
        match = LINE.match(line)
        if not match:
            continue
        self_us, cumulative_us, indent, name = match.groups()
        level = len(indent) // 2
        module = Module(name, int(self_us), int(cumulative_us), waiting.pop(level + 1, []))
        waiting.setdefault(level, []).append(module)
    return waiting.get(0, [])


def walk(roots: list[Module]):
    stack = list(reversed(roots))
    while stack:
        module = stack.pop()
        yield module
        stack.extend(reversed(module.children))


def was_imported(roots: list[Module], name: str) -> bool:
    """Whether the run imported module `name` or any module inside it."""
    return any(m.name == name or m.name.startswith(name + ".") for m in walk(roots))


def total_ms(roots: list[Module]) -> float:
    return sum(module.self_us for module in walk(roots)) / 1000


def own_ms(roots: list[Module], prefix: str) -> float:
    """Self time of the modules named `prefix` or `prefix.*`."""
    return sum(m.self_us for m in walk(roots) if m.name == prefix or m.name.startswith(prefix + ".")) / 1000


def packages(roots: list[Module]) -> list[PackageCost]:
    """Each top-level package's own and cumulative time, largest cumulative first."""
    own: dict[str, int] = {}
    cumulative: dict[str, int] = {}

    def visit(module: Module, inside: frozenset[str]) -> None:
        own[module.package] = own.get(module.package, 0) + module.self_us
        if module.package not in inside:
            cumulative[module.package] = cumulative.get(module.package, 0) + module.cumulative_us
        for child in module.children:
            visit(child, inside | {module.package})

    for root in roots:
        visit(root, frozenset())
    costs = [PackageCost(name, own[name] / 1000, cumulative[name] / 1000) for name in own]
    return sorted(costs, key=lambda cost: cost.cumulative_ms, reverse=True)
