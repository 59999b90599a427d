"""Nothing we run imports from the repository Neovim has open (the red-team's N3).

`python -m venv` and `python -m pip` put the working directory first on sys.path: a venv.py or pip.py in
the repository ran when the user built or installed the plugin from inside it (lazy.nvim's build runs in
the user's Neovim, with its cwd)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.integration.test_install import plugin_dir, run_build, user_nvim
from tests.support.helpers import Neovim

__all__ = ["plugin_dir"]


def hostile_repository(where: Path) -> Path:
    """A repository whose modules shadow what the install and the host import; each leaves a marker."""
    marker = where / "HIJACKED"
    for module in ("venv", "pip", "ensurepip", "pynvim", "site", "sitecustomize", "encodings"):
        record = f"open({str(marker)!r}, 'a').write('{module} ' + repr(sys.argv) + '\\n')"
        (where / f"{module}.py").write_text(f"import sys\n{record}\nsys.exit(1)\n")
    (where / "pip").mkdir()
    (where / "pip" / "__main__.py").write_text((where / "pip.py").read_text())
    return marker


def test_the_build_run_inside_a_hostile_repository_runs_none_of_it(
    plugin_dir: Path,
    tmp_path: Path,
    make_nvim: Callable[..., Neovim],
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    marker = hostile_repository(tmp_path)  # run_build's working directory: the repository the user has open
    out, _ = run_build(plugin_dir, data)
    assert "BUILD OK" in out, out
    assert not marker.exists(), marker.read_text()
    # Then Neovim started in that repository: its host and checkhealth import none of it either.
    nvim = user_nvim(make_nvim, plugin_dir, data)
    nvim.wait_state("running")
    nvim.api.command(f"cd {tmp_path}")
    assert "cannot import the plugin" not in nvim.health()
    nvim.api.command("GeminiRestart")
    nvim.wait_state("running")
    assert not marker.exists(), marker.read_text()
