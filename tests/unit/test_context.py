"""What reaches Gemini CLI as ide/contextUpdate: never a null, never malformed, newest file first."""

import json

from gemini_companion.agents.gemini.context import MAX_SELECTION_CHARS, build_context


def test_normalises_like_the_cli_and_emits_no_nulls() -> None:
    raw = {
        "openFiles": [
            {"path": "/p/old.py", "timestamp": 10, "isActive": True, "cursor": {"line": 3, "character": 1}},
            {
                "path": "/p/new.py",
                "timestamp": 20,
                "isActive": True,
                "cursor": {"line": 1, "character": 2},
                "selectedText": "x",
            },
            {"path": "", "timestamp": 30},  # malformed: dropped, not fatal
            {"path": "/p/bad.py", "timestamp": "soon"},
            "not even a table",
        ]
    }
    params = build_context(raw)
    files = params["workspaceState"]["openFiles"]
    assert files == [
        {
            "path": "/p/new.py",
            "timestamp": 20,
            "isActive": True,
            "cursor": {"line": 1, "character": 2},
            "selectedText": "x",
        },
        {"path": "/p/old.py", "timestamp": 10},
    ]
    assert "null" not in json.dumps(params)
    assert "isTrusted" not in params["workspaceState"]


def test_trust_only_when_configured_and_limits_apply() -> None:
    raw = {"openFiles": [{"path": f"/f{i}", "timestamp": i} for i in range(15)]}
    raw["openFiles"][-1].update(isActive=True, selectedText="é" * (MAX_SELECTION_CHARS + 5))
    params = build_context(raw, is_trusted=False)
    state = params["workspaceState"]
    assert state["isTrusted"] is False
    assert len(state["openFiles"]) == 10
    assert len(state["openFiles"][0]["selectedText"]) == MAX_SELECTION_CHARS


def test_inactive_newest_file_means_no_cursor_anywhere() -> None:
    raw = {
        "openFiles": [
            {"path": "/a", "timestamp": 2},
            {"path": "/b", "timestamp": 1, "isActive": True, "cursor": {"line": 1, "character": 1}},
        ]
    }
    files = build_context(raw)["workspaceState"]["openFiles"]
    assert files == [{"path": "/a", "timestamp": 2}, {"path": "/b", "timestamp": 1}]


def test_bad_cursor_and_empty_input() -> None:
    assert build_context(None) == {"workspaceState": {"openFiles": []}}
    raw = {
        "openFiles": [{"path": "/a", "timestamp": 1, "isActive": True, "cursor": {"line": 0, "character": 1}}]
    }
    assert build_context(raw)["workspaceState"]["openFiles"] == []
