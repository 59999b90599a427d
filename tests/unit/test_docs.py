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


# File names that are not citations: the context file Gemini CLI reads, which extension.lua writes.
NOT_CITATIONS = {"GEMINI.md"}


def _cited_path_exists(source: Path, cited: str) -> bool:
    if cited in NOT_CITATIONS:
        return True
    if cited.startswith("../shared/"):  # the bench's sibling checkout, outside any repository
        return True
    return (ROOT / cited).exists() or (source.parent / cited).exists()


def test_architecture_names_every_module() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    modules = [p.relative_to(PACKAGE).as_posix() for p in PACKAGE.glob("*.py")]
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
