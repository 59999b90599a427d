"""Settings renamed while nothing was released (`diff.*` -> `review.*`, `diff.changes.*` -> `changes.*`):
a user's old keys still apply, and :checkhealth names each one with its new name."""

from __future__ import annotations

from tests.support.helpers import Neovim


def test_old_diff_settings_still_apply_and_checkhealth_names_each_one(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(
        init_lua="require('gemini_companion').setup({"
        " diff = { new_tab = false, changes = { max_files = 5 } } })"
    )
    nvim.wait_state("running")
    settings = "require('gemini_companion.state').settings"
    assert nvim.lua(f"return {{ {settings}.review.new_tab, {settings}.changes.max_files }}") == [False, 5]
    assert not [n for n in nvim.notifications() if "invalid settings" in n[0]]

    text = nvim.health()
    assert "WARNING the setting diff.new_tab is renamed review.new_tab" in text
    assert "WARNING the setting diff.changes.max_files is renamed changes.max_files" in text
    assert "set review.new_tab instead (the old name is still read, for now)" in text


def test_checkhealth_names_no_setting_set_by_its_new_name(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(init_lua="require('gemini_companion').setup({ review = { new_tab = false } })")
    nvim.wait_state("running")
    assert nvim.lua("return require('gemini_companion.state').settings.review.new_tab") is False
    assert "is renamed" not in nvim.health()
