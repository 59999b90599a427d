"""The test suite's own shape: a test module is never a library for another (shared helpers and
fixtures live in tests/support/), so a test can be moved to another tier, or deleted, alone."""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_no_test_module_imports_another() -> None:
    offenders = {
        str(path.relative_to(TESTS)): sorted(
            name for name in imported_modules(path) if name.rsplit(".", 1)[-1].startswith("test_")
        )
        for path in TESTS.rglob("*.py")
        if "node_modules" not in path.parts
    }
    assert {path: names for path, names in offenders.items() if names} == {}
