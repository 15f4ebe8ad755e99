"""The package's shape, read from its source with `ast`: no import circle, few private reaches, short signatures.

Invariant: (a) the modules of `zeph_cli` import one another without a circle, counting every
import — at the top, under `TYPE_CHECKING` and inside functions — with relative imports
resolved and a package's lazily exported names (PEP 562) followed to the submodule that
defines them; (b) at most `MAX_PRIVATE_REACHES` expressions `x._name` reach into another
object's private member (x not `self` or `cls`; library idioms such as `os._exit` and a
namedtuple's `_replace` aside); (c) no function in `zeph_cli/context/` or `zeph_cli/agent/`
takes more than `MAX_PARAMETERS` parameters (`self`/`cls` not counted; `*args` and
`**kwargs` count one each); (d) imports point down the layers (`LAYERS`: the kernel, context/,
store/, providers/, tools/, features/, agent/, frontends/), never up, but for a feature's
command-line and worker modules (`FEATURE_FRONTS`), which stand beside the frontends, and a
feature source's protocol of the session (`agent.source_host`). Nothing here knows a module by
name, but for the exceptions below: the checks follow the files wherever they move. A reach
spelled `getattr(x, "_name")` is not seen.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "zeph_cli"
MAX_PRIVATE_REACHES = 10
MAX_PARAMETERS = 8
PARAMETER_CHECKED = ("context", "agent")  # folders under zeph_cli/ whose functions take at most MAX_PARAMETERS

# `x._name` that is a library's public idiom, not a reach into someone's internals.
LIBRARY_IDIOMS = {
    ("os", "_exit"),
    ("sys", "_getframe"),
    ("sys", "_current_frames"),
    (None, "_replace"),  # namedtuple: documented API with a leading underscore
    (None, "_asdict"),
    (None, "_fields"),
    (None, "_make"),
    (None, "_fields_"),  # ctypes: a Structure's declared fields
}

# Functions in context/ still over MAX_PARAMETERS while the assembler is reworked into blocks and sources;
# each entry is "<path under zeph_cli>:<qualified name>". Delete an entry when its function is brought under
# the limit (the test fails on an entry that no longer applies, so the list only shrinks).
PARAMETER_EXCEPTIONS: set[str] = set()

# Layers, lowest first: a module imports only from its own layer or those below (what is not in a folder
# named here — the root modules, config/, prompts/ — is the kernel).
LAYERS = ("kernel", "context", "store", "providers", "tools", "features", "agent", "frontends")
# A feature's modules that are command lines, chat-app commands or a worker process: they use the
# frontends' helpers and build agents, as the frontends do.
FEATURE_FRONTS = ("commands", "chat_commands", "recall_command", "reindex", "worker")
# What a feature's source reads the session through: a protocol (imported for type checking only).
SOURCE_HOST = "zeph_cli.agent.source_host"
# Upward edges with their reason: the entry point starts the command line; the config check reads
# `tools.sandbox.allowed_hosts` with the sandbox's own parser, so the rule lives in one place.
LAYER_EXCEPTIONS = {("zeph_cli.__main__", "zeph_cli.frontends.cli.launch"),
                    ("zeph_cli.config", "zeph_cli.tools.sandbox.host_proxy")}

# Import edges left while their module is rewritten (the context view, with the assembler): each one would close
# a circle. Delete an entry when its import is gone (the test fails on an entry that no longer applies).
IMPORT_EXCEPTIONS: set[tuple[str, str]] = set()


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name, for its `__init__.py`)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def parse(path: Path) -> ast.Module:
    return _parsed(path.read_text(encoding="utf-8"), str(path))[0]


def nodes(path: Path) -> list[ast.AST]:
    """Every node of the module, walked once per test session."""
    return _parsed(path.read_text(encoding="utf-8"), str(path))[1]


@functools.cache
def _parsed(text: str, filename: str) -> tuple[ast.Module, list[ast.AST]]:
    tree = ast.parse(text, filename=filename)
    return tree, list(ast.walk(tree))


def top_level_names(tree: ast.Module) -> set[str]:
    """Names a module binds at its top level (definitions, assignments, imports)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


