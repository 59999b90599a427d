"""The gateway's own RPC channel against a scripted msgpack-RPC peer on a Unix socket."""

import asyncio
from pathlib import Path
from typing import Any

import msgpack
import pytest
from gemini_companion.nvim.gateway import NeovimCallError, NeovimUnavailable, NvimGateway

from tests.support.helpers import until


class NoPynvim:
    """Fails the test if the gateway falls back to pynvim while the channel is up."""

    def async_call(self, fn: Any, *args: Any) -> None:
        raise AssertionError("went through pynvim")

    def exec_lua(self, code: str, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("went through pynvim")

    def request(self, name: str, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("went through pynvim")


async def fake_nvim(path: Path, *, hang: bool = False) -> asyncio.AbstractServer:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        unpacker = msgpack.Unpacker(raw=False)
        while data := await reader.read(65536):
            unpacker.feed(data)
            for msg in unpacker:
                if msg[0] == 2:  # a notification: echo it back as one
                    writer.write(msgpack.packb([2, "echo", msg[2]]))
                    continue
                _kind, msgid, method, args = msg
                if method == "nvim_get_mode":
                    reply = [1, msgid, None, {"mode": "n", "blocking": False}]
                elif hang:
                    continue
                elif args[0] == "error":
                    err = "Error executing lua: [string]:1: boom\nstack traceback:\n..."
                    reply = [1, msgid, [0, err], None]
                elif args[0] == "quit":
                    writer.close()
                    return
                else:
                    reply = [1, msgid, None, {"echo": args[1], "text": "é"}]
                writer.write(msgpack.packb(reply))

    return await asyncio.start_unix_server(serve, str(path))


def test_calls_go_over_the_channel(tmp_path: Path) -> None:
    async def scenario() -> None:
        sock = tmp_path / "nvim.sock"
        server = await fake_nvim(sock)
        gw = NvimGateway(NoPynvim(), timeout_s=1, max_in_flight=4)
        await gw.open_channel(str(sock))
        assert gw.direct
        assert await gw.exec_lua("x", 1, "a") == {"echo": [1, "a"], "text": "é"}
        results = await asyncio.gather(*(gw.exec_lua("x", i) for i in range(4)))
        assert [r["echo"] for r in results] == [[i] for i in range(4)]
        with pytest.raises(NeovimCallError, match=r"^\[string\]:1: boom$"):
            await gw.exec_lua("error")
        gw.notify_lua("x", 1)  # on the server loop: over the channel, not pynvim
        assert await gw.exec_lua("x", 2) == {"echo": [2], "text": "é"}
        gw.close()
        server.close()

    asyncio.run(scenario())


def test_timeout_and_lost_connection(tmp_path: Path) -> None:
    async def scenario() -> None:
        sock = tmp_path / "nvim.sock"
        server = await fake_nvim(sock, hang=True)
        gw = NvimGateway(NoPynvim(), timeout_s=0.2, max_in_flight=4)
        await gw.open_channel(str(sock))
        with pytest.raises(NeovimUnavailable, match=r"did not answer; call timed out after 0\.2 s"):
            await gw.exec_lua("x")
        gw.close()
        server.close()

    asyncio.run(scenario())


def test_connection_lost_fails_pending_then_falls_back(tmp_path: Path) -> None:
    async def scenario() -> None:
        sock = tmp_path / "nvim.sock"
        server = await fake_nvim(sock)
        gw = NvimGateway(NoPynvim(), timeout_s=1, max_in_flight=4)
        await gw.open_channel(str(sock))
        with pytest.raises(NeovimUnavailable, match="lost the connection"):
            await gw.exec_lua("quit")
        await until(lambda: not gw.direct, what="back to pynvim")  # later calls go through pynvim again
        server.close()

    asyncio.run(scenario())


def test_no_address_keeps_pynvim(tmp_path: Path) -> None:
    async def scenario() -> None:
        gw = NvimGateway(NoPynvim(), timeout_s=1, max_in_flight=4)
        await gw.open_channel("")
        await gw.open_channel(str(tmp_path / "missing.sock"))
        await gw.open_channel("\\\\.\\pipe\\nvim.123.0")
        assert not gw.direct

    asyncio.run(scenario())


def test_big_messages_leave_no_big_buffers_behind(tmp_path: Path) -> None:
    # msgpack keeps its buffers as big as the biggest message: after one past BIG_MESSAGE_BYTES
    # (sent, or received whole) the channel packs and unpacks with fresh ones; texts stay exact.
    from gemini_companion.nvim.channel import BIG_MESSAGE_BYTES

    async def scenario() -> None:
        sock = tmp_path / "nvim.sock"
        server = await fake_nvim(sock)
        gw = NvimGateway(NoPynvim(), timeout_s=5, max_in_flight=4)
        await gw.open_channel(str(sock))
        channel = gw._channel
        assert channel is not None
        packer, unpacker = channel._packer, channel._unpacker
        small = await gw.exec_lua("x", "small")
        assert (channel._packer, channel._unpacker) == (packer, unpacker)
        big = "é" * BIG_MESSAGE_BYTES  # 2 MiB as UTF-8, read back in many pieces
        assert await gw.exec_lua("x", big) == {"echo": [big], "text": "é"}
        assert channel._packer is not packer and channel._unpacker is not unpacker
        assert await gw.exec_lua("x", "small") == small
        gw.close()
        server.close()

    asyncio.run(scenario())
