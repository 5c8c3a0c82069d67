"""No import cycle among chatmem's modules or packages (issue 27: `text` <-> `redaction` was one).

The graph is read from the source with `ast`: an edge for each import a module
runs when it is loaded (its top-level statements, those under a top-level
`if`, `try` or `with` and in class bodies included), none for imports inside
functions or under `if TYPE_CHECKING:`. `from . import x` is an edge to the
submodule `x` when there is one, else to the package; a package's
`__init__` is not counted as imported by its submodules. `chatmem/migrations`
(Alembic's scripts, loaded by path) is left out.

A cycle is a strongly connected set of modules: each imports, at last, all
the others. The same is checked between packages, each module counted as
its top-level package under chatmem (`chatmem.memory.tools` as
`chatmem.memory`, `chatmem.core` as itself). The sets listed below existed
before this test and are left to the branches that untangle them; a set may
only shrink. Any other set, or one of these grown by a member, fails the test.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.db_free  # reads the source tree only

PACKAGE = Path(__file__).resolve().parent.parent / "chatmem"

# Between modules: none since `chatmem.text` became a package.
KNOWN_CYCLES: list[frozenset[str]] = []
# Between packages: none since `tool_slug` moved to `chatmem.tools`, so the
# registry no longer imports the domain that registers on it.
KNOWN_PACKAGE_CYCLES: list[frozenset[str]] = []


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(path): path
        for path in sorted(PACKAGE.rglob("*.py"))
        if "migrations" not in path.relative_to(PACKAGE).parts[:1]
    }


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _loaded_imports(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports a module runs when it is loaded."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _loaded_imports(node.body)
            yield from _loaded_imports(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _loaded_imports(block)
            for handler in node.handlers:
                yield from _loaded_imports(handler.body)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from _loaded_imports(node.body)


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _loaded_imports(ast.parse(path.read_text(), str(path)).body):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, *([base] if base else [])])
                submodules = [f"{base}.{alias.name}" for alias in node.names]
                found = [m for m in submodules if m in modules]
                targets = found if len(found) == len(submodules) else [base, *found]
            for target in targets:
                # `import chatmem.a.b` loads chatmem.a.b; keep the longest known prefix
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def _package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph with each module counted as its top-level package under chatmem."""

    def top(name: str) -> str:
        return ".".join(name.split(".")[:2])

    packages: dict[str, set[str]] = {top(name): set() for name in graph}
    for name, targets in graph.items():
        packages[top(name)] |= {top(t) for t in targets if top(t) != top(name)}
    return packages


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected sets of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            members = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.add(member)
                if member == node:
                    break
            if len(members) > 1:
                found.append(frozenset(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_is_read() -> None:
    graph = _graph()
    assert "chatmem.text.redaction" in graph["chatmem.text.rules"]
    assert "chatmem.text.invisible" in graph["chatmem.text.redaction"]
    assert "chatmem.errors" in graph["chatmem.text.rules"]


def test_a_cycle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [frozenset({"a", "b", "c"})]


def test_the_text_package_has_no_cycle() -> None:
    cycles = _cycles(_graph())
    assert not [c for c in cycles if any(m.startswith("chatmem.text") for m in c)]


def test_no_import_cycle_but_the_known_ones() -> None:
    new = [
        sorted(cycle)
        for cycle in _cycles(_graph())
        if not any(cycle <= known for known in KNOWN_CYCLES)
    ]
    assert new == [], "import cycles among chatmem's modules (see this test's docstring)"


def test_no_package_cycle_but_the_known_ones() -> None:
    new = [
        sorted(cycle)
        for cycle in _cycles(_package_graph(_graph()))
        if not any(cycle <= known for known in KNOWN_PACKAGE_CYCLES)
    ]
    assert new == [], "import cycles among chatmem's packages (see this test's docstring)"


# The domain's floor (issue 27): memory/ takes plain values and a SQLAlchemy
# Session, so it imports no web framework (Flask-SQLAlchemy included, even
# for types), no HTTP client and nothing that sits above it (the edge, the
# workers, the facade, the providers).
ABOVE_THE_DOMAIN = (
    "flask",
    "flask_sqlalchemy",
    "werkzeug",
    "urllib.request",
    "httpx",
    "chatmem.http",
    "chatmem.workers",
    "chatmem.core",
    "chatmem.extension",
    "chatmem.state",
    "chatmem.auth",
    "chatmem.providers",
    "chatmem.demo",
    "chatmem.cli",
)


def _every_import(name: str, path: Path, *, for_types: bool = True) -> set[str]:
    """Every module a file imports, at load time, inside a function or (by default) for types."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    checking = {
        id(inner)
        for node in ast.walk(tree)
        if not for_types and isinstance(node, ast.If) and _is_type_checking(node.test)
        for inner in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in checking:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            found |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return found


def _domain_imports() -> dict[str, set[str]]:
    return {
        name: _every_import(name, path)
        for name, path in _modules().items()
        if name == "chatmem.memory" or name.startswith("chatmem.memory.")
    }


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def test_the_domain_imports_nothing_above_it() -> None:
    found = {
        name: sorted(m for m in imports if any(_under(m, p) for p in ABOVE_THE_DOMAIN))
        for name, imports in _domain_imports().items()
    }
    assert {name: bad for name, bad in found.items() if bad} == {}


def test_the_domain_check_can_fail() -> None:
    imports = _every_import("chatmem.memory.held", PACKAGE / "memory" / "held.py")
    assert "sqlalchemy.orm.Session" in imports  # the unit of work the domain takes
    curation = PACKAGE / "memory" / "curation.py"  # imports its models for types only
    assert "chatmem.memory.models" in _every_import("chatmem.memory.curation", curation)
    assert "chatmem.memory.models" not in _every_import(
        "chatmem.memory.curation", curation, for_types=False
    )
    assert not any(_under(m, "flask") for m in {"flask_sqlalchemy", "flasks"})
    assert _under("flask.globals", "flask")


MODULE_LINES_MAX = 400  # issue 27: one idea a module; a longer one is split, not grown


def test_no_module_of_the_package_is_over_400_lines() -> None:
    sizes = {
        str(path.relative_to(PACKAGE)): len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.rglob("*.py")
        if "migrations" not in path.parts
    }
    assert len(sizes) > 100, "the tree was read"
    assert {name: n for name, n in sizes.items() if n > MODULE_LINES_MAX} == {}
