"""The seam between Python and Lua: both halves name the same calls and the same events, and
whatever Lua sends is validated once, a malformed event dropped (logged), never raised."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, get_args

import pytest
from gemini_companion import seam
from gemini_companion.agents import command
from gemini_companion.lifecycle import ServerLifecycle

ROOT = Path(__file__).resolve().parents[2]
BRIDGE = (ROOT / "lua" / "gemini_companion" / "bridge.lua").read_text()
# The seam's other half: what Lua sends to the host (events, calls, the shutdown request).
TO_HOST = (ROOT / "lua" / "gemini_companion" / "to_host.lua").read_text()
PLUGIN_PY = (ROOT / "rplugin" / "python3" / "gemini_companion" / "plugin.py").read_text()
LUA_FILES = sorted([*ROOT.joinpath("lua").rglob("*.lua"), *ROOT.joinpath("plugin").glob("*.lua")])

EVENTS: tuple[type[Any], ...] = get_args(seam.Event)


def bridge_functions() -> dict[str, str]:
    """bridge.lua's public functions: name -> body (up to the next top-level `end`)."""
    return dict(re.findall(r"^function M\.(\w+)\([^)]*\)\n(.*?)^end$", BRIDGE, re.S | re.M))


def test_every_entry_point_python_calls_is_a_bridge_function() -> None:
    functions = bridge_functions()
    for code in seam.LUA_ENTRY_POINTS:
        match = re.fullmatch(r"(return )?require\('gemini_companion\.bridge'\)\.(\w+)\((\.\.\.)?\)", code)
        assert match, f"{code!r}: Python calls Lua only through bridge.lua"
        assert match[2] in functions, f"seam.py calls bridge.{match[2]}, which bridge.lua does not define"


def lua_events() -> dict[str, set[str]]:
    """Each event table bridge.lua sends: its `type` -> the other keys it sets."""
    sent: dict[str, set[str]] = {}
    for body in re.findall(r"send\(\{(.*?)\}[,)]", TO_HOST, re.S):
        fields = dict(re.findall(r"(\w+) = ([^,]+)", body))
        kind = fields.pop("type").strip().strip("'")
        sent[kind] = set(fields)
    return sent


def test_every_event_lua_sends_has_a_model_with_the_same_fields() -> None:
    models = {model.model_fields["type"].annotation.__args__[0]: model for model in EVENTS}
    sent = lua_events()
    assert set(sent) == set(models), "bridge.lua sends the event kinds seam.py defines, no more, no fewer"
    for kind, fields in sent.items():
        assert fields == set(models[kind].model_fields) - {"type"}, f"the fields of {kind!r} differ"


def test_only_the_seam_talks_to_the_host() -> None:
    for path in LUA_FILES:
        if path.name != "to_host.lua":
            text = path.read_text()
            assert not re.search(r"rpcnotify|rpcrequest|gemini_companion_event", text), path
    assert f"'{seam.EVENT_METHOD}'" in TO_HOST and f"'{seam.SHUTDOWN_METHOD}'" in TO_HOST
    assert f'rpc_export("{seam.EVENT_METHOD}"' in PLUGIN_PY
    assert f'rpc_export("{seam.SHUTDOWN_METHOD}"' in PLUGIN_PY


def test_every_command_lua_sends_is_handled() -> None:
    sent = {m for path in LUA_FILES for m in re.findall(r"\bcall\('(\w+)'", path.read_text())}
    assert sent == set(seam.COMMANDS)
    for action in seam.COMMANDS:  # plugin.py's own, or an agent's (agents.command)
        assert f'"{action}"' in PLUGIN_PY or command(action) is not None, f"nothing handles {action!r}"


@pytest.mark.parametrize(
    ("raw", "model"),
    [
        ({"type": "dirchanged", "cwd": "/p"}, seam.DirChanged),
        ({"type": "tools", "tools": [{"name": "x"}, "junk"]}, seam.ToolsChanged),
        ({"type": "context", "context": {"openFiles": []}}, seam.ContextChanged),
        ({"type": "review", "action": "rejected", "path": "/p/a"}, seam.ReviewDecided),
        (
            {"type": "review", "action": "accepted", "path": "/p/a", "id": 3, "content": "x\n"},
            seam.ReviewDecided,
        ),
        ({"type": "tool_done", "id": 7, "reply": {"ok": True, "text": ""}}, seam.ToolDone),
    ],
)
def test_events_lua_sends_are_parsed(raw: dict[str, Any], model: type[Any]) -> None:
    assert isinstance(seam.parse_event(raw), model)


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "dirchanged",
        [],
        {},
        {"type": "sync"},
        {"type": "dirchanged"},
        {"type": "review", "action": "maybe", "path": "/p/a"},
        {"type": "review", "action": "accepted", "path": 1},
        {"type": "tool_done", "id": "7", "reply": {"ok": True}},
        {"type": "tool_done", "id": True, "reply": {"ok": True}},
        {"type": "context", "context": []},
    ],
)
def test_a_malformed_event_is_logged_and_dropped(raw: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "gemini_companion.seam")
    assert seam.parse_event(raw) is None
    assert "dropped a malformed event from Lua" in caplog.text


