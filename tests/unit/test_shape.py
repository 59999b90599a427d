"""The product code keeps a shape a newcomer can read: no module over ~400 lines, and no function
over 60 lines unless the comment just above it says why it is one piece ("on purpose")."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sorted((ROOT / "rplugin" / "python3" / "gemini_companion").glob("*.py"))
LUA = sorted([*(ROOT / "lua").rglob("*.lua"), *(ROOT / "plugin").glob("*.lua")])
MODULE_LINES = 420  # "~400": room for a small fix without a split
FUNCTION_LINES = 60
REASON = "on purpose"
LUA_FUNCTION = re.compile(r"^(\s*)(?:local )?(?:function ([\w.:]+)|([\w.\[\]'\"]+) = function)\b")


def _reason_above(lines: list[str], first: int) -> bool:
    """Whether the comment block right above line `first` (0-based) gives a reason."""
    comment = []
    i = first - 1
    while i >= 0 and lines[i].lstrip().startswith(("#", "--")):
        comment.append(lines[i])
        i -= 1
    return REASON in " ".join(comment)


def _python_functions(path: Path) -> list[tuple[str, int, int]]:
    """(name, first line 0-based, length) of every function; the reason goes above its decorators."""
    tree = ast.parse(path.read_text())
    return [
        (
            node.name,
            min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1,
            (node.end_lineno or node.lineno) - node.lineno + 1,
        )
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def _lua_functions(lines: list[str]) -> list[tuple[str, int, int]]:
    """(name, first line, length) of every named function: up to the `end` at its indentation."""
    found = []
    for i, line in enumerate(lines):
        match = LUA_FUNCTION.match(line)
        if not match:
            continue
        end = re.compile(re.escape(match[1]) + r"end\b")
        last = next((j for j in range(i + 1, len(lines)) if end.match(lines[j])), i)
        found.append((match[2] or match[3], i, last - i + 1))
    return found


def test_no_module_is_too_long() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for path in [*PYTHON, *LUA]
        if (n := len(path.read_text().splitlines())) > MODULE_LINES
    }
    assert not long, f"split these by concern (docs/ARCHITECTURE.md §7 names each module): {long}"


def test_long_functions_say_why() -> None:
    unexplained = []
    for path in [*PYTHON, *LUA]:
        lines = path.read_text().splitlines()
        functions = _python_functions(path) if path.suffix == ".py" else _lua_functions(lines)
        for name, first, length in functions:
            if length > FUNCTION_LINES and not _reason_above(lines, first):
                unexplained.append(f"{path.relative_to(ROOT)}:{first + 1} {name} ({length} lines)")
    assert not unexplained, f"split these, or say why beside them ({REASON!r}): {unexplained}"