@dataclass
class ImportGraph:
    edges: dict[str, set[str]]

    @classmethod
    def of_package(cls, package: Path = PACKAGE) -> ImportGraph:
        known = modules(package)
        trees = {name: parse(path) for name, path in known.items()}
        bound = {name: top_level_names(tree) for name, tree in trees.items()}
        packages = {name for name, path in known.items() if path.name == "__init__.py"}
        children: dict[str, list[str]] = {}
        for module in known:
            children.setdefault(module.rpartition(".")[0], []).append(module)

        def home(package: str, name: str) -> str:
            """Where `from package import name` leads: the submodule `name`, the package itself when it binds
            `name`, else the one submodule defining it (a lazily exported name), else the package."""
            if f"{package}.{name}" in known:
                return f"{package}.{name}"
            if package not in packages or name in bound[package]:
                return package
            defining = [m for m in children.get(package, ()) if name in bound[m]]
            return defining[0] if len(defining) == 1 else package

        edges: dict[str, set[str]] = {name: set() for name in known}
        for name, path in known.items():
            here = name if name in packages else name.rpartition(".")[0]
            for node in nodes(path):
                if isinstance(node, ast.Import):
                    targets = [alias.name for alias in node.names]
                    edges[name].update(t for t in targets if t in known)
                elif isinstance(node, ast.ImportFrom):
                    if node.level:
                        base = here.split(".")
                        base = base[: len(base) - (node.level - 1)]
                        source = ".".join(base + ([node.module] if node.module else []))
                    else:
                        source = node.module or ""
                    if source not in known:
                        continue
                    for alias in node.names:
                        edges[name].add(home(source, alias.name) if alias.name != "*" else source)
            edges[name].discard(name)
        return cls(edges)

    def cycles(self) -> list[list[str]]:
        """The strongly connected components of more than one module (Tarjan, iterative), each sorted."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        on_stack: set[str] = set()
        stack: list[str] = []
        found: list[list[str]] = []
        counter = 0
        for root in sorted(self.edges):
            if root in index:
                continue
            work = [(root, iter(sorted(self.edges[root])))]
            index[root] = low[root] = counter
            counter += 1
            stack.append(root)
            on_stack.add(root)
            while work:
                node, children = work[-1]
                child = next(children, None)
                if child is not None:
                    if child not in index:
                        index[child] = low[child] = counter
                        counter += 1
                        stack.append(child)
                        on_stack.add(child)
                        work.append((child, iter(sorted(self.edges[child]))))
                    elif child in on_stack:
                        low[node] = min(low[node], index[child])
                    continue
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
        return found


def describe_cycle(graph: ImportGraph, component: list[str]) -> str:
    members = set(component)
    lines = [f"{len(component)} modules: " + ", ".join(component)]
    for module in component:
        inside = sorted(graph.edges[module] & members)
        lines.append(f"  {module} -> {', '.join(inside)}")
    return "\n".join(lines)


def private_reaches(package: Path = PACKAGE) -> list[str]:
    """Every `x._name` where x is not self/cls and the pair is no library idiom, as "path:line: source"."""
    found = []
    for path in modules(package).values():
        for node in nodes(path):
            if not isinstance(node, ast.Attribute):
                continue
            attr = node.attr
            if not attr.startswith("_") or (attr.startswith("__") and attr.endswith("__")):
                continue  # public, or a dunder (the language's, not the object's own)
            owner = node.value
            owner_name = owner.id if isinstance(owner, ast.Name) else None
            if owner_name in ("self", "cls"):
                continue
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
                continue
            if (owner_name, attr) in LIBRARY_IDIOMS or (None, attr) in LIBRARY_IDIOMS:
                continue
            found.append(f"{path.relative_to(package.parent)}:{node.lineno}: {ast.unparse(node)}")
    return found


def parameter_counts(folder: str, package: Path = PACKAGE) -> dict[str, int]:
    """Parameters of every function under zeph_cli/<folder>/, keyed "<path under zeph_cli>:<qualified name>"."""
    counts: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = child.args
                positional = [*args.posonlyargs, *args.args]
                if positional and positional[0].arg in ("self", "cls"):
                    positional = positional[1:]
                count = len(positional) + len(args.kwonlyargs) + (args.vararg is not None) + (args.kwarg is not None)
                counts[f"{where}:{prefix}{child.name}"] = count
                visit(child, f"{prefix}{child.name}.", where)
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.", where)
            else:
                visit(child, prefix, where)

    for path in sorted((package / folder).rglob("*.py")):
        visit(parse(path), "", str(path.relative_to(package)))
    return counts


def test_no_import_circle():
    graph = ImportGraph.of_package()
    assert len(graph.edges) > 50 and sum(map(len, graph.edges.values())) > 200, "the graph missed the package"
    stale = sorted(f"{a} -> {b}" for a, b in IMPORT_EXCEPTIONS if b not in graph.edges.get(a, ()))
    assert not stale, "no longer imported: delete from IMPORT_EXCEPTIONS: " + ", ".join(stale)
    for importer, imported in IMPORT_EXCEPTIONS:
        graph.edges[importer].discard(imported)
    circles = graph.cycles()
    assert not circles, "import circles (every import counted, TYPE_CHECKING and function-local too):\n" + "\n".join(
        describe_cycle(graph, c) for c in circles
    )


def test_few_private_reaches():
    reaches = private_reaches()
    assert len(reaches) <= MAX_PRIVATE_REACHES, (
        f"{len(reaches)} reaches into other objects' private members (at most {MAX_PRIVATE_REACHES}): make what "
        "others need public, or move the logic to its owner:\n" + "\n".join(reaches)
    )


def test_short_signatures():
    counts = {key: n for folder in PARAMETER_CHECKED for key, n in parameter_counts(folder).items()}
    assert counts, "no function found under " + ", ".join(PARAMETER_CHECKED)
    over = {key: n for key, n in counts.items() if n > MAX_PARAMETERS and key not in PARAMETER_EXCEPTIONS}
    assert not over, f"functions with more than {MAX_PARAMETERS} parameters (self/cls not counted):\n" + "\n".join(
        f"{key}: {n}" for key, n in sorted(over.items())
    )
    stale = sorted(key for key in PARAMETER_EXCEPTIONS if counts.get(key, 0) <= MAX_PARAMETERS)
    assert not stale, "no longer over the limit (or gone): delete from PARAMETER_EXCEPTIONS: " + ", ".join(stale)


def test_the_checks_see_what_they_look_for(tmp_path):
    """Each check finds its fault in a sample package: a circle closed only by a TYPE_CHECKING import, one
    through a function-local relative import and a lazily exported name, private reaches, a long signature."""
    root = tmp_path / "pkg"
    files = {
        "__init__.py": "",
        "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
        "b.py": "from . import a\nclass B:\n    pass\n",
        "agent/__init__.py": "from ..lazy import lazy_names\n__getattr__ = lazy_names(__name__, {'Thing': 'thing'})\n",
        "agent/thing.py": "class Thing:\n    def run(self):\n        from ..c import helper\n        return helper\n",
        "c.py": "from .agent import Thing\ndef helper(x):\n    return x._secret, x.inner._deep, os._exit, x._replace()\n",
        "lazy.py": "import os\n",
        "context/__init__.py": "",
        "context/wide.py": (
            "class K:\n    def m(self, a, b, c, d, e, f, g, h):\n        def inner(a, b, c, d, e, f, g, h, *more):\n"
            "            return self._own\n        return inner\n"
        ),
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    graph = ImportGraph.of_package(root)
    assert graph.cycles() == [["pkg.a", "pkg.b"], ["pkg.agent.thing", "pkg.c"]]
    assert [r.split(": ")[1] for r in private_reaches(root)] == ["x._secret", "x.inner._deep"]
    counts = parameter_counts("context", root)
    assert counts == {"context/wide.py:K.m": 8, "context/wide.py:K.m.inner": 9}
    (root / "a.py").write_text("def later():\n    return 1\n")  # the TYPE_CHECKING import gone: no circle there
    assert ImportGraph.of_package(root).cycles() == [["pkg.agent.thing", "pkg.c"]]


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "kernel"


def test_imports_point_down_the_layers():
    upward = []
    for module, targets in ImportGraph.of_package().edges.items():
        here = layer(module)
        if here == "features" and module.rsplit(".", 1)[1] in FEATURE_FRONTS:
            here = "frontends"
        for target in sorted(targets):
            if LAYERS.index(layer(target)) <= LAYERS.index(here):
                continue
            if (module, target) in LAYER_EXCEPTIONS or (here == "features" and target == SOURCE_HOST):
                continue
            upward.append(f"{module} ({here}) -> {target} ({layer(target)})")
    assert upward == [], "imports pointing up the layers:\n" + "\n".join(upward)


def test_the_layer_exceptions_still_apply():
    edges = ImportGraph.of_package().edges
    assert [pair for pair in sorted(LAYER_EXCEPTIONS) if pair[1] not in edges.get(pair[0], ())] == []
