"""The review record's fields, checked against their one declaration (run by `make lint`).

    .venv/bin/python dev/review_record.py

A review is one Lua table that half a dozen modules write and read. Its fields are declared once, with
their types, as LuaCATS annotations: `---@class (exact) GeminiCompanionReview` in
lua/gemini_companion/review/record.lua. No Lua type checker is installable here (LuaLS and emmylua are
neither on PyPI, npm nor Debian), so this reads those annotations and fails when code in review/ or
changes/ writes or reads a field of a record (a variable named as in RECORD_NAMES) that the class
does not declare, or when a declared field is never used: a new field is declared, with why, or the
lint says where it is missing."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LUA = ROOT / "lua" / "gemini_companion"
RECORD = LUA / "review" / "record.lua"
CLASS = "GeminiCompanionReview"
# The names a review record goes by in the scanned code: `d` everywhere, `replaced` for the review a
# newer proposal replaces (review/init.lua).
RECORD_NAMES = ("d", "replaced")
SCANNED = ("review", "changes")

_CLASS_LINE = re.compile(rf"^---@class \(exact\) {CLASS}\b")
# `---@field name type why`: the type has no space (`fun()|nil`, `integer[]`), the why is required.
_FIELD_LINE = re.compile(r"^---@field (\w+) (\S+)(?: (.*))?$")
_USE = re.compile(rf"(?<![\w.:])({'|'.join(RECORD_NAMES)})\.(\w+)")
# The keys of the table the constructor returns (record.lua's `M.new`): `    name = value,`.
_KEY = re.compile(r"^    (\w+) = ")


@dataclass(frozen=True)
class Use:
    path: str
    line: int
    field: str


def declared(text: str) -> tuple[dict[str, str], list[str]]:
    """The class's fields (name -> type) from record.lua's text, and what is wrong with them."""
    fields: dict[str, str] = {}
    problems: list[str] = []
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _CLASS_LINE.match(line)), None)
    if start is None:
        return fields, [f"record.lua: no `---@class (exact) {CLASS}`"]
    for number, line in enumerate(lines[start + 1 :], start + 2):
        if not line.startswith("---"):
            break
        if not line.startswith("---@field"):
            continue  # a why's next line
        match = _FIELD_LINE.match(line)
        if not match:
            problems.append(f"record.lua:{number}: not `---@field name type why`: {line}")
            continue
        name, kind, why = match.groups()
        if name in fields:
            problems.append(f"record.lua:{number}: {name} is declared twice")
        if not why:
            problems.append(f"record.lua:{number}: {name} has no comment saying what it is for")
        fields[name] = kind
    return fields, problems


def _code(line: str) -> str:
    """The line without its comment (a `--` inside a string is rare in these files: none today)."""
    return line.split("--", 1)[0]


def uses(path: str, text: str) -> list[Use]:
    """Every `record.field` the code of one file writes or reads."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        found += [Use(path, number, m.group(2)) for m in _USE.finditer(_code(line))]
    return found


def constructed(path: str, text: str) -> list[Use]:
    """The keys of the record the constructor (`function M.new`) returns."""
    found = []
    inside = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("function M.new("):
            inside = True
        elif inside and line == "end":
            break
        elif inside and (match := _KEY.match(line)):
            found.append(Use(path, number, match.group(1)))
    return found


def check(record_text: str, sources: dict[str, str]) -> list[str]:
    """What is wrong: undeclared fields used (file:line), declared ones never used."""
    fields, problems = declared(record_text)
    used = constructed("lua/gemini_companion/review/record.lua", record_text)
    for path, text in sources.items():
        used += uses(path, text)
    problems += [
        f"{u.path}:{u.line}: {u.field} is no field of {CLASS} (declare it, with why, in review/record.lua)"
        for u in used
        if u.field not in fields
    ]
    seen = {u.field for u in used}
    problems += [f"record.lua: {name} is declared but never used" for name in fields if name not in seen]
    return problems


def sources() -> dict[str, str]:
    files = sorted(p for folder in SCANNED for p in (LUA / folder).rglob("*.lua"))
    return {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in files}


def main() -> int:
    problems = check(RECORD.read_text(encoding="utf-8"), sources())
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
