"""The review gate's pure parts: what an edit claude is about to make would write, the hook's
answer for each decision, and our entry merged into a user's settings without touching theirs."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest
from gemini_companion import agent_settings
from gemini_companion.agents import gate_wants
from gemini_companion.agents.agy import gate as agy_gate
from gemini_companion.agents.claude import gate
from gemini_companion.agents.gemini import gate as gemini_gate
from gemini_companion.core.review_gate import Decision, Unreviewable, current_text

ROOT = Path(__file__).resolve().parents[2]
FILE = "/ws/a.txt"


def reader(text: str | None) -> Any:
    return lambda path: text if path == FILE else None


@pytest.mark.parametrize(
    ("tool", "args", "after"),
    [
        ("Write", {"file_path": FILE, "content": "new\n"}, "new\n"),
        ("Edit", {"file_path": FILE, "old_string": "a b", "new_string": "a B"}, "a B b\n"),
        ("Edit", {"file_path": FILE, "old_string": "b", "new_string": "B", "replace_all": True}, "a B B\n"),
        ("Edit", {"file_path": "a.txt", "old_string": "a b", "new_string": "A"}, "A b\n"),  # from cwd
        (
            "MultiEdit",
            {
                "file_path": FILE,
                "edits": [{"old_string": "a", "new_string": "A"}, {"old_string": "A b", "new_string": "x"}],
            },
            "x b\n",
        ),
    ],
)
def test_the_proposal_is_the_whole_file_the_tool_would_write(
    tool: str, args: dict[str, Any], after: str
) -> None:
    edit = gate.proposed_edit(tool, args, reader("a b b\n"), "/ws")
    assert edit.before == "a b b\n" and edit.after == after and edit.exact


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ({"file_path": FILE, "old_string": "zzz", "new_string": "B"}, "not in a.txt"),
        ({"file_path": FILE, "old_string": "b", "new_string": "B"}, "occurs 2 times"),  # claude refuses too
        ({"file_path": "a.txt", "old_string": "a", "new_string": "B"}, "relative"),  # and no cwd said
        ({"file_path": "/ws/missing", "old_string": "a", "new_string": "B"}, "does not exist"),
        ({"file_path": FILE, "edits": "nonsense"}, "no edits"),
        ({"file_path": 7, "old_string": "a", "new_string": "B"}, "not a file path"),
    ],
)
def test_an_edit_the_gate_cannot_show_is_denied_with_a_reason(args: dict[str, Any], why: str) -> None:
    tool = "MultiEdit" if "edits" in args else "Edit"
    with pytest.raises(Unreviewable, match=why):
        gate.proposed_edit(tool, args, reader("a b b\n"))


def test_claude_finds_typographic_quotes_as_claude_does_and_the_review_shows_its_result() -> None:
    """claude 2.1.x matches `“hello”` against a file's `"hello"` (and the other way round), writing
    the file's own quote style: the review shows that, and an accept lands exactly it."""
    args = {"file_path": FILE, "old_string": "msg = \u201chello\u201d", "new_string": "msg = \u201cbye\u201d"}
    edit = gate.proposed_edit("Edit", args, reader('msg = "hello"\n'))
    assert edit.after == "msg = \u201cbye\u201d\n" and not edit.exact
    updated = decision(gate.ClaudeGate.answer(edit, args, Decision(True, edit.after)))["updatedInput"]
    assert updated["old_string"] == 'msg = "hello"\n' and updated["new_string"] == edit.after
    curly = {"file_path": FILE, "old_string": 'say("hi")', "new_string": 'say("bye")'}
    edit = gate.proposed_edit("Edit", curly, reader("say(\u201chi\u201d)\n"))
    assert edit.after == "say(\u201cbye\u201d)\n"


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"caf\xe9\nx = 2\n", "not UTF-8"),
        (b"a\0b\n", "NUL"),
        (b"x" * 2048, "over 1024 bytes"),
    ],
)
def test_a_file_the_review_cannot_show_is_denied_not_let_through(
    tmp_path: Path, data: bytes, why: str
) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    with pytest.raises(Unreviewable, match=why):
        current_text(str(path), 1024)
    assert current_text(str(tmp_path / "new.txt"), 1024) is None  # no file: the edit creates it
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(Unreviewable, match="not a plain file"):
        current_text(str(tmp_path / "fifo"), 1024)


