"""The layer contract, counted at module and function level.

pyproject.toml lists the layers of csro_tui, top to bottom (`lint-imports` checks
them in CI too). This test reads that same list and checks, over every import
statement in the package, including those inside functions and under
TYPE_CHECKING:

- no cycle between packages;
- every import goes down the layers (siblings in one layer import neither way);
- an import left inside a function says why, in a comment on its line or just
  above it: start-up time (what importing it would load) or an optional extra.
  Standard-library imports are exempt (cheap), and so is the sandbox child
  (host_*.py: stdlib only, never imports csro_tui);
- the shared records import nothing of the project at run time.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "csro_tui"
CHILD = {"host_main.py", "host_kernel.py", "host_guard.py", "host_channel.py", "host_start.py"}
REASON = re.compile(r"#.*\b(start-up|optional extra)\b", re.IGNORECASE)


def layers() -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    contract = next(c for c in config if c["type"] == "layers")
    return [{name.strip() for name in layer.split("|")} for layer in contract["layers"]]


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if "seeds" in parts or path.name in CHILD:
            continue  # policy modules and the sandbox child: never import csro_tui
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(name: str, path: Path) -> list[tuple[str, int, bool, ast.stmt]]:
    """(imported module, line, inside a function, node) for each import of the project or a third party."""
    tree = ast.parse(path.read_text())
    is_package = path.name == "__init__.py"
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                found.append((target, child.lineno, in_function, child))
            elif isinstance(child, ast.Import):
                found.extend((alias.name, child.lineno, in_function, child) for alias in child.names)
            visit(child, inside)

    visit(tree, False)
    return found


def package_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "csro_tui" and len(parts) > 1 else None


def package_edges() -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = {}
    for name, path in modules().items():
        source = package_of(name)
        for target, line, _, _ in imports(name, path):
            target_package = package_of(target)
            if source and target_package and target_package != source:
                edges.setdefault((source, target_package), []).append(f"{name}:{line}")
    return edges


def test_the_layers_name_every_package_of_csro_tui():
    named = set().union(*layers())
    packages = {package_of(name) for name in modules()} - {None}
    assert packages == named


def test_no_cycle_between_packages_even_through_imports_inside_functions():
    graph: dict[str, set[str]] = {}
    for source, target in package_edges():
        graph.setdefault(source, set()).add(target)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and not seen.add(nxt) and reaches(nxt, goal, seen)):
                return True
        return False

    cycles = sorted(f"{a} <-> {b}" for a, b in package_edges() if reaches(b, a, set()))
    assert cycles == []


def test_every_import_goes_down_the_layers():
    level = {package: index for index, layer in enumerate(layers()) for package in layer}
    upward = [
        f"{source} -> {target} ({', '.join(where[:3])})"
        for (source, target), where in sorted(package_edges().items())
        if level[target] <= level[source]
    ]
    assert upward == []


def test_an_import_inside_a_function_says_why():
    lines_of: dict[Path, list[str]] = {}
    unexplained = []
    for name, path in modules().items():
        lines = lines_of.setdefault(path, path.read_text().splitlines())
        for target, line, in_function, node in imports(name, path):
            top = target.split(".")[0]
            if not in_function or top in sys.stdlib_module_names or top.startswith("_") or not top:
                continue
            if not _explained(lines, node):
                unexplained.append(f"{path.relative_to(ROOT)}:{line}: {lines[line - 1].strip()}")
    assert unexplained == []


def _explained(lines: list[str], node: ast.stmt) -> bool:
    """A reason on the statement's lines, or in the comments just above it (above the run of
    imports it belongs to, so one comment can speak for a few)."""
    if any(REASON.search(lines[i]) for i in range(node.lineno - 1, node.end_lineno)):
        return True
    index = node.lineno - 2
    while index >= 0:
        text = lines[index].strip()
        if text.startswith("#"):
            if REASON.search(text):
                return True
        elif not (text.startswith(("from ", "import ")) or text.endswith((",", "(")) or text == ")"):
            return False
        index -= 1
    return False


def test_the_records_import_nothing_of_the_project_at_run_time():
    path = PACKAGE / "records.py"
    tree = ast.parse(path.read_text())
    runtime = [
        node for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom)) and "csro_tui" in ast.unparse(node)
    ]
    assert runtime == []  # only under `if TYPE_CHECKING:`


def test_no_test_module_imports_another():
    """Shared test code lives in helpers (conftest.py, fakes.py, tests/tui/helpers.py, ...), never in a
    test module another one imports: running or moving one file must not change another's."""
    tests = ROOT / "tests"
    offenders = []
    for path in sorted(tests.rglob("*.py")):
        if "corpus" in path.parts or "sandbox_policies" in path.parts:
            continue  # hostile and sample policy files, never imported by the tests
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else [])
            if any(name.split(".")[-1].startswith("test_") for name in names):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []
