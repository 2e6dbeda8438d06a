"""The import graph of ``app`` flows one way: no cycles, and each layer imports only below it.

Layers, top to bottom: cli → api (with the web console) → mcp → web → services (with prompts) → providers / db →
logs → config → errors (with protocol, names on the wire) → the package root (its version).
Every import counts, wherever it stands: at module level, under ``if TYPE_CHECKING:`` or
inside a function, so a cycle cannot come back hidden in a function body.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Top to bottom; packages of one layer may import each other (module cycles still fail).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("cli", "cli_access", "cli_backup", "cli_graph", "cli_maintain", "cli_transfer"),
    ("cli_support",),
    ("api", "console"),  # the app mounts the console; both declare their routes' access in web
    ("mcp",),
    ("web",),  # what every HTTP door shares: rate limits, bearer tokens, route access
    ("services", "prompts"),
    ("providers", "db"),
    ("logs",),
    ("config",),
    ("errors", "protocol"),  # protocol: names on the wire the server and its clients share
    ("",),  # app/__init__.py
)
RANK = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}
LAYER_ORDER = " → ".join("/".join(parts) or "app" for parts in LAYERS)


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    where: str  # path:line of the import statement


def modules(package: str) -> dict[str, Path]:
    """Dotted module name → file, for every module of ``package`` (a top-level folder)."""
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _resolve(name: str, known: Mapping[str, Path]) -> str | None:
    """The module ``name`` names, or the package holding it; None outside ``known``."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def import_edges(known: Mapping[str, Path]) -> list[Edge]:
    """Every import between modules of ``known``, found anywhere in a module's source."""
    edges = []
    for module, path in known.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        where = path.relative_to(ROOT)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                # `from pkg import mod` imports the module, `from mod import name` the module
                names = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                    for alias in node.names
                ]
            else:
                continue
            for name in names:
                target = _resolve(name, known)
                if target is not None and target != module:
                    edges.append(Edge(module, target, f"{where}:{node.lineno}"))
    return edges


def find_cycles(edges: Iterable[Edge]) -> list[list[Edge]]:
    """One cycle through each back edge a depth-first walk meets (empty: the graph is a DAG)."""
    graph: dict[str, list[Edge]] = {}
    for edge in edges:
        graph.setdefault(edge.source, []).append(edge)
    state: dict[str, str] = {}  # "open" while on the walk's path, then "done"
    path: list[Edge] = []
    cycles: list[list[Edge]] = []

    def visit(module: str) -> None:
        state[module] = "open"
        for edge in sorted(graph.get(module, []), key=lambda e: e.target):
            if state.get(edge.target) == "open":
                start = next(
                    (i for i, step in enumerate(path) if step.source == edge.target), len(path)
                )
                cycles.append([*path[start:], edge])
            elif edge.target not in state:
                path.append(edge)
                visit(edge.target)
                path.pop()
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return cycles


def describe(cycle: list[Edge]) -> str:
    steps = [cycle[0].source] + [f"{edge.target}  ({edge.where})" for edge in cycle]
    return "\n    -> ".join(steps)


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


APP = modules("app")
EDGES = import_edges(APP)


def test_the_scanner_sees_the_imports() -> None:
    """Guard against a scanner that passes because it finds nothing."""
    pairs = {(edge.source, edge.target) for edge in EDGES}
    assert ("app.services.memory.commit", "app.services.jobs.runner") in pairs  # module level
    assert ("app.cli", "app.services.jobs.runner") in pairs  # inside a function
    assert (
        "app.services.jobs.runner",
        "app.services.jobs.queue",
    ) in pairs  # `from package import module`
    assert all(layer_of(module) in RANK for module in APP), "a package missing from LAYERS"


def test_app_has_no_import_cycle() -> None:
    cycles = find_cycles(EDGES)
    assert not cycles, "import cycles in app (each arrow: the import and where it is):\n  " + (
        "\n  ".join(describe(cycle) for cycle in cycles)
    )


def test_layers_import_only_downwards() -> None:
    upward = [
        f"{edge.where}: {edge.source} imports {edge.target}"
        for edge in EDGES
        if RANK[layer_of(edge.source)] > RANK[layer_of(edge.target)]
    ]
    assert not upward, f"imports against the layer order {LAYER_ORDER}:\n  " + "\n  ".join(upward)


def test_the_runtime_does_not_reach_the_worker() -> None:
    """The runtime builds providers; starting the worker belongs to whoever starts the app."""
    reach, todo = set(), ["app.services.runtime"]
    while todo:
        module = todo.pop()
        for edge in EDGES:
            if edge.source == module and edge.target not in reach:
                reach.add(edge.target)
                todo.append(edge.target)
    assert not reach & {"app.services.jobs.worker", "app.services.jobs.runner"}


