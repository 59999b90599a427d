"""The claude releases and modes the gate tests run, and a user's environment for each."""

from __future__ import annotations

import os
from pathlib import Path

import tests.support.real_claude as real
from tests.support.claude_releases import FIRST_AUTO, NEWEST, OLDEST, Release
from tests.support.fake_anthropic_api import FakeAnthropicApi

CASES = {
    "newest-auto": (NEWEST, None),
    "2.1.331-auto": (FIRST_AUTO, None),
    "oldest-acceptEdits": (OLDEST, "acceptEdits"),
}


def users_env(tmp_path: Path, home: Path, model_api: FakeAnthropicApi, release: Release) -> dict[str, str]:
    """claude's environment, with `claude` on the PATH as a user's is (health asks it its version)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "claude").symlink_to(release.program)
    return {**real.claude_env(home, model_api), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
