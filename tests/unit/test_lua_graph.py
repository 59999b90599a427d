"""The Lua half's modules require each other without a cycle, lazily or not (issue 26): a cycle is a
load order to dodge (`local function bridge() return require(...) end`) and a change that ripples. The
seam's entry points (bridge.lua) are required by nothing: Python calls them."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.graphs import cycles

ROOT = Path(__file__).resolve().parents[2]
LUA = ROOT / "lua"
REQUIRE = re.compile(r"require\(['\"](gemini_companion[\w.]*)['\"]\)")


def require_graph() -> dict[str, set[str]]:
    """module -> the plugin modules it requires anywhere in its code (comments left out)."""
    files = {}
    for path in LUA.rglob("*.lua"):
        parts = path.relative_to(LUA).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "init" else parts)] = path
    files["plugin"] = ROOT / "plugin" / "gemini_companion.lua"
    graph = {}
    for name, path in files.items():
        code = "\n".join(line.split("--", 1)[0] for line in path.read_text(encoding="utf-8").splitlines())
        graph[name] = {m for m in REQUIRE.findall(code) if m in files and m != name}
    return graph


def test_no_module_requires_another_in_a_cycle() -> None:
    assert cycles(require_graph()) == []


def test_the_cycle_finder_finds_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_requires_the_seams_entry_points() -> None:
    assert [m for m, needs in require_graph().items() if "gemini_companion.bridge" in needs] == []