def test_shipped_packages_stand_alone() -> None:
    """No test helper inside product code, and the reranker service (its own image)
    needs nothing of app."""
    app, reranker, tests = modules("app"), modules("reranker_server"), modules("tests")
    forbidden = {**{m: tests for m in app}, **{m: {**tests, **app} for m in reranker}}
    leaks = [
        f"{edge.where}: {edge.source} imports {edge.target}"
        for edge in import_edges({**app, **reranker, **tests})
        if edge.source in forbidden and edge.target in forbidden[edge.source]
    ]
    assert not leaks, "\n".join(leaks)


def test_find_cycles_names_the_cycle() -> None:
    edges = [Edge("a", "b", "a.py:1"), Edge("b", "c", "b.py:2"), Edge("c", "a", "c.py:3")]
    (cycle,) = find_cycles([*edges, Edge("c", "d", "c.py:4")])
    assert [edge.source for edge in cycle] == ["a", "b", "c"]
    assert describe(cycle).splitlines()[-1].strip() == "-> a  (c.py:3)"
    assert find_cycles(edges[:2]) == []


# ------------------------------------------------------------------ feature packages

# app/services is rooms, not a flat bag: every module lives in one feature package,
# except the runtime (settings, database and providers built once, shared by all).
FEATURES = frozenset(
    {"access", "common", "facts", "gate", "graph", "jobs", "lifecycle", "memory", "ops"}
    | {"retrieval", "store", "transfer"}
)
OUTSIDE_FEATURES = frozenset({"app.services", "app.services.runtime"})

# Which feature package imports which, as the code stands: a new arrow between rooms is
# a decision, so it is written here (and in docs/architecture.md) before it is made. The
# map still has loops (e.g. memory <-> gate: commit asks the gate, and admitting a rejected
# note commits it); modules never import each other in a loop (test_app_has_no_import_cycle).
FEATURE_IMPORTS: dict[str, frozenset[str]] = {
    "access": frozenset({"common", "graph", "runtime"}),
    "common": frozenset({"facts"}),
    "facts": frozenset({"access", "common", "graph", "jobs", "memory", "ops", "runtime"}),
    "gate": frozenset({"common", "facts", "memory", "ops", "runtime"}),
    "graph": frozenset({"common", "facts", "jobs", "ops", "runtime"}),
    "jobs": frozenset({"common", "facts", "graph", "lifecycle", "ops", "runtime"}),
    "lifecycle": frozenset({"access", "jobs", "memory", "ops", "runtime"}),
    "memory": frozenset(
        {"access", "common", "facts", "gate", "jobs", "ops", "retrieval", "runtime"}
    ),
    "ops": frozenset(
        {"access", "gate", "graph", "jobs", "lifecycle", "memory", "retrieval", "runtime"}
    ),
    "retrieval": frozenset({"common", "facts", "graph", "lifecycle", "ops", "runtime"}),
    "runtime": frozenset({"graph", "jobs", "retrieval"}),
    # store -> memory, retrieval: an item's version is written as a note is (its vectors,
    # passages, fact extraction) and searched by the hybrid search
    "store": frozenset({"common", "jobs", "memory", "retrieval", "runtime"}),
    # transfer -> common, facts, memory: an import checks its rows with the doors' input
    # models and the commit's length limit (transfer/rules.py)
    "transfer": frozenset({"access", "common", "facts", "graph", "lifecycle", "memory", "runtime"}),
}


def feature_of(module: str) -> str | None:
    """The feature package of a services module ("runtime" for the runtime); None outside."""
    parts = module.split(".")
    if parts[:2] != ["app", "services"] or len(parts) < 3:
        return None
    return parts[2]


def test_every_service_module_lives_in_a_feature_package() -> None:
    loose = sorted(
        module
        for module in APP
        if module.startswith("app.services")
        and module not in OUTSIDE_FEATURES
        and feature_of(module) not in FEATURES
    )
    assert not loose, f"modules outside a feature package {sorted(FEATURES)}: {loose}"
    for feature in FEATURES:
        init = ROOT / "app" / "services" / feature / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc) > 40, f"app/services/{feature}: say what the package owns"


def test_feature_packages_import_only_what_the_map_declares() -> None:
    found: dict[str, set[str]] = {}
    where: dict[tuple[str, str], str] = {}
    for edge in EDGES:
        source, target = feature_of(edge.source), feature_of(edge.target)
        if source and target and source != target:
            found.setdefault(source, set()).add(target)
            where.setdefault((source, target), edge.where)
    undeclared = [
        f"{where[(source, target)]}: {source} -> {target}"
        for source, targets in sorted(found.items())
        for target in sorted(targets - FEATURE_IMPORTS.get(source, frozenset()))
    ]
    assert not undeclared, "imports between features not in FEATURE_IMPORTS:\n  " + (
        "\n  ".join(undeclared)
    )
    stale = [
        f"{source} -> {target}"
        for source, targets in FEATURE_IMPORTS.items()
        for target in targets - found.get(source, set())
    ]
    assert not stale, f"FEATURE_IMPORTS lists arrows the code no longer has: {stale}"
