"""The layout (docs/project/layout.md): the page names every module of the library, of the
cross-check and of the explorer, and no other; no two modules share a name; the lower layers never import the public
constructs; and no module imports one that imports it back."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from tests.conftest import ROOT

LAYOUT = ROOT / "docs" / "project" / "layout.md"
PACKAGE = ROOT / "idempotent_constructs"
# The public names of the run-time modules, kept for what users imported before runtime/ (each a re-export).
PUBLIC_NAMES = {"operations.py", "executions.py"}
# Below the public constructs: none of these imports a module of the top layer (type-only imports aside).
LOWER = ("_synth", "_jsonata", "_readers", "runtime", "lambda_src")
TOP = {path.stem for path in PACKAGE.glob("*.py")} - {"__init__", "errors"} | {"guard", "cli", "testing"}


def modules() -> dict[str, Path]:
    """Each module of the library by its dotted name."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(name: str, path: Path, *, for_types: bool = False) -> set[str]:
    """What ``name`` imports of the library when it runs (every import outside ``if TYPE_CHECKING:``), or
    with ``for_types`` also what it imports for its types alone."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test) and not for_types:
                continue
            if isinstance(child, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - child.level + 1] if child.level else []
                target = ".".join([*base, child.module] if child.module else base) if child.level else (child.module or "")
                found.update(f"{target}.{alias.name}" for alias in child.names)
                found.add(target)
            elif isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            visit(child)

    visit(ast.parse(path.read_text()))
    return {imported for imported in found if imported.startswith("idempotent_constructs")}


def test_the_layout_page_lists_exactly_the_modules_there_are():
    block = LAYOUT.read_text().split("<!-- layout -->\n```\n")[1].split("```\n<!-- /layout -->")[0]
    listed, folders = set(), []
    for line in block.splitlines():
        indent = (len(line) - len(line.lstrip())) // 2
        name = line.split()[0]
        folders = folders[:indent]
        if name.endswith("/"):
            folders.append(name)
        else:
            listed.add("".join(folders) + name)
    actual = {
        path.relative_to(ROOT).as_posix()
        for top in ("idempotent_constructs", "crosscheck", "explore")
        for path in (ROOT / top).rglob("*")
        if path.suffix in (".py", ".jsonata") and "__pycache__" not in path.parts
    }
    assert listed == actual, {"missing from the layout page": sorted(actual - listed), "gone": sorted(listed - actual)}


def test_no_two_modules_of_the_library_share_a_name():
    names = Counter(
        path.name
        for path in modules().values()
        if path.name not in ("__init__.py", "__main__.py") and not (path.parent == PACKAGE and path.name in PUBLIC_NAMES)
    )
    assert [name for name, count in names.items() if count > 1] == []


def test_the_lower_layers_never_import_a_public_construct_module():
    upward = {
        name: sorted(imported for imported in imports(name, path) if imported.split(".")[1] in TOP)
        for name, path in modules().items()
        if name.split(".")[1:2] and name.split(".")[1] in LOWER
    }
    assert {name: found for name, found in upward.items() if found} == {}


def test_no_module_imports_one_that_imports_it_back_not_even_for_its_types():
    library = modules()
    graph = {
        name: {imported for imported in imports(name, path, for_types=True) if imported in library and imported != name}
        for name, path in library.items()
    }

    def within(name: str, package: str) -> bool:
        return name.startswith(package + ".")

    # A module that imports its own package's __init__ (the construct, for its type) is not a circle.
    circles = sorted(
        (name, imported)
        for name, targets in graph.items()
        for imported in targets
        if not within(name, imported) and not within(imported, name) and reaches(graph, imported, name, within)
    )
    assert circles == []


def reaches(graph: dict[str, set[str]], start: str, goal: str, within: object) -> bool:
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            todo.extend(target for target in graph.get(node, ()) if not (goal.startswith(target + ".")))
    return False


def test_no_module_of_the_library_is_longer_than_a_newcomer_can_hold_in_their_head():
    longest = 350
    long_ones = {name: lines for name, path in modules().items() if (lines := len(path.read_text().splitlines())) > longest}
    assert long_ones == {}, f"split these into rooms of at most {longest} lines"
