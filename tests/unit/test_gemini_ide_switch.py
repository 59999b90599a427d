"""A gemini that switched IDE mode on while it ran (`/ide enable`) never passes its own Allow once/No
to Neovim (0.61): its session is flagged and the user told at its first review. The flag goes by
when the connecting gemini process started, against the settings file's last save
(agents/gemini/ide.py), not by how soon it connects: under load `/ide enable` takes seconds."""

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from gemini_companion.agents.gemini import ide as gemini_ide
from gemini_companion.agents.gemini.ide import CLIENT_NAME, SWITCHED_ON_MID_PROCESS, GeminiIde
from gemini_companion.agents.gemini.pairing import AcceptedEdits
from gemini_companion.config import CompanionConfig
from gemini_companion.core.reviews import ReviewRegistry
from gemini_companion.core.sessions import ClientRegistry, ConnectedClient, TcpConnection

linux_only = pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads Linux /proc")


def flagged(saved: float, connected: float, started: float | None) -> bool:
    return gemini_ide.switched_on_mid_process(
        saved=saved, connected=connected, process_started=lambda: started
    )


def test_a_process_started_before_the_save_switched_on_however_long_it_took_to_connect() -> None:
    assert flagged(saved=1000.0, connected=1000.5, started=900.0)
    assert flagged(saved=1000.0, connected=1030.0, started=900.0)  # a loaded machine


def test_a_process_started_after_the_save_did_not_however_soon_it_connects() -> None:
    assert not flagged(
        saved=1000.0, connected=1000.3, started=1000.1
    )  # :Gemini turned it on, then started it
    assert not flagged(saved=1000.0, connected=1000.3, started=1000.0)


def test_a_save_long_before_the_connection_flags_nothing() -> None:
    asked: list[bool] = []

    def started() -> float:
        asked.append(True)
        return 900.0

    # A gemini reconnecting after our server restarted, long after an unrelated save.
    assert not gemini_ide.switched_on_mid_process(saved=1000.0, connected=1061.0, process_started=started)
    assert not gemini_ide.switched_on_mid_process(saved=1000.0, connected=999.0, process_started=started)
    assert asked == []  # /proc is not walked for it


def test_an_unknown_process_falls_back_to_how_soon_it_connects() -> None:
    assert flagged(saved=1000.0, connected=1001.5, started=None)
    assert not flagged(saved=1000.0, connected=1003.0, started=None)


# -- GeminiIde with a real connection, its process found through /proc -------------------------------


class _Reviews:
    async def open(self, *_args: Any) -> None:
        return None


class _Quiet:
    async def notify(self, method: str, params: Any) -> None:
        return None


class Scene:
    def __init__(self, settings: Path) -> None:
        self.reports: list[str] = []
        self.clients = ClientRegistry()
        self.ide = GeminiIde(
            cast(ReviewRegistry, _Reviews()),
            self.clients,
            CompanionConfig(),
            AcceptedEdits(),
            settings_file=settings,
            report=lambda message, _level: self.reports.append(message),
        )

    def connects_and_reviews(self, tcp: TcpConnection | None) -> list[str]:
        """What the user is told at the session's first review."""
        self.clients.add(ConnectedClient("s1", CLIENT_NAME, "0.61.0", "2025-06-18", _Quiet(), tcp=tcp))
        asyncio.run(self.ide.open_diff({"filePath": "/w/a.py", "newContent": "x\n"}, "s1"))
        return self.reports


def save(settings: Path) -> None:
    settings.write_text('{"ide": {"enabled": true}}', encoding="utf-8")


@linux_only
def test_a_running_gemini_that_switched_on_is_told_even_when_it_connects_late(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = tmp_path / "settings.json"
    save(settings)  # after this test's process (the "gemini" below) started
    # It connects 10 s after the save (`/ide enable` on a loaded machine).
    late = settings.stat().st_mtime + 10
    monkeypatch.setattr(gemini_ide, "time", SimpleNamespace(time=lambda: late))
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        with socket.create_connection(listening.getsockname()):
            accepted, peer = listening.accept()
            with accepted:
                tcp = TcpConnection(peer=peer, server=listening.getsockname())
                assert Scene(settings).connects_and_reviews(tcp) == [SWITCHED_ON_MID_PROCESS]


@linux_only
def test_a_gemini_started_right_after_the_save_is_not_told(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        host, port = listening.getsockname()
        save(settings)  # :Gemini turns IDE mode on, then starts gemini, which connects at once
        connect = f"import socket, sys; s = socket.create_connection(({host!r}, {port})); sys.stdin.read()"
        gemini = subprocess.Popen([sys.executable, "-c", connect], stdin=subprocess.PIPE)
        try:
            accepted, peer = listening.accept()
            with accepted:
                assert time.time() - settings.stat().st_mtime < 2  # (inside the old window)
                tcp = TcpConnection(peer=peer, server=(host, port))
                assert Scene(settings).connects_and_reviews(tcp) == []
        finally:
            gemini.communicate(b"")


def test_without_its_connection_a_gemini_connecting_right_after_the_save_is_told(
    tmp_path: Path,
) -> None:
    settings = tmp_path / "settings.json"
    save(settings)
    assert Scene(settings).connects_and_reviews(None) == [SWITCHED_ON_MID_PROCESS]
    old = time.time() - 10
    os.utime(settings, (old, old))
    assert Scene(settings).connects_and_reviews(None) == []
