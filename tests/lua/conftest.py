"""Lua unit tests: each tests/lua/*_spec.lua runs in one child Neovim (`--clean`, no Python host,
no HTTP) through runner.lua, and each of its cases is reported as its own pytest test."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gemini_companion import config as companion_config
from gemini_companion.config import CompanionConfig

from tests.support.helpers import ROOT

RUNNER = Path(__file__).with_name("runner.lua")
NVIM = Path((ROOT / ".venv" / "xdg" / "nvim-path").read_text().strip())


class LuaCaseFailed(Exception):
    pass


def settings_at_start() -> str:
    """What Python sends Lua at start for a user who set nothing, which host_stub.lua starts a spec's
    plugin with: CONFIGURE_TOOLS' limits (`instance.py`) and ON_READY's `settings` (`lifecycle.py`)."""
    config = CompanionConfig()
    return json.dumps(
        {
            "configure_tools": {
                "max_file_bytes": config.max_file_bytes,
                "restrict_to_workspace": config.tools.restrict_to_workspace,
                "workspace_roots": config.workspace_roots,
            },
            "settings": companion_config.editor_settings(config, []),
        }
    )


def run_spec(spec: Path, *flags: str) -> list[dict[str, Any]]:
    """The runner's JSON lines for `spec`; a spec that fails to load fails every case."""
    with tempfile.TemporaryDirectory(prefix="lua-spec-") as tmp:
        proc = subprocess.run(
            [str(NVIM), "--headless", "--clean", "--noplugin", "-l", str(RUNNER), str(spec), *flags],
            check=False,  # a failed run is reported with its stderr below
            cwd=tmp,
            env={
                **os.environ,
                "XDG_STATE_HOME": tmp,
                "TMPDIR": tmp,
                "GEMINI_COMPANION_SPEC_SETTINGS": settings_at_start(),
            },
            capture_output=True,
            text=True,
            timeout=240,  # a whole spec file; changes_many_files_spec takes ~25 s on a quiet machine
        )
    if proc.returncode != 0:
        raise LuaCaseFailed(f"{spec.name}: nvim exited {proc.returncode}\n{proc.stderr}{proc.stdout}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> LuaSpec | None:
    if file_path.name.endswith("_spec.lua"):
        return LuaSpec.from_parent(parent, path=file_path)
    return None


class LuaSpec(pytest.File):
    results: dict[str, dict[str, Any]] | None = None

    def collect(self) -> Iterator[LuaCase]:
        for case in run_spec(self.path, "--list"):
            yield LuaCase.from_parent(self, name=case["name"])

    def run_once(self) -> dict[str, dict[str, Any]]:
        """Every case of the file runs in one Neovim, the first time one of them is asked for."""
        if self.results is None:
            self.results = {r["name"]: r for r in run_spec(self.path)}
        return self.results


class LuaCase(pytest.Item):
    parent: LuaSpec

    def runtest(self) -> None:
        result = self.parent.run_once().get(self.name)
        if result is None:
            raise LuaCaseFailed(f"{self.name}: not run (the spec stopped before it)")
        if not result["ok"]:
            raise LuaCaseFailed(result["error"])

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        if isinstance(excinfo.value, LuaCaseFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"lua: {self.name}"