def decision(text: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(text)["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse"
    return out


def test_each_decision_is_the_hooks_answer() -> None:
    args = {"file_path": FILE, "old_string": "a b", "new_string": "a B"}
    edit = gate.proposed_edit("Edit", args, reader("a b b\n"))
    rejected = decision(gate.ClaudeGate.answer(edit, args, Decision(False, edit.after)))
    assert rejected["permissionDecision"] == "deny" and "rejected" in rejected["permissionDecisionReason"]
    as_proposed = decision(gate.ClaudeGate.answer(edit, args, Decision(True, "a B b\n")))
    assert as_proposed["permissionDecision"] == "allow" and "updatedInput" not in as_proposed
    kept = decision(gate.ClaudeGate.answer(edit, args, Decision(True, "a b b\n")))
    assert (
        kept["permissionDecision"] == "deny" and "kept the file as it was" in kept["permissionDecisionReason"]
    )
    changed = decision(gate.ClaudeGate.answer(edit, args, Decision(True, "a B b\nmine\n")))
    assert changed["permissionDecision"] == "allow"
    # Edit's own rule, applied to the file as it is, writes exactly the user's text.
    updated = changed["updatedInput"]
    assert "a b b\n".replace(updated["old_string"], updated["new_string"], 1) == "a B b\nmine\n"


def test_the_users_text_reaches_write_and_multiedit_too() -> None:
    write = {"file_path": FILE, "content": "x\n"}
    edit = gate.proposed_edit("Write", write, reader(None))  # a new file
    assert edit is not None
    assert decision(gate.ClaudeGate.answer(edit, write, Decision(True, "y\n")))["updatedInput"] == {
        **write,
        "content": "y\n",
    }
    multi = {"file_path": FILE, "edits": [{"old_string": "a", "new_string": "A"}]}
    edit = gate.proposed_edit("MultiEdit", multi, reader("a\n"))
    assert edit is not None
    updated = decision(gate.ClaudeGate.answer(edit, multi, Decision(True, "mine\n")))["updatedInput"]
    assert updated["edits"] == [{"old_string": "a\n", "new_string": "mine\n"}]


@pytest.mark.parametrize(
    ("setting", "mode", "wanted"),
    [
        ("auto-modes", "auto", True),
        ("auto-modes", "acceptEdits", True),
        ("auto-modes", "bypassPermissions", True),
        ("auto-modes", "dontAsk", True),
        ("auto-modes", "default", False),  # claude asks, and its openDiff opens the review
        ("auto-modes", "plan", False),
        ("always", "default", True),
        ("never", "auto", False),
    ],
)
def test_the_gate_acts_only_where_no_review_would_open(setting: str, mode: str, wanted: bool) -> None:
    assert gate_wants(setting, "/ws/a.txt", mode in gate.APPLIES_WITHOUT_ASKING) is wanted


@pytest.mark.parametrize(
    "path",
    [
        "/ws/.claude/settings.json",
        "/ws/.claude/settings.local.json",
        "/home/u/.claude/settings.json",
        "/ws/.gemini/settings.json",
        "/ws/.agents/hooks.json",
        "/home/u/.gemini/antigravity-cli/plugins/gemini-companion-nvim/hooks.json",
        "/home/u/.codex/config.toml",
    ],
)
def test_edits_of_an_agents_settings_are_reviewed_whatever_the_setting(path: str) -> None:
    assert (
        gate_wants("never", path)
        and gate_wants("never", "/ws/sub/./" + path.rsplit("/", 2)[-2] + "/x") is False
    )
    assert not gate_wants("never", "/ws/settings.json")


# -- the settings file ----------------------------------------------------------------------------

THEIRS = {"type": "command", "command": "./lint.sh"}


def install(path: Path) -> None:
    settings = agent_settings.read(path)
    if agent_settings.with_hook(settings, gate.HOOK_EVENT, gate.HOOK_MATCHER, dict(gate.HOOK), gate.is_ours):
        agent_settings.write(path, settings)


def test_installing_keeps_the_users_own_settings_and_hooks_and_twice_is_once(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    mine = {"theme": "dark", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [THEIRS]}]}, "env": {}}
    path.write_text(json.dumps(mine))
    os.chmod(path, 0o640)
    install(path)
    install(path)
    settings = json.loads(path.read_text())
    assert (
        list(settings) == ["theme", "hooks", "env"] and settings["env"] == {}
    )  # order and empty objects kept
    groups = settings["hooks"]["PreToolUse"]
    assert groups[0] == {"matcher": "Bash", "hooks": [THEIRS]}
    assert groups[1:] == [{"matcher": "Edit|Write|MultiEdit|NotebookEdit", "hooks": [gate.HOOK]}]
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert agent_settings.installed(settings, gate.HOOK_EVENT, gate.is_ours)

    settings = agent_settings.read(path)
    assert agent_settings.without_hook(settings, gate.HOOK_EVENT, gate.is_ours)
    assert settings == mine
    assert not agent_settings.without_hook(settings, gate.HOOK_EVENT, gate.is_ours)


