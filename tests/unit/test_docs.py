"""The documentation stays true to the tree: docs/ARCHITECTURE.md names every module, and no
comment in the code cites a document (or a section of one) that is not in the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "rplugin" / "python3" / "gemini_companion"
LUA = ROOT / "lua" / "gemini_companion"
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"

# Source trees whose comments may cite documents; vendored test dependencies are not ours.
CODE_DIRS = ("rplugin", "lua", "plugin", "tests", "bench")
CODE_SUFFIXES = {".py", ".lua", ".mjs", ".sh"}
SKIPPED_PARTS = {"node_modules", "fuzz_corpus", "__pycache__"}
MD_CITATION = re.compile(r"[\w./-]*[\w-]\.md\b")
SECTION_CITATION = re.compile(r"(docs/[\w-]+\.md) §(\d+)")


def _code_files() -> list[Path]:
    return [
        path
        for top in CODE_DIRS
        for path in (ROOT / top).rglob("*")
        if path.suffix in CODE_SUFFIXES
        and path.is_file()
        and not SKIPPED_PARTS & set(path.parts)
        and path != Path(__file__).resolve()  # its own patterns are not citations
    ]


# File names that are not citations: the context file Gemini CLI reads, which extension.lua writes,
# and the rules file agy reads, which agents/agy/plugin.lua writes.
NOT_CITATIONS = {"GEMINI.md", "AGENTS.md", "rules/AGENTS.md"}


def _cited_path_exists(source: Path, cited: str) -> bool:
    if cited in NOT_CITATIONS:
        return True
    if cited.startswith("../shared/"):  # the bench's sibling checkout, outside any repository
        return True
    return (ROOT / cited).exists() or (source.parent / cited).exists()


def test_architecture_names_every_module() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    modules = [p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")]
    modules += [p.relative_to(LUA).as_posix() for p in LUA.rglob("*.lua")]
    modules += [p.relative_to(ROOT).as_posix() for p in (ROOT / "plugin").glob("*.lua")]
    missing = [m for m in sorted(modules) if f"`{m}`" not in text]
    assert not missing, f"docs/ARCHITECTURE.md §7 does not name: {missing}"


def test_comments_cite_only_documents_in_the_repository() -> None:
    dangling = []
    for source in _code_files():
        for lineno, line in enumerate(source.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for cited in MD_CITATION.findall(line):
                if not _cited_path_exists(source, cited):
                    dangling.append(f"{source.relative_to(ROOT)}:{lineno}: {cited}")
            if "§" in line and not SECTION_CITATION.search(line):
                dangling.append(f"{source.relative_to(ROOT)}:{lineno}: a § without docs/<file>.md")
            for doc, number in SECTION_CITATION.findall(line):
                target = ROOT / doc
                if not (target.exists() and re.search(rf"^## {number}\. ", target.read_text("utf-8"), re.M)):
                    dangling.append(f"{source.relative_to(ROOT)}:{lineno}: {doc} has no section {number}")
    assert not dangling, "\n".join(dangling)


NAMED = re.compile(r"`([A-Za-z_]\w*)\.([A-Za-z_]\w*)(?:\(\))?`")
FILE_SUFFIXES = {"py", "lua", "md", "json", "txt", "toml", "mjs", "sh", "jsonl", "lock", "vim"}


def _python_names() -> dict[str, set[str]]:
    """module or class -> the names defined in it (functions, classes, methods, attributes)."""
    import ast

    names: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = names.setdefault(path.stem, set())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                top.add(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                top.update(t.id for t in targets if isinstance(t, ast.Name))
            if isinstance(node, ast.ClassDef):
                top.update(n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))
                members = names.setdefault(node.name, set())
                for item in ast.walk(node):
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        members.add(item.name)
                    elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        members.add(item.target.id)
                    elif isinstance(item, ast.Attribute) and isinstance(item.value, ast.Name):
                        members.add(item.attr)  # self.x = ...
    return names


def _lua_names() -> dict[str, set[str]]:
    """Lua module (its last name: `bridge`, `diff` for review/init.lua) -> its M.* and local functions."""
    names: dict[str, set[str]] = {}
    for path in LUA.rglob("*.lua"):
        stem = path.parent.name if path.stem == "init" else path.stem
        text = path.read_text(encoding="utf-8")
        found = set(re.findall(r"^\s*function M\.(\w+)|^M\.(\w+)\s*=|^local function (\w+)", text, re.M))
        names.setdefault(stem, set()).update(n for group in found for n in group if n)
    return names


def _setting_paths() -> set[str]:
    """`section.field` of every setting (config.py): `context.debounce_ms` names a setting, not code."""
    import ast

    tree = ast.parse((PACKAGE / "config.py").read_text(encoding="utf-8"))
    fields = {
        node.name: {
            n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
        }
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    }
    sections = {
        n.target.id: n.annotation.id
        for n in next(
            c for c in tree.body if isinstance(c, ast.ClassDef) and c.name == "CompanionConfig"
        ).body
        if isinstance(n, ast.AnnAssign)
        and isinstance(n.target, ast.Name)
        and isinstance(n.annotation, ast.Name)
    }
    return {f"{section}.{field}" for section, model in sections.items() for field in fields.get(model, ())}


def test_docs_name_only_functions_that_exist() -> None:
    """Backticked `module.function` and `Class.method` names in the code maps (ARCHITECTURE, SEAM,
    CONTRIBUTING) resolve in the code (Python modules and classes, Lua modules); settings and names of
    other things (vim.*) are not code."""
    python, lua, settings = _python_names(), _lua_names(), _setting_paths()
    stale = []
    for doc in (ROOT / "docs" / "ARCHITECTURE.md", ROOT / "docs" / "SEAM.md", ROOT / "CONTRIBUTING.md"):
        for lineno, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for owner, name in NAMED.findall(line):
                if name in FILE_SUFFIXES or owner not in python | lua or f"{owner}.{name}" in settings:
                    continue
                if name not in python.get(owner, set()) | lua.get(owner, set()):
                    stale.append(f"{doc.relative_to(ROOT)}:{lineno} `{owner}.{name}`")
    assert not stale, f"the docs name what the code no longer has: {stale}"


def test_the_generated_parts_of_help_and_readme_are_what_make_doc_writes() -> None:
    """The settings block (config.py's defaults) and the tool list (the tools' specs) in :help, the
    agent tables (the profiles' `meta`) in :help and README, and README's command table (the commands'
    `desc`) are generated: a setting, tool, agent or command added, renamed or described anew shows
    here until `make doc`."""
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, str(ROOT / "dev" / "gen_doc.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
