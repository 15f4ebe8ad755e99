"""No test bounds wall-clock time under 10 s: speed is printed by benchmarks/, never asserted.

A loaded machine (CI's two cores, a laptop building something) makes any tight
bound flaky, and a figure in a test says nothing about how fast zeph is. A test
may still check that something waited at all (a lower bound), that one thing
happened before another, or that a would-be hang ends within a generous bound
(10 s or more).

Invariant: the scan below finds, in every tests/*.py, each place that bounds
elapsed time from above by less than 10 s and names it file:line:
  - a comparison of an elapsed time against a constant (`waited < 1.4`,
    `time.monotonic() - started < 2.5`, `0.45 <= waited < 1.4`, `2.5 > took`);
    an elapsed time is a clock difference (`time.monotonic() - t`, also
    `perf_counter`, `time.time`, `loop.time()`…), a name assigned one in the
    same file, or a name that says so (`elapsed`, `waited`, `took`, `duration`,
    `latency`); `_ms` / `_ns` names are read in their unit;
  - a polling deadline (`deadline = time.monotonic() + 1.0`, or `+ timeout`
    where `timeout` is a parameter defaulting under 10 s);
  - a polling loop: `for _ in range(100)` that sleeps 0.02 s a round and breaks
    (or returns) when the awaited thing happens, 100 x 0.02 = 2 s in all;
  - `asyncio.wait_for(…, 2)`, outside a `pytest.raises` (where it is a lower bound), and an
    asserted wait (`assert started.wait(5)`).
Constants are literals, module-level names bound to one, and arithmetic on them.
"""

from __future__ import annotations

import ast
import operator
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
LIMIT_S = 10.0

CLOCKS = {"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns", "time_ns", "process_time"}
ELAPSED_WORDS = re.compile(r"elapsed|waited|took|duration|latency", re.IGNORECASE)
UPPER = (ast.Lt, ast.LtE)  # `elapsed < C`; `C > elapsed` is turned around below
LOWER = (ast.Gt, ast.GtE)
ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
              ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    source: str
    seconds: float
    kind: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind} of {self.seconds:g} s: {self.source}"


def _is_clock_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call) or node.args or node.keywords:
        return False
    func = node.func
    return _name_of(func) in CLOCKS


def _clock_unit(node: ast.AST) -> float:
    """Seconds per unit of the clock called in `node` (1e-9 for the _ns clocks)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and _is_clock_call(sub):
            return 1e-9 if str(_name_of(sub.func)).endswith("_ns") else 1.0
    return 1.0


def _is_clock_difference(node: ast.AST) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and (
        _is_clock_call(node.left) or _is_clock_call(node.right)
    )


def _walk_here(statements: list[ast.stmt]):
    """Every node of `statements`, not descending into nested functions, classes or loops
    (a `break` there is not this loop's)."""
    stack: list[ast.AST] = list(statements)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
                                 ast.For, ast.AsyncFor, ast.While)):
            stack.extend(ast.iter_child_nodes(node))


