"""dev/shape.py reports the largest modules and longest functions (a report, not a gate: lint measures
complexity). Its readers of both languages must find what is there."""

from __future__ import annotations

from dev.shape import ROOT, lua_functions, modules, python_functions, report


def test_the_report_finds_functions_of_both_languages_with_their_lengths() -> None:
    lua = {
        name: length for name, _, length in lua_functions(ROOT / "lua" / "gemini_companion" / "sanitize.lua")
    }
    assert lua == {"M.agent_text": 3}
    python = {
        name for name, _, _ in python_functions(ROOT / "rplugin" / "python3" / "gemini_companion" / "seam.py")
    }
    assert "parse_event" in python


def test_the_report_covers_every_module() -> None:
    text = report()
    assert text.startswith(f"{len(modules())} modules, ")
    assert "largest modules:" in text and "longest functions:" in text
