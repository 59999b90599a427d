"""The shape of the product code, reported (never a gate: complexity is what lint measures).

    .venv/bin/python dev/shape.py          the largest modules and the longest functions

A newcomer reads a module as one concept, whatever its length; long ones are listed so a split can be
considered where a module holds two concepts."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LUA_FUNCTION = re.compile(r"^(\s*)(?:local )?(?:function ([\w.:]+)|([\w.\[\]'\"]+) = function)\b")


def modules() -> list[Path]:
    python = (ROOT / "rplugin" / "python3" / "gemini_companion").rglob("*.py")
    lua = [*(ROOT / "lua").rglob("*.lua"), *(ROOT / "plugin").glob("*.lua")]
    return sorted([*python, *lua])


def python_functions(path: Path) -> list[tuple[str, int, int]]:
    """(name, first line 1-based, length) of every function."""
    return [
        (node.name, node.lineno, (node.end_lineno or node.lineno) - node.lineno + 1)
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def lua_functions(path: Path) -> list[tuple[str, int, int]]:
    """(name, first line 1-based, length) of every named function: up to the `end` at its indentation."""
    lines, found = path.read_text().splitlines(), []
    for i, line in enumerate(lines):
        match = LUA_FUNCTION.match(line)
        if match:
            end = re.compile(re.escape(match[1]) + r"end\b")
            last = next((j for j in range(i + 1, len(lines)) if end.match(lines[j])), i)
            found.append((match[2] or match[3], i + 1, last - i + 1))
    return found


def functions_of(path: Path) -> list[tuple[str, int, int]]:
    return python_functions(path) if path.suffix == ".py" else lua_functions(path)


def report(top: int = 10) -> str:
    sizes = sorted(((len(p.read_text().splitlines()), p) for p in modules()), reverse=True)
    functions = sorted(
        (
            (length, f"{path.relative_to(ROOT)}:{line} {name}")
            for path in modules()
            for name, line, length in functions_of(path)
        ),
        reverse=True,
    )
    out = [f"{len(sizes)} modules, {sum(n for n, _ in sizes)} lines", "", "largest modules:"]
    out += [f"  {n:5d}  {p.relative_to(ROOT)}" for n, p in sizes[:top]]
    out += ["", "longest functions:"]
    out += [f"  {n:5d}  {where}" for n, where in functions[:top]]
    return "\n".join(out)


if __name__ == "__main__":
    print(report())