def _name_of(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _unit_of_name(name: str) -> float:
    lowered = name.lower()
    if lowered.endswith("_ns") or lowered.endswith("nanoseconds"):
        return 1e-9
    if lowered.endswith("_ms") or lowered.endswith("millis") or lowered.endswith("milliseconds"):
        return 1e-3
    return 1.0


class _Scanner(ast.NodeVisitor):
    def __init__(self, path: str, tree: ast.Module, source: str) -> None:
        self.path, self.source = path, source
        self.findings: list[Finding] = []
        self.constants: dict[str, float] = {}
        self.defaults: list[dict[str, float]] = []  # the enclosing functions' numeric parameter defaults
        self.raises_depth = 0
        for statement in tree.body:  # module-level numeric constants (HANG = 30, HANG: float = 30)
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target, value = statement.targets[0], self._number(statement.value)
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                target, value = statement.target, self._number(statement.value)
            else:
                continue
            if isinstance(target, ast.Name) and value is not None:
                self.constants[target.id] = value
        # Names that hold a clock difference anywhere in the file (waited = time.monotonic() - started).
        self.elapsed_names: dict[str, float] = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(_is_clock_difference(sub) for sub in ast.walk(node.value)):
                    for target in targets:
                        name = _name_of(target)
                        if name:
                            self.elapsed_names[name] = _clock_unit(node.value)

    # ---- constants ----------------------------------------------------------------------------

    def _number(self, node: ast.AST) -> float | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return float(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = self._number(node.operand)
            return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
        if isinstance(node, ast.Name):
            for scope in reversed(self.defaults):
                if node.id in scope:
                    return scope[node.id]
            return self.constants.get(node.id)
        if isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC:
            left, right = self._number(node.left), self._number(node.right)
            if left is None or right is None:
                return None
            try:
                return float(ARITHMETIC[type(node.op)](left, right))
            except (ZeroDivisionError, OverflowError):
                return None
        return None

    # ---- elapsed times -------------------------------------------------------------------------

    def _elapsed_unit(self, node: ast.AST) -> float | None:
        """Seconds per unit when `node` is an elapsed time, else None."""
        if _is_clock_difference(node):
            return _clock_unit(node)
        name = _name_of(node)
        if name is None:
            return None
        if isinstance(node, ast.Name) and name in self.elapsed_names:
            return self.elapsed_names[name]
        if ELAPSED_WORDS.search(name):
            return _unit_of_name(name)
        return None

    def _report(self, node: ast.AST, seconds: float, kind: str) -> None:
        if seconds < LIMIT_S:
            text = (ast.get_source_segment(self.source, node) or "").splitlines()[0]  # a loop: its first line
            self.findings.append(Finding(self.path, node.lineno, " ".join(text.split()), seconds, kind))

    # ---- visits --------------------------------------------------------------------------------

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        arguments = node.args
        positional = [*arguments.posonlyargs, *arguments.args]
        scope: dict[str, float] = {}
        for argument, default in zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults):
            value = self._number(default)
            if value is not None:
                scope[argument.arg] = value
        for argument, default in zip(arguments.kwonlyargs, arguments.kw_defaults):
            value = None if default is None else self._number(default)
            if value is not None:
                scope[argument.arg] = value
        self.defaults.append(scope)
        self.generic_visit(node)
        self.defaults.pop()

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def _visit_with(self, node: ast.With | ast.AsyncWith) -> None:
        raises = any(
            isinstance(item.context_expr, ast.Call) and _name_of(item.context_expr.func) == "raises"
            for item in node.items
        )
        self.raises_depth += raises
        self.generic_visit(node)
        self.raises_depth -= raises

    visit_With = _visit_with
    visit_AsyncWith = _visit_with

    def visit_Compare(self, node: ast.Compare) -> None:
        operands = [node.left, *node.comparators]
        for left, op, right in zip(operands, node.ops, operands[1:]):
            if isinstance(op, UPPER):
                elapsed, bound = left, right
            elif isinstance(op, LOWER):
                elapsed, bound = right, left
            else:
                continue
            unit, limit = self._elapsed_unit(elapsed), self._number(bound)
            if unit is not None and limit is not None:
                self._report(node, limit * unit, "an elapsed-time bound")
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.Add):
            for clock, added in ((node.left, node.right), (node.right, node.left)):
                if _is_clock_call(clock):
                    limit = self._number(added)
                    if limit is not None:
                        self._report(node, limit * _clock_unit(clock), "a deadline")
        self.generic_visit(node)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        rounds = None
        if isinstance(node.iter, ast.Call) and _name_of(node.iter.func) == "range" and len(node.iter.args) == 1:
            rounds = self._number(node.iter.args[0])
        inside = list(_walk_here(node.body))
        leaves = any(isinstance(sub, (ast.Break, ast.Return)) for sub in inside)
        pauses = [
            self._number(sub.args[0])
            for sub in inside
            if isinstance(sub, ast.Call) and _name_of(sub.func) == "sleep" and len(sub.args) == 1
        ]
        pause = sum(p for p in pauses if p is not None)
        if rounds is not None and leaves and pause > 0:
            self._report(node, rounds * pause, "a polling loop")
        self.generic_visit(node)

    visit_AsyncFor = visit_For

    def visit_Assert(self, node: ast.Assert) -> None:
        call = node.test
        if isinstance(call, ast.Call) and _name_of(call.func) in ("wait", "join", "acquire"):
            bound = call.args[-1] if call.args else next((k.value for k in call.keywords if k.arg == "timeout"), None)
            limit = None if bound is None else self._number(bound)
            if limit is not None:
                self._report(node, limit, "an asserted wait")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if _name_of(node.func) == "wait_for" and not self.raises_depth:
            bound = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "timeout"), None
            )
            limit = None if bound is None else self._number(bound)
            if limit is not None:
                self._report(node, limit, "a wait_for bound")
        self.generic_visit(node)


def timed_asserts(source: str, path: str = "<test>") -> list[Finding]:
    """Every place in `source` (a test module) that bounds elapsed time from above under 10 s."""
    tree = ast.parse(source)
    scanner = _Scanner(path, tree, source)
    scanner.visit(tree)
    return scanner.findings


def test_no_test_bounds_wall_clock_time_under_ten_seconds():
    findings = [
        finding
        for path in sorted(TESTS.rglob("*.py"))
        for finding in timed_asserts(path.read_text(encoding="utf-8"), str(path.relative_to(TESTS.parent)))
    ]
    assert not findings, (
        "speed is measured in benchmarks/, not asserted in tests; keep a lower bound, an ordering or a "
        "generous (>= 10 s) hang bound instead:\n" + "\n".join(map(str, findings))
    )


# ---- the scan itself ---------------------------------------------------------------------------

