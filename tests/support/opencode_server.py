"""A real `opencode serve` (npm opencode-ai, tests/opencode/) on a free port, in its own HOME."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

from tests.support.helpers import ROOT, wait_for

OPENCODE = ROOT / "tests" / "opencode" / "node_modules" / ".bin" / "opencode"


class Opencode:
    def __init__(self, tmp: Path, password: str | None = None) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        home = tmp / "home"
        home.mkdir(parents=True)
        env = {
            **os.environ,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local/share"),
            "XDG_STATE_HOME": str(home / ".local/state"),
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        }
        env.pop("OPENCODE_SERVER_PASSWORD", None)
        if password:
            env["OPENCODE_SERVER_PASSWORD"] = password
        self.log = tmp / "opencode.log"
        self.proc = subprocess.Popen(
            [str(OPENCODE), "serve", "--hostname", "127.0.0.1", "--port", str(self.port)],
            env=env,
            cwd=tmp,
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.url = f"http://127.0.0.1:{self.port}"
        wait_for(lambda: "listening on" in self.log.read_text(), 60, what="opencode serve")

    def mcp_status(self, directory: Path) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.url}/mcp?directory={directory}", timeout=5) as resp:
            value: dict[str, Any] = json.loads(resp.read())
            return value

    def status_of(self, directory: Path, name: str = "nvim") -> str | None:
        entry = self.mcp_status(directory).get(name)
        return entry.get("status") if isinstance(entry, dict) else None

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
