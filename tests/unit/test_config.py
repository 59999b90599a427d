from gemini_companion.config import CompanionConfig, load_config


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