CAUGHT = {
    "chained": "import time\nstarted = time.monotonic()\nwaited = time.monotonic() - started\nassert 0.45 <= waited < 1.4\n",
    "inline difference": "import time\nstarted = time.monotonic()\nassert time.monotonic() - started < 2.5\n",
    "turned around": "import time\ns = time.perf_counter()\ntook = time.perf_counter() - s\nassert 2.5 > took\n",
    "named elapsed": "def test(result):\n    assert result.elapsed <= 3\n",
    "milliseconds": "def test(run):\n    assert run.duration_ms < 1500\n",
    "nanoseconds": "import time\nt = time.monotonic_ns()\nspent = time.monotonic_ns() - t\nassert spent < 2_000_000_000\n",
    "module constant": "import time\nQUICK = 2\nt = time.time()\nassert time.time() - t < QUICK\n",
    "annotated constant": "from time import time\nQUICK: float = 2\nt = time()\nassert time() - t < QUICK\n",
    "constant arithmetic": "import time\nt = time.time()\nassert time.time() - t < 2 * 3\n",
    "deadline": "import time\ndef test():\n    deadline = time.monotonic() + 1.0\n",
    "deadline from a default": "import time\ndef wait(timeout: float = 3.0):\n    deadline = time.monotonic() + timeout\n",
    "loop clock": "async def test(loop):\n    end = loop.time() + 2\n",
    "polling loop": (
        "import asyncio\nasync def test(record):\n"
        "    for _ in range(100):\n        if record.outcome:\n            break\n        await asyncio.sleep(0.02)\n"
    ),
    "polling loop from a default": (
        "import time\ndef outcome(record, tries: int = 200):\n"
        "    for _ in range(tries):\n        if record.outcome:\n            return record.outcome\n"
        "        time.sleep(0.025)\n"
    ),
    "wait_for": "import asyncio\nasync def test(event):\n    await asyncio.wait_for(event.wait(), 2)\n",
    "asserted wait": "import threading\ndef test(locked: threading.Event):\n    assert locked.wait(5)\n",
    "wait_for keyword": "import asyncio\nasync def test(event):\n    await asyncio.wait_for(event.wait(), timeout=0.5)\n",
}

PASSED = {
    "lower bound": "import time\nt = time.monotonic()\nwaited = time.monotonic() - t\nassert waited >= 1.5\n",
    "lower bound turned around": "import time\nt = time.monotonic()\nassert 0.3 <= time.monotonic() - t\n",
    "generous hang bound": "import time\nt = time.monotonic()\nassert time.monotonic() - t < 30.0\n",
    "ten seconds": "import time\nt = time.monotonic()\nassert time.monotonic() - t < 10\n",
    "generous milliseconds": "def test(run):\n    assert run.duration_ms < 20_000\n",
    "duration is a value": "def test(probe):\n    assert probe.duration_ms >= 0 and probe.duration_ms == 2340\n",
    "a size, not a time": "def test(text, limit):\n    assert len(text) < 3 and limit < 5\n",
    "generous deadline": "import time\ndef wait(timeout: float = 60):\n    deadline = time.monotonic() + timeout\n",
    "a date, not a deadline": "import time\nlater = time.time() + 3600\n",
    "a timeout that must fire": (
        "import asyncio, pytest\nasync def test(event):\n"
        "    with pytest.raises(TimeoutError):\n        await asyncio.wait_for(event.wait(), 0.5)\n"
    ),
    "generous polling loop": (
        "import time\ndef test(done):\n    for _ in range(1500):\n        if done():\n            break\n"
        "        time.sleep(0.02)\n"
    ),
    "a loop that only yields": "import asyncio\nasync def test():\n    for _ in range(3):\n        await asyncio.sleep(0)\n",
    "paced steps, not a wait": "import time\ndef test(write):\n    for i in range(3):\n        write(i)\n        time.sleep(0.1)\n",
    "generous asserted wait": "def test(locked):\n    assert locked.wait(timeout=30)\n",
    "generous wait_for": "import asyncio\nasync def test(event):\n    await asyncio.wait_for(event.wait(), 30)\n",
    "unknown bound": "import time\ndef test(limit):\n    t = time.monotonic()\n    assert time.monotonic() - t < limit\n",
}


@pytest.mark.parametrize("source", CAUGHT.values(), ids=CAUGHT.keys())
def test_the_scan_names_a_tight_bound_by_line(source):
    [finding] = timed_asserts(source, "tests/test_x.py")
    line = source.splitlines()[finding.line - 1].strip()
    assert finding.path == "tests/test_x.py" and finding.source in line
    assert finding.seconds < LIMIT_S
    assert str(finding).startswith(f"tests/test_x.py:{finding.line}: ")


@pytest.mark.parametrize("source", PASSED.values(), ids=PASSED.keys())
def test_the_scan_leaves_lower_and_generous_bounds_alone(source):
    assert timed_asserts(source) == []