class _NoNvim:
    def async_call(self, fn: Any, *args: Any) -> None:
        pass


def test_the_service_takes_any_event_without_raising() -> None:
    service = ServerLifecycle(_NoNvim())  # not started: valid events have nowhere to go either
    for raw in (None, {"type": "review"}, {"type": "tool_done", "id": 1, "reply": {"ok": True}}, 42):
        service.on_event(raw)


def test_an_asynchronous_answer_comes_back_on_the_channel_its_call_went(tmp_path: Path) -> None:
    """Lua is told which channel called (ours: id 7 here) and answers there, not on the host's."""
    import asyncio

    import msgpack
    from gemini_companion.core.tools import ToolCatalog
    from gemini_companion.nvim.gateway import NvimGateway

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        unpacker = msgpack.Unpacker(raw=False)
        while data := await reader.read(65536):
            unpacker.feed(data)
            for _kind, msgid, method, args in unpacker:
                if method == "nvim_get_api_info":
                    writer.write(msgpack.packb([1, msgid, None, [7, {}]]))
                    continue
                _name, tool_args, call_id, *reply_to = args[1]
                writer.write(msgpack.packb([1, msgid, None, {"pending": True}]))
                if reply_to == [7]:  # like bridge.tool_done: the answer, on the calling channel
                    done = {"type": "tool_done", "id": call_id, "reply": {"ok": True, "text": tool_args["x"]}}
                    writer.write(msgpack.packb([2, seam.EVENT_METHOD, [done]]))

    async def scenario() -> Any:
        server = await asyncio.start_unix_server(serve, str(tmp_path / "nvim.sock"))
        gateway = NvimGateway(_NoNvim(), timeout_s=2, max_in_flight=4)  # type: ignore[arg-type]
        catalog = ToolCatalog(gateway)
        gateway.on_event = lambda raw: catalog.complete(raw["id"], raw["reply"])
        await gateway.open_channel(str(tmp_path / "nvim.sock"))
        schema = {"type": "object", "properties": {"x": {"type": "string"}}}
        catalog.set_lua_tools([{"name": "later", "inputSchema": schema, "async": True}])
        try:
            return await catalog.call("later", {"x": "answered"})
        finally:
            gateway.close()
            server.close()

    result = asyncio.run(scenario())
    assert not result.is_error and result.content[0].text == "answered"


TYPES_LUA = (ROOT / "lua" / "gemini_companion" / "types.lua").read_text()
REPLIES: tuple[type[Any], ...] = (
    seam.HostHello,
    seam.StartInfo,
    seam.OpenedReview,
    seam.ClosedReview,
    seam.ToolReply,
    seam.ClaudeToolError,
)


def lua_classes() -> dict[str, set[str]]:
    """types.lua's LuaCATS classes: name -> field names."""
    classes: dict[str, set[str]] = {}
    for name, body in re.findall(
        r"^---@class gemini_companion\.(\w+)\n((?:---@field .*\n)*)", TYPES_LUA, re.M
    ):
        classes[name] = set(re.findall(r"^---@field (\w+)\??", body, re.M))
    return classes


def test_every_reply_python_reads_has_its_lua_class_with_the_same_fields() -> None:
    classes = lua_classes()
    assert set(classes) == {model.__name__ for model in REPLIES}, "types.lua mirrors seam.py's replies"
    for model in REPLIES:
        wire = {field.alias or name for name, field in model.model_fields.items()}
        assert classes[model.__name__] == wire, f"the fields of {model.__name__} differ"


def test_each_entry_point_returns_the_class_seam_py_names() -> None:
    """seam.py says `-> Model` for an entry point's reply; bridge.lua says `---@return` the same class."""
    returns = {
        f: cls
        for cls, f in re.findall(r"^---@return gemini_companion\.(\w+)\nfunction M\.(\w+)\(", BRIDGE, re.M)
    }
    seam_py = (ROOT / "rplugin" / "python3" / "gemini_companion" / "seam.py").read_text()
    said = dict(re.findall(r"_BRIDGE\}\.(\w+)\(.*?\)\"  # \(.*?\) -> (\w+)", seam_py))
    replies = {model.__name__ for model in REPLIES}
    expected = {function: cls for function, cls in said.items() if cls in replies}
    assert len(expected) >= 5, said
    assert {f: c for f, c in returns.items() if f in expected} == expected


@pytest.mark.parametrize("model", REPLIES)
def test_a_malformed_reply_reads_as_failure_and_is_logged(
    model: type[Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "gemini_companion.seam")
    wrong = {name: object() for name in model.model_fields}  # nothing Lua could send
    reply = model.parse(wrong)
    assert reply == model.parse(None)  # the model's failure value
    assert f"malformed {model.__name__} from Lua" in caplog.text


def test_lua_empty_tables_in_the_start_info_are_empty_mappings() -> None:
    info = seam.StartInfo.parse({"config": [], "env": [], "cwd": "/p", "pid": 5})
    assert info.config == {} and info.env == {} and info.cwd == "/p" and info.pid == 5
