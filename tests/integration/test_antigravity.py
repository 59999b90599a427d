"""Neovim's tools for the Antigravity engine (issue 30), tested with the real engine: PyPI's
google-antigravity 0.1.22 bundles `localharness`, "the same core agent harness that powers the
Antigravity CLI". Run through its SDK, offline: its model is the scripted Gemini-API stand-in on
127.0.0.1 (tests/support/fake_gemini_api.py, the request shape the harness sends), and it reaches
the plugin's MCP server over Streamable HTTP with the bearer token, as agy would.

What the harness does with MCP tools (../shared/research/antigravity-harness.md): eager tools are
named `mcp_<server>_<tool>` and get two extra required arguments, `toolAction` and `toolSummary`,
taken out before the call; lazy ones (the default) are listed by name only and called through
`call_mcp_tool`. The SDK does not read agy's own config files: that agy loads our plugin, its
hooks.json and its mcp_config.json is not tested here; what they hold is, run as agy's docs say.
agy itself (a closed binary in no package registry) appears only as a stand-in on the PATH, for
:checkhealth and :Gemini. That sessions the engine never ends do not pile up, the server alone, is in
tests/protocol/test_antigravity_sessions.py.

The tests that take `nvim` share one Neovim, reset after each (tests/support/shared_nvim.py);
those that need their own environment (HOME, PATH), settings or restarts start their own."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import stat
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gemini_companion.agents.agy import gate as agy_gate
from google.antigravity import hooks, types
from pynvim.api.common import NvimError

from tests.support.agent_terminal import Agent
from tests.support.antigravity_engine import as_its_user, chat, engine_config
from tests.support.fake_gemini_api import FakeGeminiApi, function_responses
from tests.support.helpers import Discovery, Neovim, answer, mcp_client, wait_for
from tests.support.real_claude import pending_review
from tests.support.shared_nvim import fresh_editor, shared_neovim

pytestmark = pytest.mark.real_agent

WHY = {"toolAction": "Looking at the editor", "toolSummary": "editor context"}


@pytest.fixture(scope="module")
def shared_nvim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Neovim]:
    with shared_neovim(tmp_path_factory.mktemp("antigravity")) as nvim:
        yield nvim


@pytest.fixture
def nvim(shared_nvim: Neovim) -> Iterator[Neovim]:
    yield shared_nvim
    fresh_editor(shared_nvim)


@pytest.fixture
def model_api() -> Any:
    with FakeGeminiApi() as api:
        yield api


def engine(
    nvim: Neovim,
    model_api: FakeGeminiApi,
    tmp_path: Path,
    *,
    eager: bool,
    gate: Any = None,
    entry: dict[str, Any] | None = None,
) -> Any:
    """The engine's config with Neovim's server as its MCP server "nvim": `entry`, an entry of agy's
    mcp_config.json as agy's docs say it reads one (`serverUrl`, `headers`), else this start's."""
    disc = nvim.wait_discovery()
    url = entry["serverUrl"] if entry else disc.url
    headers = entry["headers"] if entry else {"Authorization": f"Bearer {disc.token}"}
    # Our gate as agy's hooks.json would run it, held by the engine's own pre-tool hook path.
    return engine_config(
        model_api,
        url=url,
        headers=headers,
        workspace=nvim.workspace,
        app_data_dir=tmp_path / "antigravity",
        eager=eager,
        gate=gate,
    )


def our_tools(nvim: Neovim) -> list[str]:
    """The names of the tools the server lists (the built-in ones, with this Neovim's settings)."""
    disc = nvim.wait_discovery()

    async def names() -> list[str]:
        async with mcp_client(disc.url, disc.token) as client:
            return [t.name for t in (await client.list_tools()).tools]

    return asyncio.run(names())


def tool_output(model_api: FakeGeminiApi) -> str:
    """What the harness told the model the last tool returned."""
    responses = function_responses(model_api.turns[-1])
    assert responses, model_api.turns[-1]
    output: str = responses[-1]["response"]["output"]
    return output


@pytest.fixture
def users_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    as_its_user(monkeypatch, tmp_path / "home")


@pytest.mark.usefixtures("users_engine")
def test_the_engine_calls_a_tool_by_its_eager_name_and_gets_the_users_file(
    nvim: Neovim, model_api: FakeGeminiApi, tmp_path: Path
) -> None:
    (nvim.workspace / "app.py").write_text("def main():\n    pass\n")
    nvim.api.command("edit app.py")
    nvim.api.command("2")
    model_api.call("mcp_nvim_get_editor_context", **WHY)
    model_api.say("You are in app.py.")
    chat(engine(nvim, model_api, tmp_path, eager=True), "What am I looking at?")
    assert "You are Antigravity" in json.dumps(model_api.turns[0]["systemInstruction"])  # the real engine
    # Every tool of ours reached the model as a function it can call.
    declared = {
        f["name"]
        for tool in model_api.turns[0].get("tools", [])
        for f in tool.get("functionDeclarations", [])
    }
    assert {f"mcp_nvim_{name}" for name in our_tools(nvim)} <= declared
    output = tool_output(model_api)
    context = json.loads(output[output.index("{") :])  # after the harness's "Created At: ..." lines
    assert context["active_file"]["path"] == str(nvim.workspace / "app.py")
    assert context["active_file"]["cursor"] == {"line": 2, "column": 1}
    assert model_api.unexpected == []


@pytest.mark.usefixtures("users_engine")
def test_lazily_listed_tools_are_called_through_call_mcp_tool(
    nvim: Neovim, model_api: FakeGeminiApi, tmp_path: Path
) -> None:
    (nvim.workspace / "todo.txt").write_text("buy milk\n")
    nvim.api.command("edit todo.txt")
    args = {"ServerName": "nvim", "ToolName": "list_buffers", "Arguments": {}}
    model_api.call("call_mcp_tool", **args, **WHY)
    model_api.say("One buffer.")
    chat(engine(nvim, model_api, tmp_path, eager=False), "Which buffers are open?")
    # The model saw the tools' names first: ours are listed under the server.
    system = json.dumps(model_api.turns[0].get("systemInstruction", {}))
    assert all(name in system for name in our_tools(nvim))
    assert "todo.txt" in tool_output(model_api)


def hooks_json_command(nvim: Neovim, hooks_file: Path | None = None) -> Any:
    """A pre-tool hook that does what agy's docs say it does with a hooks.json command: the hook's
    input on stdin, its JSON answer read back. `hooks_file`: the command of our set in that file,
    run by `sh -c` in the file's directory for the tools its matcher (a regex) names, with the
    environment Neovim gives its terminal; else `python -I hook_client.py agy` with the variables."""
    disc = nvim.wait_discovery()
    client = Path(agy_gate.__file__).resolve().parents[2] / "hook_client.py"
    argv: list[str] = [sys.executable, "-I", str(client), "agy"]
    env = {
        **os.environ,
        "GEMINI_CLI_IDE_SERVER_PORT": str(disc.port),
        "GEMINI_CLI_IDE_AUTH_TOKEN": disc.token,
    }
    matcher, cwd = ".*", None
    if hooks_file is not None:
        (group,) = json.loads(hooks_file.read_text())[agy_gate.SECTION][agy_gate.HOOK_EVENT]
        matcher, (hook,) = group["matcher"], group["hooks"]
        argv, cwd, env = ["sh", "-c", hook["command"]], hooks_file.parent, nvim.lua("return vim.fn.environ()")

    @hooks.pre_tool_call_decide
    async def gate(call: types.ToolCall) -> types.HookResult:
        # The engine's own names (create_file, edit_file), as its hooks get them: not renamed to
        # the documented write_to_file / replace_file_content, so the gate must match them itself.
        name = getattr(call.name, "value", call.name)
        if not re.search(matcher, name):
            return types.HookResult(allow=True)
        event = {"toolCall": {"name": name, "args": call.args}, "stepIdx": 1}
        proc = await asyncio.create_subprocess_exec(*argv, stdin=-1, stdout=-1, env=env, cwd=cwd)
        out, _ = await proc.communicate(json.dumps(event).encode())
        said = json.loads(out or b"{}")
        return types.HookResult(
            allow=said.get("decision", "allow") != "deny",
            message=said.get("reason", ""),
            modified_args=said.get("overwrite"),
        )

    return gate


def chat_in_background(config: Any, prompt: str) -> threading.Thread:
    thread = threading.Thread(target=chat, args=(config, prompt), daemon=True)
    thread.start()
    return thread


@pytest.mark.usefixtures("users_engine")
def test_an_edit_is_held_for_review_and_written_as_the_user_changed_it(
    nvim: Neovim, model_api: FakeGeminiApi, tmp_path: Path
) -> None:
    target = nvim.workspace / "calc.py"
    target.write_text("a = 1\nb = 2\n")
    edit = {"TargetFile": str(target), "TargetContent": "b = 2", "ReplacementContent": "b = 3"}
    model_api.call("replace_file_content", **edit, AllowMultiple=False, StartLine=2, EndLine=2, **WHY)
    model_api.say("Done.")
    chat_thread = chat_in_background(
        engine(nvim, model_api, tmp_path, eager=True, gate=hooks_json_command(nvim)), "make b 3"
    )
    proposed = pending_review(nvim, target)
    assert target.read_text() == "a = 1\nb = 2\n"  # held while the user decides
    assert nvim.api.call("getbufline", proposed, 1, "$") == ["a = 1", "b = 3"]
    nvim.lua("vim.api.nvim_set_current_win(vim.fn.bufwinid(...))", proposed)
    nvim.api.input("ggcwA<Esc>:w<CR>")  # the user's own change, then accept
    chat_thread.join(60)
    assert target.read_text() == "A = 1\nb = 3\n"


@pytest.mark.usefixtures("users_engine")
def test_a_rejected_edit_is_denied_with_the_reason_and_comments_reaching_the_model(
    nvim: Neovim, model_api: FakeGeminiApi, tmp_path: Path
) -> None:
    target = nvim.workspace / "memo.txt"
    target.write_text("keep\n")
    model_api.call("write_to_file", TargetFile=str(target), CodeContent="gone\n", Overwrite=True, **WHY)
    model_api.say("Understood.")
    chat_thread = chat_in_background(
        engine(nvim, model_api, tmp_path, eager=True, gate=hooks_json_command(nvim)), "rewrite notes"
    )
    proposed = pending_review(nvim, target)
    nvim.lua("vim.api.nvim_set_current_win(vim.fn.bufwinid(...))", proposed)
    nvim.api.input("\\cwhy remove it?<CR>")
    wait_for(
        lambda: nvim.lua("return #require('gemini_companion.comments').list(true)") == 1, what="commented"
    )
    nvim.api.input(":q<CR>")
    answer(nvim, "y")  # send the comment with the rejection
    chat_thread.join(60)
    assert target.read_text() == "keep\n"
    told = json.dumps(model_api.turns[-1])
    assert "The user rejected this edit of memo.txt in their editor (Neovim)." in told
    assert "memo.txt:1" in told and "why remove it?" in told


def agy_section(health: str) -> str:
    """The lines of :checkhealth's agy section, up to the next section."""
    start = health.index("Antigravity CLI (agy)")
    return health[start : health.index(" ~\n", health.index("\n", start))]


def test_checkhealth_names_agy_its_version_its_gate_and_its_mcp_entry(make_nvim: Any, tmp_path: Path) -> None:
    """agy itself is not to be had here (a closed binary, no package): a stand-in on the PATH answers
    `--version` as the real one's docs show (`agy 1.0.2`); the files are agy's, per its docs."""
    home, bin_dir = tmp_path / "home", tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "agy").write_text("#!/bin/sh\necho 'agy 1.0.2'\n")
    (bin_dir / "agy").chmod(0o755)
    env = {"HOME": str(home), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    nvim: Neovim = make_nvim(env=env)
    nvim.wait_state("running")
    section = agy_section(nvim.health())
    assert f"agy 1.0.2 ({bin_dir / 'agy'})" in section
    assert ":GeminiGate install agy project" in section and ":GeminiMcpConfig! agy prints one" in section
    nvim.api.command("GeminiGate install agy project")
    wait_for((nvim.workspace / ".agents" / "hooks.json").exists, what="the gate installed")
    nvim.api.command("GeminiMcpConfig! agy")
    entry = nvim.notifications()[-1][0].split(":\n", 1)[1].split("\n\n", 1)[0]
    (nvim.workspace / ".agents" / "mcp_config.json").write_text(entry)
    section = agy_section(nvim.health())
    assert f"review gate in {nvim.workspace / '.agents' / 'hooks.json'}" in section
    assert f'{nvim.workspace / ".agents" / "mcp_config.json"}: "nvim" reaches this Neovim' in section


# -- our agy plugin (:GeminiExtensionInstall[!] agy) ------------------------------------------------

PLUGIN = Path(".gemini") / "antigravity-cli" / "plugins" / "gemini-companion-nvim"


def notes(nvim: Neovim) -> str:
    return "\n".join(str(msg) for msg, _level in nvim.notifications())


@pytest.mark.usefixtures("users_engine")
def test_the_plugin_teaches_our_tools_and_its_hook_holds_agys_edits_with_no_token_on_disk(
    make_nvim: Any, model_api: FakeGeminiApi, tmp_path: Path
) -> None:
    """`:GeminiExtensionInstall agy`: plugin.json, rules/AGENTS.md and hooks.json where agy's CLI
    plugins doc puts a plugin; no MCP entry, which would hold the token. Its hook is run as agy's
    docs say agy runs one, from the real engine's pre-tool hook path, with the environment an agy
    started in Neovim's terminal has; that agy loads the plugin follows its docs only."""
    home = tmp_path / "home"
    nvim: Neovim = make_nvim(env={"HOME": str(home)})
    token = nvim.wait_discovery().token
    nvim.api.command("GeminiExtensionInstall agy")
    plugin = home / PLUGIN
    hooks_file = plugin / "hooks.json"
    wait_for(hooks_file.exists, what="the plugin's hook")
    assert json.loads((plugin / "plugin.json").read_text()).keys() == {"name", "description"}
    rules = (plugin / "rules" / "AGENTS.md").read_text()
    for tool in ("get_editor_context", "lsp_definition", "get_diagnostics", "dap_status", "undo_tree"):
        assert f"`mcp_nvim_{tool}`" in rules
    assert "call_mcp_tool" in rules  # agy lists MCP tools lazily
    assert sorted(p.relative_to(plugin).as_posix() for p in plugin.rglob("*") if p.is_file()) == [
        "hooks.json",
        "plugin.json",
        "rules/AGENTS.md",
    ]
    assert all(token not in p.read_text() for p in plugin.rglob("*") if p.is_file())
    assert ":GeminiExtensionInstall! agy" in notes(nvim)
    # The hook is the one :GeminiGate install agy project writes, with a timeout for a human.
    nvim.api.command("GeminiGate install agy project")
    project_hooks = nvim.workspace / ".agents" / "hooks.json"
    wait_for(project_hooks.exists, what="the project's gate")
    assert json.loads(hooks_file.read_text()) == json.loads(project_hooks.read_text())
    project_hooks.unlink()
    (hook,) = json.loads(hooks_file.read_text())[agy_gate.SECTION][agy_gate.HOOK_EVENT][0]["hooks"]
    assert hook["timeout"] >= 3600

    target = nvim.workspace / "memo.txt"
    target.write_text("keep\n")
    model_api.call("write_to_file", TargetFile=str(target), CodeContent="new\n", Overwrite=True, **WHY)
    model_api.say("Done.")
    gate = hooks_json_command(nvim, hooks_file)
    chat_thread = chat_in_background(engine(nvim, model_api, tmp_path, eager=True, gate=gate), "rewrite")
    proposed = pending_review(nvim, target)
    assert target.read_text() == "keep\n"  # held while the user decides
    nvim.lua("vim.api.nvim_set_current_win(vim.fn.bufwinid(...))", proposed)
    nvim.api.input(":w<CR>")
    chat_thread.join(60)
    assert target.read_text() == "new\n"

    section = agy_section(nvim.health())
    assert f"agy's plugin is installed in {plugin}, without an MCP entry" in section
    assert f"review gate in {hooks_file}" in section
    nvim.api.command("GeminiExtensionUninstall agy")
    assert not plugin.exists()
    assert "agy's plugin is not installed: :GeminiExtensionInstall agy" in agy_section(nvim.health())
    nvim.api.command("GeminiGate install agy user")  # no plugin: no user hooks file, and it says how
    wait_for(lambda: ":GeminiExtensionInstall agy installs agy's plugin" in notes(nvim), what="the hint")
    assert not plugin.exists()

    (plugin / "plugin.json").parent.mkdir(parents=True)
    (plugin / "plugin.json").write_text('{"name": "someone-else"}')
    for cmd in ("GeminiExtensionInstall agy", "GeminiExtensionUninstall agy"):
        nvim.lua("pcall(vim.cmd, ...)", cmd)
    assert [p.name for p in plugin.iterdir()] == ["plugin.json"]  # not ours: left alone, and said
    assert notes(nvim).count("is not this plugin's (its plugin.json names another)") == 2


@pytest.mark.usefixtures("users_engine")
def test_with_bang_the_plugin_holds_the_mcp_entry_and_follows_each_start(
    make_nvim: Any, model_api: FakeGeminiApi, tmp_path: Path
) -> None:
    """`:GeminiExtensionInstall! agy` also writes the MCP entry `:GeminiMcpConfig! agy` prints, mode
    0600; the token changes at every start, so the entry is rewritten at each start while it is
    there, and never created otherwise. The real engine reaches Neovim through the entry's URL and
    header (that agy reads a plugin's mcp_config.json so follows its docs only)."""
    home = tmp_path / "home"
    nvim: Neovim = make_nvim(env={"HOME": str(home)})
    first = nvim.wait_discovery()
    nvim.wait_state("running")
    nvim.api.command("GeminiExtensionInstall! agy")
    mcp_file = home / PLUGIN / "mcp_config.json"
    assert stat.S_IMODE(mcp_file.stat().st_mode) == 0o600
    nvim.api.command("GeminiMcpConfig! agy")
    printed = nvim.notifications()[-1][0].split(":\n", 1)[1].split("\n\n", 1)[0]
    assert json.loads(mcp_file.read_text()) == json.loads(printed)

    def the_engine_calls_a_tool() -> None:
        entry = json.loads(mcp_file.read_text())["mcpServers"]["nvim"]
        model_api.call("mcp_nvim_nvim_info", **WHY)
        model_api.say("Noted.")
        chat(engine(nvim, model_api, tmp_path, eager=True, entry=entry), "Which Neovim is this?")
        assert '"pid"' in tool_output(model_api)

    the_engine_calls_a_tool()

    def restart() -> Discovery:
        old = nvim.wait_discovery()
        nvim.api.command("GeminiStop")
        nvim.wait_state("stopped")
        nvim.api.command("GeminiStart")
        new = nvim.wait_discovery(exclude_port=old.port)
        # Neovim's environment has the new start's port once the server's ready event ran.
        wait_for(lambda: nvim.lua("return vim.env.GEMINI_CLI_IDE_SERVER_PORT") == str(new.port), what="ready")
        return new

    again = restart()
    assert again.token != first.token
    assert again.token in mcp_file.read_text() and first.token not in mcp_file.read_text()
    assert stat.S_IMODE(mcp_file.stat().st_mode) == 0o600
    the_engine_calls_a_tool()
    section = agy_section(nvim.health())
    assert f"agy's plugin is installed in {home / PLUGIN}, with its MCP entry" in section
    assert f'{mcp_file}: "nvim" reaches this Neovim' in section

    nvim.api.command("GeminiExtensionInstall agy")  # without !: the token leaves the disk
    assert not mcp_file.exists()
    restart()
    assert not mcp_file.exists()  # and no start brings it back

    # With the server stopped `!` cannot write the entry, so it writes nothing: no half plugin.
    nvim.api.command("GeminiExtensionUninstall agy")
    nvim.api.command("GeminiStop")
    nvim.wait_state("stopped")
    with pytest.raises(NvimError, match="the server is not running"):
        nvim.api.command("GeminiExtensionInstall! agy")
    assert not (home / PLUGIN).exists()


# -- :Gemini runs agy -----------------------------------------------------------------------------


def programs_on_path(tmp_path: Path, *names: str) -> tuple[str, dict[str, Agent]]:
    """A PATH with stand-ins for `names` and none of the real programs of those names, and where
    each stand-in records what it was started with. The real agy is a closed binary in no package
    registry: its stand-in is the terminal tests' agent (tests/fixtures/agent_standin) under its name."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    agents = {}
    for name in names:
        agents[name] = Agent(tmp_path / f"{name}-record")
        script = bin_dir / name
        script.write_text(f"#!/bin/sh\nexec {shlex.join(agents[name].cmd)}\n")
        script.chmod(0o755)
    rest = [d for d in os.environ["PATH"].split(os.pathsep) if not any((Path(d) / n).exists() for n in names)]
    return os.pathsep.join([str(bin_dir), *rest]), agents


def test_gemini_runs_agy_for_a_user_with_no_gemini(make_nvim: Any, tmp_path: Path) -> None:
    """A user moving from Gemini CLI, with `agy` on the PATH, no `gemini`, and no terminal.cmd:
    `:Gemini` runs agy, which inherits what finds this Neovim (agy's hook reads it from there)."""
    path, agents = programs_on_path(tmp_path, "agy")
    nvim: Neovim = make_nvim(env={"PATH": path, "HOME": str(tmp_path / "home")})
    nvim.wait_state("running")
    nvim.api.command("Gemini")
    env = agents["agy"].started()["env"]
    assert env["GEMINI_CLI_IDE_SERVER_PORT"] == str(nvim.wait_discovery().port)
    assert env["GEMINI_CLI_IDE_AUTH_TOKEN"] == nvim.wait_discovery().token
    assert f'OK the agent "agy" is {tmp_path / "bin" / "agy"}' in nvim.health()
    nvim.lua("pcall(vim.cmd, 'Gemini claude')")  # another agent while agy runs: said, not done
    assert any('"agy" runs in the agent terminal: quit it first' in str(m) for m, _ in nvim.notifications())


def test_gemini_agy_and_terminal_cmd_agy_run_agy_beside_gemini(make_nvim: Any, tmp_path: Path) -> None:
    """With both on the PATH, `:Gemini` runs gemini; `:Gemini agy` and `terminal.cmd = 'agy'` run agy.
    (The gemini user has IDE mode on, so :Gemini asks nothing first.)"""
    path, agents = programs_on_path(tmp_path, "gemini", "agy")
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text('{"ide": {"enabled": true}}')
    env = {"PATH": path, "HOME": str(home)}
    nvim: Neovim = make_nvim("chooses", env=env)
    nvim.api.command("Gemini agy")
    assert agents["agy"].started()["env"]["GEMINI_CLI_IDE_AUTH_TOKEN"] == nvim.wait_discovery().token
    nvim.api.command("Gemini")  # the chosen agent stays the one :Gemini means: hidden, not a new one
    nvim.api.command("Gemini")
    assert not (agents["gemini"].record / "env.json").exists()
    assert nvim.lua("return require('gemini_companion.terminal').settings().cmd") == "agy"

    init = "vim.g.gemini_companion = { terminal = { cmd = 'agy' } }\n"
    configured: Neovim = make_nvim("configured", env=env, init_lua=init)
    assert configured.lua("return require('gemini_companion.terminal').settings().cmd") == "agy"
    default: Neovim = make_nvim("default", env=env)
    default.api.command("Gemini")
    assert agents["gemini"].started()["env"]["GEMINI_CLI_IDE_AUTH_TOKEN"] == default.wait_discovery().token
