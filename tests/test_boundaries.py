"""Service boundaries: no service imports another's internals (docs/architecture.md).

The agent, the tool workers and the gateway talk over gRPC and HTTP only; what two of them
genuinely share lives in `services/common`, which imports no service at all. The generated
protobuf packages (`s2c.*`) are the contract and may be imported by any client. The MCP
server (`services/mcp`) is such a client: like `common` it imports no service (the gateway
mounts it, never the other way round), so it cannot grow a second engine.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SERVICES = ("agent", "tools", "gateway")
# Packages that import no service at all; they check as one more service does.
CLIENT_PACKAGES = ("common", "mcp")


def imported_modules(source: str, module: str) -> Iterator[str]:
    """Every module `source` (the text of `module`, dotted) imports, relative ones resolved.

    `from services import tools` is reported as `services.tools`, so naming the package
    through its parent is caught too.
    """
    package = module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package[: len(package) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def foreign_imports(source: str, module: str) -> list[str]:
    """The imports of `module` that reach into a service other than its own."""
    own = module.split(".")[1]
    forbidden = [s for s in SERVICES if s != own]
    return sorted(
        {
            name
            for name in imported_modules(source, module)
            if any(name == f"services.{s}" or name.startswith(f"services.{s}.") for s in forbidden)
        }
    )


def modules_of(service: str) -> list[tuple[str, Path]]:
    root = ROOT / "services" / service
    return [
        (".".join(path.relative_to(ROOT).with_suffix("").parts), path)
        for path in sorted(root.rglob("*.py"))
    ]


@pytest.mark.parametrize("service", [*SERVICES, *CLIENT_PACKAGES])
def test_no_service_imports_another_services_internals(service: str) -> None:
    modules = modules_of(service)
    assert len(modules) > 3, f"found no modules under services/{service}"
    violations = {
        module: found
        for module, path in modules
        if (found := foreign_imports(path.read_text(encoding="utf-8"), module))
    }
    assert violations == {}, (
        "a service may import only itself, services.common and the generated s2c.* "
        f"packages; move what two services share to services/common: {violations}"
    )


@pytest.mark.parametrize(
    ("source", "module", "expected"),
    [
        (
            "from services.tools.asset_store import x",
            "services.agent.a",
            ["services.tools.asset_store", "services.tools.asset_store.x"],
        ),
        ("import services.gateway.app", "services.tools.a", ["services.gateway.app"]),
        ("from services import agent", "services.gateway.a", ["services.agent"]),
        (
            "from ..tools import netguard",
            "services.gateway.a",
            ["services.tools", "services.tools.netguard"],
        ),
        (
            "from services.agent import x",
            "services.common.a",
            ["services.agent", "services.agent.x"],
        ),
        (
            "def f():\n    from services.tools import w\n",
            "services.agent.a",
            ["services.tools", "services.tools.w"],
        ),
        ("from services.agent.x import y\nfrom .z import w", "services.agent.a", []),
        ("from services.common.netguard import x\nimport s2c.tools.v1", "services.gateway.a", []),
        ("import services.toolsmith", "services.agent.a", []),
        (
            "from services.gateway.limits import x",
            "services.mcp.a",
            ["services.gateway.limits", "services.gateway.limits.x"],
        ),
    ],
)
def test_the_check_sees_every_spelling_of_an_import(
    source: str, module: str, expected: list[str]
) -> None:
    assert foreign_imports(source, module) == expected


# ---------------------------------------------------------------- inside one service

MAX_LINES = 500


def internal_imports(service: str) -> dict[str, set[str]]:
    """module → the modules of the same service it imports, wherever the import stands:
    at the top, under `TYPE_CHECKING`, or inside a function (each is a dependency the
    module's reader must know, and a cycle through any of them is a cycle)."""
    modules = dict(modules_of(service))
    prefix = f"services.{service}."
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        names = imported_modules(path.read_text(encoding="utf-8"), module)
        graph[module] = {
            # `from package import module` names the module; `from module import name`
            # names the module (its `.name` is not one).
            name
            for name in names
            if name.startswith(prefix) and name in modules and name != module
        }
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("service", [*SERVICES, *CLIENT_PACKAGES])
def test_no_import_cycle_inside_a_service(service: str) -> None:
    graph = internal_imports(service)
    assert sum(map(len, graph.values())) > 3, f"found no imports inside services/{service}"
    assert cycles(graph) == [], (
        "modules of one service import each other in a circle (imports under "
        "TYPE_CHECKING and inside functions count): make the dependency go one way"
    )


def test_the_cycle_check_finds_a_circle_and_only_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_every_file_under_services_is_under_the_line_cap() -> None:
    # Vendored third-party files are not ours to cut.
    files = [
        path
        for path in (ROOT / "services").rglob("*")
        if path.is_file()
        and path.suffix in {".py", ".js", ".mjs", ".css", ".html"}
        and "vendor" not in path.relative_to(ROOT).parts
    ]
    assert len(files) > 50
    long = {
        str(path.relative_to(ROOT)): n
        for path in files
        if (n := len(path.read_text(encoding="utf-8").splitlines())) >= MAX_LINES
    }
    assert long == {}, f"split these files (at most {MAX_LINES - 1} lines): {long}"
