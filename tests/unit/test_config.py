from gemini_companion.config import CompanionConfig, load_config, renamed_settings


def test_defaults_from_nothing() -> None:
    for raw in (None, [], {}):
        config, problems = load_config(raw)
        assert config == CompanionConfig()
        assert problems == []


def test_valid_settings_are_kept() -> None:
    config, problems = load_config({"auto_start": False, "tool_timeout_ms": 1500, "workspace_roots": ["/a"]})
    assert problems == []
    assert (config.auto_start, config.tool_timeout_ms, config.workspace_roots) == (False, 1500, ["/a"])


def test_each_bad_field_is_named_and_falls_back_alone() -> None:
    config, problems = load_config(
        {"auto_start": "yes", "tool_timeout_ms": 5, "typo": 1, "log_level": "debug"}
    )
    assert config.auto_start is True and config.tool_timeout_ms == 5000
    assert config.log_level == "debug"
    joined = "\n".join(problems)
    assert "`auto_start`" in joined and "'yes'" in joined
    assert "`tool_timeout_ms`" in joined and "greater than or equal to 100" in joined
    assert "unknown setting `typo`" in joined


def test_not_a_table() -> None:
    config, problems = load_config("fast")
    assert config == CompanionConfig() and "must be a table" in problems[0]


def test_a_typo_inside_a_section_drops_only_that_key_and_is_reported_once() -> None:
    raw = {"auto_start": False, "review": {"layot": "horizontal", "new_tab": False, "focus": False}}
    config, problems = load_config(raw)
    assert problems == ["unknown setting `review.layot`"]
    assert config.auto_start is False  # the rest of the settings are kept
    assert (config.review.layout, config.review.new_tab, config.review.focus) == ("vertical", False, False)
    assert raw["review"] == {"layot": "horizontal", "new_tab": False, "focus": False}  # theirs: untouched


def test_bad_values_two_levels_deep_drop_only_those_keys() -> None:
    config, problems = load_config(
        {
            "review": {"layout": "diagonal", "keymaps": {"accept": "<leader>a", "rejet": "x", "reject": 5}},
            "tools": {"groups": {"dap": False, "lsp": "no"}, "prefix": "nvim_"},
            "context": {"max_files": 3},
        }
    )
    joined = "\n".join(problems)
    assert len(problems) == 4, problems  # one line per bad setting
    for where in ("`review.layout`", "`review.keymaps.rejet`", "`tools.groups.lsp`"):
        assert where in joined
    assert "unknown setting `review.keymaps.rejet`" in joined
    assert "`review.keymaps.reject`: Input should be a valid string or False (got 5)" in problems
    assert config.review.layout == "vertical" and config.review.keymaps.accept == "<leader>a"
    assert config.review.keymaps.reject is False
    assert config.tools.groups.dap is False and config.tools.groups.lsp is True
    assert config.tools.prefix == "nvim_" and config.context.max_files == 3


def test_a_section_that_is_not_a_table_falls_back_whole() -> None:
    config, problems = load_config({"review": "vertical", "auto_start": False})
    assert len(problems) == 1 and "`review`" in problems[0]
    assert config.review.layout == "vertical" and config.auto_start is False


def test_a_bad_list_item_is_named_and_the_list_falls_back_whole() -> None:
    config, problems = load_config({"workspace_roots": ["/a", 42, None], "port": 7000})
    assert problems == [
        "`workspace_roots.1`: Input should be a valid string (got 42)",
        "`workspace_roots.2`: Input should be a valid string (got None)",
    ]
    assert config.workspace_roots == [] and config.port == 7000


def test_the_old_diff_settings_are_still_read_at_their_new_places() -> None:
    raw = {
        "diff": {"layout": "unified", "keymaps": {"accept": "<leader>a"}, "changes": {"max_files": 7}},
        "review": {"gate": "always", "focus": False},
        "changes": {"max_bytes": 10},
    }
    config, problems = load_config(raw)
    assert problems == []
    assert (config.review.layout, config.review.keymaps.accept) == ("unified", "<leader>a")
    assert (config.review.gate, config.review.focus) == ("always", False)  # the new section's own keys kept
    assert (config.changes.max_files, config.changes.max_bytes) == (7, 10)
    assert renamed_settings(raw) == [
        ("diff.layout", "review.layout"),
        ("diff.keymaps", "review.keymaps"),
        ("diff.changes.max_files", "changes.max_files"),
    ]
    assert raw["review"] == {"gate": "always", "focus": False}  # theirs: untouched


def test_where_an_old_and_a_new_setting_are_both_set_the_new_one_wins() -> None:
    raw = {"diff": {"layout": "unified"}, "review": {"layout": "horizontal"}}
    assert load_config(raw)[0].review.layout == "horizontal"
    assert renamed_settings(raw) == [("diff.layout", "review.layout")]


def test_a_bad_old_setting_is_reported_and_falls_back_alone() -> None:
    config, problems = load_config({"diff": {"layot": "unified", "new_tab": False}, "auto_start": False})
    assert problems == ["unknown setting `review.layot`"]
    assert config.review.new_tab is False and config.auto_start is False


def test_no_old_settings_no_renames() -> None:
    for raw in (None, [], {}, "fast", {"review": {"layout": "unified"}}, {"diff": []}):
        assert renamed_settings(raw) == []
