"""Per-client fan-out: latest value wins, and a slow client never delays another."""

import asyncio
from collections.abc import Mapping
from typing import Any

from gemini_companion.core.sessions import ClientRegistry, ConnectedClient

from tests.support.helpers import until


class Recorder:
    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.got: list[tuple[str, Any]] = []

    async def notify(self, method: str, params: Mapping[str, Any] | None) -> None:
        await asyncio.sleep(self.delay)
        self.got.append((method, params))


def client(sid: str, out: Recorder) -> ConnectedClient:
    return ConnectedClient(
        session_id=sid, name="t", version="1", protocol_version="2025-06-18", connection=out
    )


def test_slow_client_gets_only_the_latest_and_fast_client_is_not_held_up() -> None:
    async def scenario() -> tuple[Recorder, Recorder]:
        registry = ClientRegistry()
        slow, fast = Recorder(delay=0.2), Recorder()
        registry.add(client("slow", slow))
        registry.add(client("fast", fast))
        for i in range(50):
            registry.broadcast("ide/contextUpdate", {"n": i})
            await asyncio.sleep(0.001)  # the updates come over time, not in one burst
        latest = ("ide/contextUpdate", {"n": 49})
        await until(lambda: fast.got[-1] == latest, what="the fast client current")
        await until(lambda: slow.got and slow.got[-1] == latest, what="the slow client current")
        return slow, fast

    slow, fast = asyncio.run(scenario())
    assert len(fast.got) >= 25
    assert slow.got[-1] == ("ide/contextUpdate", {"n": 49})
    assert len(slow.got) <= 3  # the first, then only the newest each time it was ready


def test_distinct_keys_are_all_delivered_and_removal_notifies_listeners() -> None:
    async def scenario() -> tuple[Recorder, list[str]]:
        registry = ClientRegistry()
        out = Recorder()
        gone: list[str] = []
        registry.on_removed.append(lambda c: gone.append(c.session_id))
        registry.add(client("s1", out))
        c = registry.get("s1")
        assert c is not None
        c.send_latest("ide/diffRejected", {"filePath": "/a"}, key="r/a")
        c.send_latest("ide/diffRejected", {"filePath": "/b"}, key="r/b")
        await until(lambda: len(out.got) == 2, what="both keys delivered")
        registry.remove("s1")
        registry.remove("s1")  # twice is harmless
        return out, gone

    out, gone = asyncio.run(scenario())
    assert [p["filePath"] for _, p in out.got] == ["/a", "/b"]  # type: ignore[index]
    assert gone == ["s1"]


def test_only_a_client_whose_stream_stays_closed_is_ended() -> None:
    """gemini reopens a dropped event stream after 1 s; a dead one never does."""

    async def scenario() -> tuple[list[str], list[str]]:
        registry = ClientRegistry(stream_grace_s=0.2)
        ended: list[str] = []
        all_ended = asyncio.Event()

        async def end_session(session_id: str) -> None:
            ended.append(session_id)
            all_ended.set()

        registry.end_session = end_session
        for sid in ("dead", "reconnects", "streaming"):
            registry.add(client(sid, Recorder()))
            registry.stream_opened(sid)
        registry.stream_closed("dead")
        registry.stream_closed("reconnects")
        registry.stream_opened("reconnects")  # within the grace period
        await asyncio.wait_for(all_ended.wait(), 5)
        return ended, [sid for sid in ("dead", "reconnects", "streaming") if registry.get(sid)]

    ended, left = asyncio.run(scenario())
    assert ended == ["dead"]
    assert left == ["reconnects", "streaming"]


def test_a_client_that_still_sends_requests_is_kept_without_a_stream() -> None:
    async def scenario() -> tuple[list[str], list[str]]:
        registry = ClientRegistry(stream_grace_s=0.2)
        ended: list[str] = []
        done = asyncio.Event()

        async def end_session(session_id: str) -> None:
            ended.append(session_id)
            done.set()

        registry.end_session = end_session
        for sid in ("posting", "silent"):
            registry.add(client(sid, Recorder()))
            registry.stream_opened(sid)
            registry.stream_closed(sid)
        registry.touch("posting")  # e.g. a tools/call after its stream closed
        await asyncio.wait_for(done.wait(), 5)
        return ended, [sid for sid in ("posting", "silent") if registry.get(sid)]

    ended, left = asyncio.run(scenario())
    assert ended == ["silent"] and left == ["posting"]


def test_at_the_cap_only_the_idlest_session_without_a_stream_a_call_or_a_websocket_makes_room() -> None:
    async def scenario() -> tuple[list[bool], list[str], list[str]]:
        registry = ClientRegistry(max_sessions=4)
        ended: list[str] = []

        async def end(session_id: str) -> None:
            ended.append(session_id)

        registry.end_session = end
        registry.busy = lambda session_id: session_id == "calling"
        for sid in ("stream", "calling", "claude", "old"):
            registry.add(client(sid, Recorder()))
            await asyncio.sleep(0.01)  # (each seen later than the one before)
        registry.stream_opened("stream")
        claude = registry.get("claude")
        assert claude is not None
        claude.transport = "ws"
        registry.touch("calling")  # the most recently active: yet it is answering a call
        admitted = [await registry.make_room()]
        registry.add(client("new", Recorder()))
        registry.stream_opened("new")  # (it opens its stream)
        admitted.append(await registry.make_room())  # now no one can go
        return admitted, ended, sorted(c["session_id"] for c in registry.snapshot())

    admitted, ended, left = asyncio.run(scenario())
    assert admitted == [True, False]
    assert ended == ["old"]
    assert left == ["calling", "claude", "new", "stream"]
