"""The package's house rules, read from every import with `ast` (not grep).

- at most six modules at the package root;
- no import cycle between modules, however the import is written (at the top, inside a
  function, under TYPE_CHECKING);
- the stages never import the commands, the render cache or the process runtime; `check/` and
  `validate/` never import `emit/`; only `cli.py` imports `commands/`;
- no two modules share a name across the stage folders, except the modules named after one
  component or topic, which each stage has one of (emit/kueue.py beside check/kueue.py).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import gpuplan

PACKAGE = Path(gpuplan.__file__).parent
ROOT_MODULES = {"__init__", "__main__", "cli", "pipeline", "diagnostics", "exitcode"}
STAGES = (
    "inputs",
    "model",
    "plan",
    "check",
    "emit",
    "overlay",
    "validate",
    "writer",
    "diff",
    "components",
    "crds",
    "manifests",
    "gpus",
    "requirements",
    "views",
)
EDGE = ("commands", "cache", "runtime")
# A topic each stage has a module of: a component, or a GPU feature checked, planned and emitted.
TOPICS = {
    "admission",
    "argocd", "cluster_autoscaler", "dra", "dra_driver", "drivers", "gke", "gpu_operator", "kai", "karpenter",
    "karpenter_azure", "kueue", "monitoring", "multus", "networks", "nfd", "nodeclass", "sriov",
    "tenants", "topology", "volcano", "__init__", "base",
}  # fmt: skip


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path, name: str, known: set[str]) -> set[str]:
    """Return the gpuplan modules a module imports, wherever in it the import stands."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            # `from a import b` imports a.b when b is a module, else a
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        else:
            continue
        found |= {t for t in targets if t in known and t != name}
    return found


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports(path, name, known) for name, path in found.items()}


def stage_of(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in (*STAGES, *EDGE)) else ""


def test_at_most_six_modules_at_the_root() -> None:
    found = {p.stem for p in PACKAGE.glob("*.py")}
    assert found <= ROOT_MODULES, found - ROOT_MODULES


def test_no_import_cycles() -> None:
    edges = graph()
    # Tarjan's strongly connected components: any component of more than one module is a cycle
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    assert cycles == []


def test_stages_keep_to_their_side_of_the_pipeline() -> None:
    wrong = []
    for name, targets in graph().items():
        stage = stage_of(name)
        for target in targets:
            aimed = stage_of(target)
            if stage in STAGES and aimed in EDGE:
                wrong.append(f"{name} imports {target}: a stage never imports {aimed}/")
            if stage in ("check", "validate") and aimed == "emit":
                wrong.append(f"{name} imports {target}: {stage}/ never imports emit/")
            if aimed == "commands" and stage != "commands" and name != "gpuplan.cli":
                wrong.append(f"{name} imports {target}: only gpuplan.cli imports commands/")
    assert wrong == []


def test_no_two_modules_share_a_name_across_the_stages() -> None:
    by_leaf: dict[str, list[str]] = defaultdict(list)
    for name, path in modules().items():
        if path.name != "__init__.py" and stage_of(name):
            by_leaf[path.stem].append(name)
    shared = {leaf: names for leaf, names in by_leaf.items() if len(names) > 1}
    assert {leaf for leaf in shared if leaf not in TOPICS} == set(), shared
