"""The Python half's modules import each other without a cycle, lazily (inside a function) or not
(one circle hung on a single constant: MCP_PATH, now in workspace.py). Imports for type checking alone
(`if TYPE_CHECKING:`) are left out: they never run; so is a module's import of its own package
(`from .. import Agent`), which Python has loaded before the module."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.graphs import cycles

PACKAGE = Path(__file__).resolve().parents[2] / "rplugin" / "python3" / "gemini_companion"


def _module_name(path: Path) -> str:
    parts = ("gemini_companion", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node but those under `if TYPE_CHECKING:`."""
    found: list[ast.AST] = []

    def walk(node: ast.AST) -> None:
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for child in node.orelse:
                walk(child)
            return
        found.append(node)
        for child in ast.iter_child_nodes(node):
            walk(child)

    walk(tree)
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the package's modules it imports anywhere in its code."""
    files = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}  # (a package's __init__ is left out of `from . import x`)
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        needs: set[str] = set()
        for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                needs.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                module = (
                    (f"{base}.{node.module}" if node.module else base) if node.level else node.module or ""
                )
                # `from . import seam` imports the module seam; `from .seam import X`, the module seam
                submodules = {f"{module}.{alias.name}" for alias in node.names} & files.keys()
                needs.update(submodules or {module})
        # A module's own package (agents/__init__.py for agents/claude) is loaded before it anyway.
        graph[name] = {m for m in needs if m in files and not f"{name}.".startswith(f"{m}.")}
    return graph


def test_no_module_imports_another_in_a_cycle() -> None:
    assert cycles(import_graph()) == []


def test_the_graph_sees_lazy_and_relative_imports() -> None:
    graph = import_graph()
    assert "gemini_companion.serving" in graph["gemini_companion.instance"]  # inside ServerInstance._wake
    assert "gemini_companion.seam" in graph["gemini_companion.lifecycle"]  # `from . import seam`
    assert (
        "gemini_companion.base.listener" in graph["gemini_companion.agents.opencode.registrar"]
    )  # `from ... import`


# The layers, lowest first: a module imports only from its own layer or one below (docs/ARCHITECTURE.md §7).
# The stand-alone scripts (`python -I`, stdlib only) and the two contracts every layer speaks (the
# settings, the seam's messages) sit under everything; `agents` are plug-ins on the features and the
# edge; the application modules at the top wire it all.
LAYERS = (
    ("base", "hook_client", "agent_settings", "config", "seam"),
    ("nvim",),
    ("core",),
    ("http",),
    ("agents",),
    ("instance", "serving", "lifecycle", "plugin", ""),
)


def layer_of(module: str) -> int:
    first = module.removeprefix("gemini_companion").removeprefix(".").partition(".")[0]
    return next(i for i, names in enumerate(LAYERS) if first in names)


def test_imports_run_down_the_layers_never_back_up() -> None:
    upward = [
        f"{module} -> {needed}"
        for module, needs in import_graph().items()
        for needed in needs
        if layer_of(needed) > layer_of(module)
    ]
    assert upward == []


def test_every_module_has_a_layer() -> None:
    for module in import_graph():
        layer_of(module)  # StopIteration names a module no layer holds