def test_a_new_file_holds_only_our_entry_and_removing_it_leaves_no_empty_hooks(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.local.json"
    install(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    settings = agent_settings.read(path)
    agent_settings.without_hook(settings, gate.HOOK_EVENT, gate.is_ours)
    assert settings == {}


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '"a string"'])
def test_a_file_that_is_not_a_json_object_is_refused_and_left_alone(tmp_path: Path, text: str) -> None:
    path = tmp_path / "settings.json"
    path.write_text(text)
    with pytest.raises(agent_settings.SettingsError, match=r"nothing was changed|leaving it alone"):
        install(path)
    assert path.read_text() == text


def test_a_fifo_is_refused_without_opening_it(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    os.mkfifo(path)
    with pytest.raises(agent_settings.SettingsError, match="not a regular file"):
        install(path)


def test_a_linked_settings_file_is_written_where_it_lives(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "claude.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"theme": "light"}')
    link = tmp_path / "settings.json"
    link.symlink_to(dotfiles)
    install(link)
    assert link.is_symlink() and json.loads(dotfiles.read_text())["theme"] == "light"
    assert agent_settings.installed(json.loads(dotfiles.read_text()), gate.HOOK_EVENT, gate.is_ours)


def test_the_lua_half_finds_the_entry_python_writes() -> None:
    lua = (ROOT / "lua" / "gemini_companion" / "agents" / "claude" / "hook_entry.lua").read_text()
    said = dict(re.findall(r"^M\.(EVENT|SERVER|TOOL) = '([^']*)'", lua, re.M))
    assert said == {"EVENT": gate.HOOK_EVENT, "SERVER": gate.HOOK["server"], "TOOL": gate.HOOK["tool"]}
    assert "hook.type == 'mcp_tool'" in lua and gate.HOOK["type"] == "mcp_tool"


def test_the_settings_files_are_claudes(tmp_path: Path) -> None:
    assert gate.settings_file("user", {"HOME": "/home/u"}, "/p") == Path("/home/u/.claude/settings.json")
    assert gate.settings_file("user", {"HOME": "/home/u", "CLAUDE_CONFIG_DIR": "/cfg"}, "/p") == Path(
        "/cfg/settings.json"
    )
    assert gate.settings_file("project", {"CLAUDE_CONFIG_DIR": "/cfg"}, "/p") == Path(
        "/p/.claude/settings.local.json"
    )


# -- gemini's gate --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args", "before", "after"),
    [
        ("write_file", {"file_path": FILE, "content": "new\n"}, "a b b\n", "new\n"),
        ("write_file", {"file_path": FILE, "content": "new\n"}, None, "new\n"),
        ("replace", {"file_path": FILE, "old_string": "a b", "new_string": "a B"}, "a b b\n", "a B b\n"),
        (
            "replace",
            {"file_path": FILE, "old_string": "b", "new_string": "B", "allow_multiple": True},
            "a b b\n",
            "a B B\n",
        ),
        ("replace", {"file_path": FILE, "old_string": "", "new_string": "made\n"}, None, "made\n"),
    ],
)
def test_geminis_edits_are_whole_file_proposals(
    tool: str, args: dict[str, Any], before: str | None, after: str
) -> None:
    edit = gemini_gate.proposed_edit(tool, args, reader(before))
    assert edit.after == after and edit.exact


@pytest.mark.parametrize(
    ("before", "old", "new", "after"),
    [
        # gemini 0.61's calculateFlexibleReplacement: lines equal but for their indentation.
        (
            "def f():\n    return 1\n",
            "def f():\n  return 1",
            "def f():\n  return 2",
            "def f():\n  return 2\n",
        ),
        ("if x:\n    a = 1\n    b = 2\n", "a = 1\nb = 2", "a = 3\nb = 4", "if x:\n    a = 3\n    b = 4\n"),
        # its calculateRegexReplacement: the same tokens, any whitespace between.
        ("x = f( a,b )\n", "x = f(a, b)", "x = g(a)", "x = g(a)\n"),
    ],
)
def test_gemini_finds_what_to_replace_as_gemini_does(before: str, old: str, new: str, after: str) -> None:
    args = {"file_path": FILE, "old_string": old, "new_string": new}
    edit = gemini_gate.proposed_edit("replace", args, reader(before))
    assert edit.after == after and not edit.exact
    # Accepted as shown, the whole reviewed text is what gemini writes (not its own loose match).
    tool_input = gemini_gate.answer(edit, Decision(True, edit.after), args)["hookSpecificOutput"][
        "tool_input"
    ]
    assert tool_input["old_string"] == before and tool_input["new_string"] == after


def test_a_relative_path_is_taken_from_geminis_working_folder() -> None:
    args = {"file_path": "a.txt", "content": "x\n"}
    assert gemini_gate.proposed_edit("write_file", args, reader("old\n"), "/ws").path == FILE
    with pytest.raises(Unreviewable, match="relative"):
        gemini_gate.proposed_edit("write_file", args, reader("old\n"))


def test_geminis_answers_carry_the_users_text_in_tool_input() -> None:
    args = {"file_path": FILE, "old_string": "b", "new_string": "B"}
    edit = gemini_gate.proposed_edit("replace", args, reader("a b\n"))
    assert edit is not None
    assert gemini_gate.answer(edit, Decision(False, edit.after), args)["decision"] == "deny"
    assert gemini_gate.answer(edit, Decision(True, edit.after), args) == {
        "decision": "allow",
        "reason": "The user accepted this edit of a.txt in Neovim.",
    }
    changed = gemini_gate.answer(edit, Decision(True, "a B\nmine\n"), args)
    tool_input = changed["hookSpecificOutput"]["tool_input"]
    # gemini builds the tool anew from tool_input alone: it holds every argument.
    merged = tool_input
    assert merged["file_path"] == FILE
    assert "a b\n".replace(merged["old_string"], merged["new_string"], 1) == "a B\nmine\n"
    assert gemini_gate.answer(edit, Decision(True, "a b\n"), args)["decision"] == "deny"


def test_geminis_hook_runs_our_client_isolated_and_the_lua_half_finds_it() -> None:
    hook = gemini_gate.hook("/venv/bin/python")
    assert hook["command"] == f"/venv/bin/python -I {gemini_gate.CLIENT} gemini"
    assert gemini_gate.CLIENT.is_file() and hook["timeout"] >= 3_600_000
    assert "TOKEN" not in json.dumps(hook).upper()  # no secret in the settings file
    lua = (ROOT / "lua" / "gemini_companion" / "agents" / "gemini" / "hook_entry.lua").read_text()
    said = dict(re.findall(r"^M\.(EVENT|NAME) = '([^']*)'", lua, re.M))
    assert said == {"EVENT": gemini_gate.HOOK_EVENT, "NAME": hook["name"]}
    assert gemini_gate.settings_file("user", {"HOME": "/h"}, "/p") == Path("/h/.gemini/settings.json")
    assert gemini_gate.settings_file("user", {"HOME": "/h", "GEMINI_CLI_HOME": "/g"}, "/p") == Path(
        "/g/.gemini/settings.json"
    )
    assert gemini_gate.settings_file("project", {"HOME": "/h"}, "/p") == Path("/p/.gemini/settings.json")


@pytest.mark.parametrize(
    ("before", "changed", "after"),
    [
        ({}, True, {"ide": {"enabled": True}}),
        ({"ide": {"enabled": True}}, False, {"ide": {"enabled": True}}),
        ({"ide": {"enabled": False}}, None, {"ide": {"enabled": False}}),  # the user's choice stands
        ({"ide": {"other": 1}, "x": 2}, True, {"ide": {"other": 1, "enabled": True}, "x": 2}),
    ],
)
def test_geminis_ide_mode_is_turned_on_never_over_the_users_false(
    before: dict[str, Any], changed: bool | None, after: dict[str, Any]
) -> None:
    settings = json.loads(json.dumps(before))
    assert agent_settings.enable(settings, ["ide", "enabled"]) is changed
    assert settings == after


def test_the_ide_mode_command_line_writes_and_says_so(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / ".gemini" / "settings.json"
    script = ROOT / "rplugin" / "python3" / "gemini_companion" / "agent_settings.py"
    run = [sys.executable, "-I", str(script), "enable-ide", str(path)]
    out = subprocess.run(run, capture_output=True, text=True, check=True, cwd=tmp_path)
    assert json.loads(out.stdout) == {"changed": True, "refused": False}
    assert json.loads(path.read_text()) == {"ide": {"enabled": True}}
    path.write_text('{"ide": {"enabled": false}}')
    out = subprocess.run(run, capture_output=True, text=True, check=True, cwd=tmp_path)
    assert json.loads(out.stdout) == {"changed": False, "refused": True}
    path.write_text("// a comment\n{}")
    out = subprocess.run(run, capture_output=True, text=True, check=True, cwd=tmp_path)
    assert "is not valid JSON" in json.loads(out.stdout)["error"] and path.read_text() == "// a comment\n{}"


@pytest.mark.parametrize("agent", ["claude", "gemini"])
def test_gemini_gate_command_writes_the_gate_and_turn_hooks_and_takes_both_away(
    agent: str, tmp_path: Path
) -> None:
    from gemini_companion.agents import hook_entries

    env = {"HOME": str(tmp_path)}
    message, level = hook_entries.command("install", agent, "user", str(tmp_path), env)
    assert level == "info" and "installed in" in message
    module = hook_entries.GATES[agent]
    path = module.settings_file("user", env, str(tmp_path))
    settings = json.loads(path.read_text())
    assert sorted(settings["hooks"]) == sorted({event for event, _m, _h in module.ENTRIES})
    # Hooks of one event and matcher are one group (claude's mcp_tool gate and its guard).
    groups = [group for groups in settings["hooks"].values() for group in groups]
    assert sum(len(group["hooks"]) for group in groups) == len(module.ENTRIES)
    assert hook_entries.command("install", agent, "user", str(tmp_path), env)[0].startswith(
        f"review gate for {agent} already in"
    )
    hook_entries.command("remove", agent, "user", str(tmp_path), env)
    assert json.loads(path.read_text()) == {}
    assert hook_entries.command("remove", agent, "user", str(tmp_path), env)[0].startswith(
        f"no review gate for {agent}"
    )
    assert hook_entries.command("install", "codex", "user", str(tmp_path), env)[1] == "error"


def test_agy_gate_is_one_named_set_in_the_workspaces_hooks_json(tmp_path: Path) -> None:
    """agy's hooks.json (its docs): named sets of hooks by event; ours is one, the user's stay."""
    from gemini_companion.agents import hook_entries

    path = tmp_path / ".agents" / "hooks.json"
    path.parent.mkdir()
    mine = {"PreToolUse": [{"matcher": "run_command", "hooks": [{"type": "command", "command": "audit"}]}]}
    path.write_text(json.dumps({"my-audit": mine}))
    message, level = hook_entries.command("install", "agy", "project", str(tmp_path), {"HOME": str(tmp_path)})
    assert level == "info" and "installed in" in message
    hooks = json.loads(path.read_text())
    assert hooks["my-audit"] == mine
    (group,) = hooks["gemini-companion"]["PreToolUse"]
    assert group["matcher"] == "write_to_file|create_file|replace_file_content|edit_file"
    assert (
        group["hooks"][0]["command"].endswith("hook_client.py agy") and group["hooks"][0]["timeout"] == 86_400
    )
    hook_entries.command("remove", "agy", "project", str(tmp_path), {})
    assert json.loads(path.read_text()) == {"my-audit": mine}
    # For every workspace: our agy plugin's hooks.json, once the plugin is there.
    home = {"HOME": str(tmp_path / "home")}
    message, level = hook_entries.command("install", "agy", "user", str(tmp_path), home)
    assert level == "error" and ":GeminiExtensionInstall agy installs agy's plugin" in message
    plugin = tmp_path / "home" / ".gemini" / "antigravity-cli" / "plugins" / "gemini-companion-nvim"
    plugin.mkdir(parents=True)
    (plugin / "plugin.json").write_text('{"name": "gemini-companion-nvim"}')
    message, level = hook_entries.command("install", "agy", "user", str(tmp_path), home)
    assert level == "info" and f"installed in {plugin / 'hooks.json'}" in message
    assert json.loads((plugin / "hooks.json").read_text())["gemini-companion"]["PreToolUse"] == [group]


@pytest.mark.parametrize(
    ("args", "after"),
    [
        ({"TargetContent": "x", "ReplacementContent": "y"}, "y\nx\nx\n"),  # the first
        ({"TargetContent": "x", "ReplacementContent": "y", "AllowMultiple": True}, "y\ny\ny\n"),
        ({"TargetContent": "x", "ReplacementContent": "y", "StartLine": 2, "EndLine": 3}, "x\ny\nx\n"),
        ({"TargetContent": "x", "ReplacementContent": "y", "StartLine": True, "EndLine": 3}, "y\nx\nx\n"),
        ({"TargetContent": "z", "ReplacementContent": "y"}, None),  # not there: denied, with why
    ],
    ids=["first", "every", "within lines", "a bool is no line", "absent"],
)
def test_agy_replace_file_content_as_the_engine_would_apply_it(
    args: dict[str, Any], after: str | None
) -> None:
    for tool in ("replace_file_content", "edit_file"):  # its docs' name, its engine's name
        if after is None:
            with pytest.raises(Unreviewable, match=r"not in a\.txt"):
                agy_gate.proposed_edit(tool, {"TargetFile": FILE, **args}, reader("x\nx\nx\n"))
        else:
            assert (
                agy_gate.proposed_edit(tool, {"TargetFile": FILE, **args}, reader("x\nx\nx\n")).after == after
            )


def test_agy_answers_carry_the_users_text_in_overwrite() -> None:
    write = agy_gate.proposed_edit("write_to_file", {"TargetFile": FILE, "CodeContent": "b\n"}, reader("a\n"))
    assert write is not None
    assert agy_gate.answer(write, Decision(True, "b\n"))["decision"] == "allow"
    assert agy_gate.answer(write, Decision(True, "c\n"))["overwrite"] == {"CodeContent": "c\n"}
    assert agy_gate.answer(write, Decision(True, "a\n"))["decision"] == "deny"  # kept the file
    assert agy_gate.answer(write, Decision(False, "b\n", "calc.py:1 no"))["reason"].endswith("calc.py:1 no")
    with pytest.raises(Unreviewable, match="relative"):
        agy_gate.proposed_edit("write_to_file", {"TargetFile": "rel.txt", "CodeContent": ""}, reader(""))


# -- claude's NotebookEdit --------------------------------------------------------------------------

NOTEBOOK = {
    "cells": [
        {
            "cell_type": "code",
            "id": "c1",
            "source": "x = 1",
            "metadata": {},
            "execution_count": 3,
            "outputs": [1],
        },
        {"cell_type": "markdown", "id": "m1", "source": ["# Title\n", "text"], "metadata": {}},
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}
NB = "/ws/nb.ipynb"


def notebook_text(notebook: dict[str, Any]) -> str:
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def test_a_notebook_edit_is_reviewed_as_the_notebook_claude_would_write() -> None:
    args = {"notebook_path": NB, "cell_id": "c1", "new_source": "x = 2", "edit_mode": "replace"}
    edit = gate.proposed_edit("NotebookEdit", args, lambda _p: notebook_text(NOTEBOOK))
    written = json.loads(edit.after)
    assert written["cells"][0] == {
        "cell_type": "code",
        "id": "c1",
        "source": "x = 2",
        "metadata": {},
        "execution_count": None,  # a replaced code cell loses its outputs, as claude does
        "outputs": [],
    }
    assert written["cells"][1] == NOTEBOOK["cells"][1] and edit.exact
    assert edit.after.startswith('{\n "cells": [\n  {\n   "cell_type": "code"')  # JSON.stringify(nb, null, 1)
    by_index = gate.proposed_edit(
        "NotebookEdit", {**args, "cell_id": "cell-1"}, lambda _p: notebook_text(NOTEBOOK)
    )
    assert json.loads(by_index.after)["cells"][1]["source"] == "x = 2"
    # Accepted as shown: allowed as claude asked; the user changed that cell: carried in new_source.
    assert "updatedInput" not in decision(gate.ClaudeGate.answer(edit, args, Decision(True, edit.after)))
    mine = json.loads(edit.after)
    mine["cells"][0]["source"] = "x = 42"
    out = decision(gate.ClaudeGate.answer(edit, args, Decision(True, notebook_text(mine))))
    assert out["permissionDecision"] == "allow" and out["updatedInput"] == {**args, "new_source": "x = 42"}
    # Changed elsewhere too: NotebookEdit cannot carry that, so it is denied with why.
    mine["cells"][1]["source"] = "other"
    out = decision(gate.ClaudeGate.answer(edit, args, Decision(True, notebook_text(mine))))
    assert out["permissionDecision"] == "deny" and "cannot make" in out["permissionDecisionReason"]


def test_an_inserted_cell_and_a_deleted_one() -> None:
    read = lambda _p: notebook_text(NOTEBOOK)  # noqa: E731
    insert = {
        "notebook_path": NB,
        "cell_id": "c1",
        "new_source": "y",
        "cell_type": "code",
        "edit_mode": "insert",
    }
    edit = gate.proposed_edit("NotebookEdit", insert, read)
    cells = json.loads(edit.after)["cells"]
    assert [c["source"] for c in cells] == ["x = 1", "y", ["# Title\n", "text"]]
    assert cells[1]["id"] == "<id claude picks>" and not edit.exact  # nbformat 4.5: claude's random id
    delete = {"notebook_path": NB, "cell_id": "m1", "new_source": "", "edit_mode": "delete"}
    assert len(json.loads(gate.proposed_edit("NotebookEdit", delete, read).after)["cells"]) == 1
    with pytest.raises(Unreviewable, match="no cell 'zz'"):
        gate.proposed_edit("NotebookEdit", {**delete, "cell_id": "zz"}, read)
    with pytest.raises(Unreviewable, match="not a notebook"):
        gate.proposed_edit("NotebookEdit", delete, lambda _p: "not json")
