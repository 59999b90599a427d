"""`make lint` holds the review record's fields to their one declaration (dev/review_record.py reads the
LuaCATS `---@class (exact) GeminiCompanionReview` in review/record.lua): a field the code uses that the
class does not declare fails, as does a declared field no code uses."""

from __future__ import annotations

from dev.review_record import RECORD, check, sources

RECORD_TEXT = RECORD.read_text(encoding="utf-8")


def test_every_field_the_review_code_uses_is_declared_once() -> None:
    assert check(RECORD_TEXT, sources()) == []


def test_a_field_written_or_read_but_not_declared_fails() -> None:
    code = sources()
    keys = "lua/gemini_companion/review/keys.lua"
    code[keys] += "\nlocal function planted(d)\n  d.planted = d.also_planted -- d.in_a_comment\nend\n"
    problems = check(RECORD_TEXT, code)
    assert len(problems) == 2
    assert all(p.startswith(f"{keys}:") for p in problems)
    assert "planted is no field" in problems[0] and "also_planted is no field" in problems[1]


def test_a_field_only_the_constructor_sets_is_checked_too() -> None:
    planted = RECORD_TEXT.replace("    key = key,\n", "    key = key,\n    planted = true,\n", 1)
    assert planted != RECORD_TEXT
    assert [p for p in check(planted, sources()) if "planted is no field" in p]


def test_a_field_declared_twice_without_why_or_unused_fails() -> None:
    extra = "---@field key string the file again\n---@field unused boolean\n"
    planted = RECORD_TEXT.replace("---@field id integer", extra + "---@field id integer", 1)
    problems = check(planted, sources())
    assert any("key is declared twice" in p for p in problems)
    assert any("unused has no comment" in p for p in problems)
    assert any("unused is declared but never used" in p for p in problems)
