"""`make doc`: the parts of doc/gemini_companion.txt that the code already says, generated from it.

- The configuration block under "4. CONFIGURATION": every setting with its default, from
  config.py's `CompanionConfig` (the one source of defaults), its choices from the field types.
- The tool list under "5. TOOLS": every built-in Lua tool's name and arguments, from the specs
  the tools register (read from a headless Neovim, as the server reads them).
- The agent tables (README's and the help's introduction): each agent's profile `meta` (url,
  description) in lua/gemini_companion/agents/init.lua, in its `names` order.
- README's command table: every `:Gemini*` command plugin/gemini_companion.lua defines, with its
  `desc` (read from a headless Neovim that sourced it, so descriptions built from the profiles
  read as users see them).

tests/unit/test_docs.py fails when the committed help or README differs from what this writes; the
prose around them stays hand-written. Run as `python dev/gen_doc.py [--check]`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]
HELP = ROOT / "doc" / "gemini_companion.txt"
README = ROOT / "README.md"
sys.path.insert(0, str(ROOT / "rplugin" / "python3"))

from gemini_companion.config import CompanionConfig, MiB  # noqa: E402

CONFIG_START = "    require('gemini_companion').setup({   -- every setting, with its default\n"
CONFIG_END = "    })\n"
TOOLS_HEAD = "  name                     arguments (? optional)\n"
AGENTS_HEAD = "  agent      what the plugin does for it\n"
README_AGENTS = ("<!-- agents: dev/gen_doc.py -->\n", "<!-- /agents -->\n")
README_COMMANDS = ("<!-- commands: dev/gen_doc.py -->\n", "<!-- /commands -->\n")

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


def from_neovim(code: str) -> Any:
    """What `code` (Lua, in a headless Neovim with the plugin on the path) writes as JSON."""
    nvim = (ROOT / ".venv" / "xdg" / "nvim-path").read_text().strip()
    code = f"vim.opt.rtp:prepend({json.dumps(str(ROOT))}); {code}"
    out = subprocess.run(
        [nvim, "--clean", "--headless", "-c", f"lua {code}", "-c", "qa!"],
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    )
    return json.loads(out.stdout)


def lua_tool_specs() -> list[dict[str, Any]]:
    """The built-in tools' specs, as the server gets them."""
    specs: list[dict[str, Any]] = from_neovim(
        "require('gemini_companion.builtin');"
        "io.stdout:write(vim.json.encode(require('gemini_companion.tools').specs()))"
    )
    return sorted(specs, key=lambda s: s["name"])


def tool_line(spec: dict[str, Any]) -> str:
    schema = spec.get("inputSchema") or {}
    required = set(schema.get("required") or [])
    args = [name + ("" if name in required else "?") for name in sorted(schema.get("properties") or {})]
    return f"  {spec['name']:<24} {', '.join(args) or '-'}"


def tools_block() -> str:
    lines = [tool_line(spec) for spec in lua_tool_specs() if not spec["name"].startswith("dap_")]
    return "\n".join(lines) + "\n"


def agents() -> list[dict[str, str]]:
    """Each agent's name, title and meta, in the profiles' `names` order."""
    found: list[dict[str, str]] = from_neovim(
        "local a = require('gemini_companion.agents'); io.stdout:write(vim.json.encode(vim.tbl_map("
        "function(n) local p = a.profiles[n]; return { name = n, title = p.title, url = p.meta.url,"
        " description = p.meta.description } end, a.names)))"
    )
    return found


def commands() -> dict[str, str]:
    """The plugin's user commands (`:Gemini*`) -> their `desc`, as plugin/ defines them."""
    defined: dict[str, str] = from_neovim(
        "require('gemini_companion').setup({ auto_start = false });"
        "vim.cmd.runtime('plugin/gemini_companion.lua'); local out = {};"
        "for name, c in pairs(vim.api.nvim_get_commands({ builtin = false })) do"
        " if name:match('^Gemini') then out[name] = c.definition end end;"
        "io.stdout:write(vim.json.encode(out))"
    )
    # Neovim gives a description's key names as the keys themselves (`<CR>` as a carriage return).
    return {name: desc.replace("\r", "<CR>") for name, desc in defined.items()}


def help_agents_block(found: list[dict[str, str]]) -> str:
    lines: list[str] = []
    for agent in found:
        words = textwrap.wrap(f"{agent['title']}: {agent['description']}", 78 - 13)
        lines.append(f"  {agent['name']:<10} {words[0]}")
        lines.extend(f"{'':13}{line}" for line in [*words[1:], agent["url"]])
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """`text` in a Markdown table cell: a `|` ends no cell, a `<CR>` is no HTML tag."""
    return text.replace("|", "\\|").replace("<", "&lt;")


def readme_agents_table(found: list[dict[str, str]]) -> str:
    rows = [f"| [{a['title']}]({a['url']}) | `{a['name']}` | {_cell(a['description'])} |" for a in found]
    return "\n".join(["| agent | program | what the plugin does for it |", "|---|---|---|", *rows]) + "\n"


def readme_commands_table(defined: dict[str, str]) -> str:
    rows = [f"| `:{name}` | {_cell(defined[name])} |" for name in sorted(defined)]
    return "\n".join(["| command | what it does |", "|---|---|", *rows]) + "\n"


def between(text: str, marks: tuple[str, str], block: str) -> str:
    start = text.index(marks[0]) + len(marks[0])
    return text[:start] + block + text[text.index(marks[1], start) :]


def generate_readme(text: str, found: list[dict[str, str]], defined: dict[str, str]) -> str:
    """README with its generated tables written afresh."""
    text = between(text, README_AGENTS, readme_agents_table(found))
    return between(text, README_COMMANDS, readme_commands_table(defined))


def generate(text: str, found: list[dict[str, str]] | None = None) -> str:
    """The help with its generated blocks written afresh."""
    head = text.index(AGENTS_HEAD) + len(AGENTS_HEAD)
    block = help_agents_block(agents() if found is None else found)
    text = text[:head] + block + text[text.index("\n\n", head) + 1 :]
    start = text.index(CONFIG_START)
    end = text.index(CONFIG_END, start) + len(CONFIG_END)
    text = text[:start] + config_block() + text[end:]
    head = text.index(TOOLS_HEAD) + len(TOOLS_HEAD)
    tail = text.index("\n\n", head) + 1
    return text[:head] + tools_block() + text[tail:]


def main(argv: list[str]) -> int:
    found = agents()
    written = {
        HELP: generate(HELP.read_text(encoding="utf-8"), found),
        README: generate_readme(README.read_text(encoding="utf-8"), found, commands()),
    }
    if "--check" in argv:
        stale = [path.name for path, fresh in written.items() if fresh != path.read_text(encoding="utf-8")]
        for name in stale:
            sys.stderr.write(f"{name} is not what `make doc` writes: run make doc\n")
        return 1 if stale else 0
    for path, fresh in written.items():
        path.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
