"""Agents live in agents/ on each side (docs/ARCHITECTURE.md, "Adding an agent"): no code outside
those folders names one, so a new agent is one folder per side plus its profile entry. Code only:
comments and docstrings may name an agent as an example."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / "rplugin" / "python3" / "gemini_companion"
LUA = ROOT / "lua" / "gemini_companion"

# The agent `gemini` is lower case or "Gemini CLI"; gemini_companion, gemini-companion.nvim, :GeminiStart
# and "Gemini ●" in the status line are the plugin.
AGENT = re.compile(r"\b((?i:claude|opencode|agy|antigravity)|gemini(?!(-|_|%-)companion)|Gemini CLI)\b")

# Where naming agents is the point.
ALLOWED = {
    "lua/gemini_companion/config.lua",  # the settings' schema: claude.enabled, integrations.opencode
    "lua/gemini_companion/env.lua",  # the variables agents read: GEMINI_CLI_IDE_*, CLAUDE_CODE_SSE_PORT
    "rplugin/python3/gemini_companion/config.py",  # the settings' schema
    "rplugin/python3/gemini_companion/hook_client.py",  # a stand-alone script (python -I): no imports of ours
    "rplugin/python3/gemini_companion/seam.py",  # the typed names that cross to Lua
    "lua/gemini_companion/mention.lua",  # the at-mention's public path (README, :help): agents/claude's
    # The HTTP edge's admission: which headers may carry the token is the edge's policy, checked in
    # one place for every request before any route (an agent's or MCP's) runs; a header an agent
    # package added would put part of the authentication outside the file that is audited for it.
    "rplugin/python3/gemini_companion/http/policy.py",
}
# Every file once named here has its agent lines in a profile or in agents/ (issue 40, item 3).
NOT_YET: set[str] = set()


def _python_code_lines(path: Path) -> list[tuple[int, str]]:
    """(line, text) of the code: no comments, no docstrings."""
    source = path.read_text(encoding="utf-8")
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docstrings.update(range(value.lineno, (value.end_lineno or value.lineno) + 1))
    lines: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE) or token.start[0] in docstrings:
            continue
        lines[token.start[0]] = lines.get(token.start[0], "") + " " + token.string
    return sorted(lines.items())


def _lua_code_lines(path: Path) -> list[tuple[int, str]]:
    return [
        (number, line.split("--", 1)[0])
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if not line.lstrip().startswith("---")
    ]


def leaks(root: Path = ROOT) -> dict[str, list[str]]:
    """file -> its code lines that name an agent, for every product file outside agents/."""
    files = [
        *(root / "rplugin" / "python3" / "gemini_companion").rglob("*.py"),
        *(root / "lua" / "gemini_companion").rglob("*.lua"),
        *(root / "plugin").glob("*.lua"),
    ]
    found: dict[str, list[str]] = {}
    for path in sorted(files):
        name = path.relative_to(root).as_posix()
        if "/agents/" in name or name in ALLOWED | NOT_YET:
            continue
        code = _python_code_lines(path) if path.suffix == ".py" else _lua_code_lines(path)
        named = [f"{number}: {text.strip()}" for number, text in code if AGENT.search(text)]
        if named:
            found[name] = named
    return found


def test_no_code_outside_agents_names_an_agent() -> None:
    assert leaks() == {}


def test_a_planted_name_is_found(tmp_path: Path) -> None:
    lua = tmp_path / "lua" / "gemini_companion"
    (lua / "agents" / "claude").mkdir(parents=True)
    (lua / "agents" / "claude" / "mention.lua").write_text("return require('x.claude')\n")
    (lua / "typing.lua").write_text(
        "-- Claude Code, in a comment\nlocal p = require('gemini_companion.agents.claude')\n"
    )
    python = tmp_path / "rplugin" / "python3" / "gemini_companion"
    python.mkdir(parents=True)
    (python / "serving.py").write_text('"""Serves claude."""\nAGENTS = ["gemini"]  # and opencode\n')
    (python / "plugin.py").write_text('"""gemini-companion.nvim"""\nimport gemini_companion\n')
    assert leaks(tmp_path) == {
        "lua/gemini_companion/typing.lua": ["2: local p = require('gemini_companion.agents.claude')"],
        "rplugin/python3/gemini_companion/serving.py": ['2: AGENTS = [ "gemini" ]'],
    }
