"""Regenerate the README's picture: a real review, captured from a real Neovim in tmux.

    .venv/bin/python dev/readme_picture.py      (needs tmux; rewrites the block between the markers)

The plugin is loaded as `make run` loads it; a stdlib MCP client proposes an edit with openDiff,
the way Gemini CLI does, and the screen is what a user sees at that moment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.support.mcp_http import McpHttp  # noqa: E402

BEFORE = '''def total(items):
    """Sum of the prices in the cart."""
    result = 0
    for item in items:
        result += item.price
    return result


def describe(items):
    return f"{len(items)} items"
'''
AFTER = '''def total(items, discount=0.0):
    """Sum of the prices, less a discount (0..1)."""
    result = sum(item.price * item.qty for item in items)
    return round(result * (1 - discount), 2)


def describe(items):
    return f"{len(items)} items"
'''
START, END = "<!-- picture: dev/readme_picture.py -->", "<!-- /picture -->"


def capture(columns: int = 96, rows: int = 15) -> str:
    with tempfile.TemporaryDirectory(prefix="pic-") as root:
        workspace, tmp = Path(root, "shop"), Path(root, "tmp")
        workspace.mkdir()
        tmp.mkdir(mode=0o700)
        (workspace / "cart.py").write_text(BEFORE)
        tmux = ["tmux", "-L", f"picture-{os.getpid()}"]
        nvim = f"env TMPDIR={tmp} {ROOT / 'dev' / 'nvim'} cart.py"
        subprocess.run(
            [*tmux, "new-session", "-d", "-x", str(columns), "-y", str(rows), "-c", workspace, nvim],
            check=True,
        )
        try:
            deadline = time.monotonic() + 30
            while not (found := list(tmp.glob("gemini/ide/*.json"))) and time.monotonic() < deadline:
                time.sleep(0.1)
            discovery = json.loads(found[0].read_text())
            client = McpHttp(discovery["port"], discovery["authToken"])
            client.initialize()
            arguments = {"filePath": str(workspace / "cart.py"), "newContent": AFTER}
            client.request("tools/call", {"name": "openDiff", "arguments": arguments})
            time.sleep(1.5)
            screen = subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True, text=True, check=True)
        finally:
            subprocess.run([*tmux, "kill-server"], check=False)
    # The temporary directory's name is noise: show the path a user would have.
    return screen.stdout.rstrip("\n").replace(str(workspace), "~/shop")


def main() -> None:
    readme = ROOT / "README.md"
    text = readme.read_text()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{START}\n```\n{capture()}\n```\n{END}{tail}")


if __name__ == "__main__":
    main()
