"""claude's NotebookEdit as the review gate shows it: the whole .ipynb claude would write, and the
user's own changes carried back through the tool's own input (its `new_source`).

Follows claude 2.1.x's NotebookEdit: the cell is found by its id, else by a `cell-<N>` index; an
insert goes after it (first without one); a replaced code cell loses its outputs and execution
count; the notebook is written as JSON.stringify(notebook, null, 1), with the file's BOM and final
newline kept. An inserted cell gets a random id from claude in nbformat >= 4.5 notebooks, which
the review cannot know: there the review shows `<id claude picks>`.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ...core.review_gate import Edit, Unreviewable

TOOL = "NotebookEdit"
PICKED_BY_CLAUDE = "<id claude picks>"


def _cell_index(cells: list[Any], cell_id: object, insert: bool) -> int:
    if not isinstance(cell_id, str) or not cell_id:
        if insert:
            return 0
        raise Unreviewable("NotebookEdit names no cell_id")
    found = next(
        (i for i, cell in enumerate(cells) if isinstance(cell, dict) and cell.get("id") == cell_id), None
    )
    if found is None:
        index = cell_id.removeprefix("cell-")
        if not (cell_id.startswith("cell-") and index.isdigit() and int(index) < len(cells)):
            raise Unreviewable(f"the notebook has no cell {cell_id!r}")
        found = int(index)
    return found + 1 if insert else found


def _dump(notebook: dict[str, Any], like: str) -> str:
    """As claude writes it: JSON.stringify(notebook, null, 1), the BOM and final newline kept."""
    text = json.dumps(notebook, indent=1, ensure_ascii=False)
    return ("\ufeff" if like.startswith("\ufeff") else "") + text + ("\n" if like.endswith("\n") else "")


def _parse(text: str, name: str) -> dict[str, Any]:
    try:
        notebook = json.loads(text.removeprefix("\ufeff"))
    except (ValueError, RecursionError):
        notebook = None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise Unreviewable(f"{name} is not a notebook Neovim can read")
    if any(isinstance(v, float) for v in _leaves(notebook)):  # JS and Python print floats apart
        raise Unreviewable(f"{name} holds numbers Neovim cannot write back exactly as claude does")
    return notebook


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def proposed(path: str, before: str | None, args: dict[str, Any]) -> Edit:
    """The notebook NotebookEdit would leave; exact unless claude picks an inserted cell's id."""
    name = os.path.basename(path)
    if before is None:
        raise Unreviewable(f"{name} does not exist")
    notebook = _parse(before, name)
    mode, source, kind = args.get("edit_mode") or "replace", args.get("new_source"), args.get("cell_type")
    if mode not in ("replace", "insert", "delete") or not isinstance(source, str):
        raise Unreviewable("NotebookEdit needs new_source and an edit_mode of replace, insert or delete")
    cells = notebook["cells"]
    index = _cell_index(cells, args.get("cell_id"), mode == "insert")
    exact = True
    if mode == "delete":
        del cells[index]
    elif mode == "insert":
        if kind not in ("code", "markdown"):
            raise Unreviewable("an inserted cell needs cell_type code or markdown")
        new_id = None
        if notebook.get("nbformat", 0) > 4 or (
            notebook.get("nbformat") == 4 and notebook.get("nbformat_minor", 0) >= 5
        ):
            new_id, exact = PICKED_BY_CLAUDE, False
        cell: dict[str, Any] = {"cell_type": kind, "id": new_id, "source": source, "metadata": {}}
        if new_id is None:
            del cell["id"]  # (JSON.stringify leaves an undefined field out)
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        cells.insert(index, cell)
    else:
        cell = cells[index]
        cell["source"] = source
        if kind:
            cell["cell_type"] = kind
        if cell.get("cell_type") == "code":
            cell.update(execution_count=None, outputs=[])
        else:
            cell.pop("execution_count", None)
            cell.pop("outputs", None)
    return Edit(TOOL, path, before, _dump(notebook, before), exact)


def carried(edit: Edit, final: str, original: dict[str, Any]) -> dict[str, Any] | None:
    """NotebookEdit's input that writes the user's `final` notebook, if the user changed only the
    edited cell's text (all that NotebookEdit can carry); None otherwise."""
    mode = original.get("edit_mode") or "replace"
    if mode == "delete":
        return None
    try:
        before, shown, mine = (json.loads(t.removeprefix("\ufeff")) for t in (edit.before, edit.after, final))
        target = _cell_index(before["cells"], original.get("cell_id"), mode == "insert")
        source = mine["cells"][target]["source"]
        shown["cells"][target]["source"] = source
    except (ValueError, LookupError, TypeError, Unreviewable):
        return None
    if shown != mine:  # more changed than that cell's text
        return None
    text = "".join(str(part) for part in source) if isinstance(source, list) else source
    return {**original, "new_source": text} if isinstance(text, str) else None
