"""`make doc`: the parts of doc/gemini_companion.txt that the code already says, generated from it.

- The configuration block under "4. CONFIGURATION": every setting with its default, from
  config.py's `CompanionConfig` (the one source of defaults), its choices from the field types.
- The tool list under "5. TOOLS": every built-in Lua tool's name and arguments, from the specs
  the tools register (read from a headless Neovim, as the server reads them).

tests/unit/test_docs.py fails when the committed help differs from what this writes; the prose
around both stays hand-written. Run as `python dev/gen_doc.py [--check]`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]
HELP = ROOT / "doc" / "gemini_companion.txt"
sys.path.insert(0, str(ROOT / "rplugin" / "python3"))

from gemini_companion.config import CompanionConfig, MiB  # noqa: E402

CONFIG_START = "    require('gemini_companion').setup({   -- every setting, with its default\n"
CONFIG_END = "    })\n"
TOOLS_HEAD = "  name                     arguments (? optional)\n"

# Settings Lua keeps itself (callbacks: no JSON, never sent to Python).
LUA_ONLY = "on_ready = nil, on_stop = nil,"
# Where a section is described further.
SEE = {
    "changes": "|gemini-companion-changes|",
    "review": "|gemini-companion-review|",
    "review.gate": "|gemini_companion-review.gate|",
    "terminal": "|gemini-companion-terminal|",
}
# Settings left out of the example because setting them changes meaning (shown as a comment).
AS_COMMENT = {"context.is_trusted": "is_trusted = true"}


def lua_value(value: Any) -> str:
    if value is True or value is False:
        return "true" if value else "false"
    if value is None:
        return "nil"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, list):
        return "{" + ", ".join(lua_value(v) for v in value) + "}"
    return repr(value)


def choices(annotation: Any) -> list[str]:
    """The values a Literal field may take (strings only), else none."""
    if get_origin(annotation) is Literal:
        return [v for v in get_args(annotation) if isinstance(v, str)]
    return []


def comment(path: str, annotation: Any, value: Any) -> str:
    notes = []
    options = choices(annotation)
    if len(options) > 1:
        notes.append(" | ".join(options))
    if isinstance(value, int) and not isinstance(value, bool) and value >= MiB and value % MiB == 0:
        notes.append(f"{value // MiB} MiB")
    if path in SEE:
        notes.append(SEE[path])
    return ("   -- " + ", ".join(notes)) if notes else ""


def section(model: type[BaseModel], prefix: str, indent: int) -> list[str]:
    hints = typing.get_type_hints(model)
    defaults = model()
    pad = " " * indent
    out: list[str] = []
    for name in model.model_fields:
        path = f"{prefix}{name}"
        value = getattr(defaults, name)
        annotation = hints[name]
        if path in AS_COMMENT:
            out.append(f"{pad}-- {AS_COMMENT[path]},")
            continue
        if isinstance(value, BaseModel):
            out.append(f"{pad}{name} = {{{comment(path, annotation, value)}")
            out.extend(section(type(value), path + ".", indent + 2))
            out.append(f"{pad}}},")
            continue
        out.append(f"{pad}{name} = {lua_value(value)},{comment(path, annotation, value)}")
        if path == "display_name":
            out.append(f"{pad}{LUA_ONLY}")
    return out


def config_block() -> str:
    return CONFIG_START + "\n".join(section(CompanionConfig, "", 6)) + "\n" + CONFIG_END


def lua_tool_specs() -> list[dict[str, Any]]:
    """The built-in tools' specs, as the server gets them (a headless Neovim with the plugin on the path)."""
    nvim = (ROOT / ".venv" / "xdg" / "nvim-path").read_text().strip()
    code = (
        f"vim.opt.rtp:prepend({json.dumps(str(ROOT))}); require('gemini_companion.builtin');"
        "io.stdout:write(vim.json.encode(require('gemini_companion.tools').specs()))"
    )
    out = subprocess.run(
        [nvim, "--clean", "--headless", "-c", f"lua {code}", "-c", "qa!"],
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    )
    specs: list[dict[str, Any]] = json.loads(out.stdout)
    return sorted(specs, key=lambda s: s["name"])


def tool_line(spec: dict[str, Any]) -> str:
    schema = spec.get("inputSchema") or {}
    required = set(schema.get("required") or [])
    args = [name + ("" if name in required else "?") for name in sorted(schema.get("properties") or {})]
    return f"  {spec['name']:<24} {', '.join(args) or '-'}"


def tools_block() -> str:
    lines = [tool_line(spec) for spec in lua_tool_specs() if not spec["name"].startswith("dap_")]
    return "\n".join(lines) + "\n"


def generate(text: str) -> str:
    """The help with its generated blocks written afresh."""
    start = text.index(CONFIG_START)
    end = text.index(CONFIG_END, start) + len(CONFIG_END)
    text = text[:start] + config_block() + text[end:]
    head = text.index(TOOLS_HEAD) + len(TOOLS_HEAD)
    tail = text.index("\n\n", head) + 1
    return text[:head] + tools_block() + text[tail:]


def main(argv: list[str]) -> int:
    current = HELP.read_text(encoding="utf-8")
    fresh = generate(current)
    if "--check" in argv:
        if fresh != current:
            sys.stderr.write("doc/gemini_companion.txt is not what `make doc` writes: run make doc\n")
            return 1
        return 0
    HELP.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
