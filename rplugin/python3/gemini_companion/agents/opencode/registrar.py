"""Registering this server with OpenCode servers (`opencode serve`) as a remote MCP server.

OpenCode keeps registrations in memory, per project directory: we post ours again whenever
our port or token changes (restart) or Neovim's directory changes, and disconnect it when we
stop. Registering sends secrets (our bearer token; OPENCODE_SERVER_PASSWORD as Basic auth), so
on this machine they go only to a listening socket that belongs to us (`listener`). A server
that is still starting is retried for a moment. A target we could not register with is not
contacted again (not after a restart, not after :cd) until it is registered again: by the
user's command or opencode.nvim's server events. Every failure is said in one sentence.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import aiohttp

from ...base import listener

log = logging.getLogger(__name__)

# A server that is not listening yet may be starting: the user's answer comes within ~2 s.
_RETRY_S = (0.25, 0.5, 1.0)
# OpenCode answers a registration after it connected to us and listed our tools.
_TIMEOUT_S, _CONNECT_TIMEOUT_S = 10, 3


@dataclass
class Registration:
    url: str
    directory: str
    status: str = "pending"  # pending | connected | failed | disconnected, or what OpenCode reports
    error: str | None = None
    followed: bool = True  # re-sent after restarts and :cd; False once it failed
    # The registration request under way: OpenCode carries it out even if we stop waiting for it.
    posting: asyncio.Future[str] | None = None


class _Refused(Exception):
    """A registration that did not reach OpenCode; the message is one sentence for the user."""

    def __init__(self, message: str, *, retry: bool = False) -> None:
        super().__init__(message)
        self.retry = retry


class OpencodeRegistrar:
    def __init__(
        self,
        *,
        name: str,
        mcp_url: str,
        token: str,
        env: Mapping[str, str],
        report: Callable[[str, str], None],
        changed: Callable[[], None],
    ) -> None:
        self.name = name
        self._mcp_url = mcp_url
        self._token = token
        self._env = env
        self._report = report  # (message, level): tells the user, once per distinct problem
        self._changed = changed  # a registration's status changed (status display)
        # A target failed or went away: whoever re-registers targets after a restart drops it.
        self.on_unfollowed: Callable[[str], object] = lambda _url: None
        self._reported: set[str] = set()
        self.registrations: dict[str, Registration] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._http: aiohttp.ClientSession | None = None

    def _session(self) -> aiohttp.ClientSession:
        if self._http is None or self._http.closed:
            # Built here, not at import: aiohttp's client is imported only once it is used.
            timeout = aiohttp.ClientTimeout(total=_TIMEOUT_S, sock_connect=_CONNECT_TIMEOUT_S)
            self._http = aiohttp.ClientSession(timeout=timeout)
        return self._http

    def _headers(self) -> dict[str, str]:
        password = self._env.get("OPENCODE_SERVER_PASSWORD")
        if not password:
            return {}
        user = self._env.get("OPENCODE_SERVER_USERNAME") or "opencode"
        return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}

    def register(self, url: str, directory: str, announce: bool = False) -> None:
        """(Re)register with the OpenCode server at `url`, for `directory`, in the background."""
        url = url.rstrip("/")
        old = self._tasks.pop(url, None)
        if old is not None:
            old.cancel()
        self.registrations[url] = Registration(url, directory)
        self._tasks[url] = asyncio.get_running_loop().create_task(self._register(url, directory, announce))

    def change_directory(self, directory: str) -> None:
        """Neovim's directory changed: register again, for it, where we are followed."""
        for url, reg in list(self.registrations.items()):
            if reg.followed:
                self.register(url, directory)

    async def _register(self, url: str, directory: str, announce: bool) -> None:
        reg = self.registrations[url]
        problem = _Refused("")
        for delay in (0.0, *_RETRY_S):
            await asyncio.sleep(delay)
            reg.posting = asyncio.ensure_future(self._post_registration(url, directory))
            try:
                # Shielded: a cancelled registration's request runs on, for a farewell to wait on.
                status = await asyncio.shield(reg.posting)
            except _Refused as exc:
                problem = exc
                if exc.retry:
                    continue
                break
            reg.status, reg.error = status, None if status == "connected" else f"OpenCode says {status}"
            log.info("registered with OpenCode at %s: %s", url, status)
            self._changed()
            if announce or reg.error:
                self._report(
                    f"OpenCode at {url}: {reg.error or 'registered as ' + repr(self.name)}",
                    "warn" if reg.error else "info",
                )
            return
        reg.status, reg.error, reg.followed = "failed", str(problem), False
        self.on_unfollowed(url)
        self._changed()
        log.warning("could not register with OpenCode at %s: %s", url, problem)
        message = f"could not register with OpenCode: {problem}"
        if message not in self._reported or announce:
            self._reported.add(message)
            self._report(message, "warn")

    async def _post_registration(self, url: str, directory: str) -> str:
        """Send our registration; OpenCode's status for it, or _Refused."""
        body = {
            "name": self.name,
            "config": {
                "type": "remote",
                "url": self._mcp_url,
                "enabled": True,
                "headers": {"Authorization": f"Bearer {self._token}"},
                "oauth": False,  # OpenCode would otherwise probe for OAuth on a remote server
            },
        }
        await self._verify_listener(url)
        try:
            async with self._session().post(
                f"{url}/mcp", params={"directory": directory}, json=body, headers=self._headers()
            ) as resp:
                text = await resp.text()
        except aiohttp.ClientConnectorError as exc:
            if isinstance(exc.os_error, ConnectionRefusedError):
                raise _Refused(_not_listening(url), retry=True) from exc
            raise _Refused(f"{url} cannot be reached ({exc.os_error.strerror or exc.os_error})") from exc
        except (TimeoutError, asyncio.TimeoutError) as exc:  # distinct classes before Python 3.11
            raise _Refused(f"{url} did not answer within {_TIMEOUT_S} s") from exc
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            raise _Refused(f"{url} did not answer like an OpenCode server ({type(exc).__name__})") from exc
        if resp.status in (401, 403):
            raise _Refused(
                f"OpenCode at {url} wants a password: set OPENCODE_SERVER_PASSWORD "
                "(and OPENCODE_SERVER_USERNAME if not 'opencode') in Neovim's environment"
            )
        if resp.status >= 500:
            raise _Refused(f"OpenCode at {url} failed (HTTP {resp.status})", retry=True)
        if resp.status != 200:
            raise _Refused(f"{url} answered HTTP {resp.status}; is it an OpenCode server?")
        return _status_of(text, self.name)

    async def _verify_listener(self, url: str) -> None:
        """Raise _Refused unless whoever listens at `url` may have our secrets."""
        parts = urlsplit(url)
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            port = 0
        if parts.scheme not in ("http", "https") or not parts.hostname or not port:
            raise _Refused(f"{url!r} is not an OpenCode server's URL (like http://127.0.0.1:4096)")
        found = await asyncio.to_thread(listener.check, parts.hostname, port)
        if found is None or found.listening is listener.Listening.OURS:
            return  # another machine (the user's explicit choice), or our own process
        if found.listening is listener.Listening.NOBODY:
            raise _Refused(_not_listening(url), retry=True)
        if found.listening is listener.Listening.OTHER_USER:
            raise _Refused(
                f"the program listening at {url} belongs to {found.detail}, not to you, so it was sent "
                "nothing (neither our token nor an OpenCode password); stop it, or start "
                "`opencode serve --port <another port>` and run :GeminiOpencodeRegister with that URL"
            )
        raise _Refused(f"not sending our token to {url}: cannot tell who listens there ({found.detail})")

    def forget(self, url: str) -> None:
        url = url.rstrip("/")
        task = self._tasks.pop(url, None)
        if task is not None:
            task.cancel()
        if self.registrations.pop(url, None) is not None:
            self._changed()

    async def disconnect_all(self, farewell_s: float) -> None:
        """Tell every OpenCode server we registered with that we are going away, within
        `farewell_s`; 0 (a restart, which registers again) only stops our own work."""
        for task in self._tasks.values():
            task.cancel()
        # A registration still under way counts: OpenCode may hold it already (after a restart it
        # reconnects to the same address at once), and would go on listing a server that is gone.
        told = ("connected", "pending")
        urls = [u for u, r in self.registrations.items() if r.status in told] if farewell_s > 0 else []
        if urls:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + farewell_s
            # OpenCode answers a registration once it holds it: a disconnect sent before that answer
            # was overtaken by it (a :GeminiStop right after a restart left OpenCode listing us).
            posting = {p for u in urls if (p := self.registrations[u].posting) is not None and not p.done()}
            if posting:
                await asyncio.wait(posting, timeout=farewell_s)
            farewells = [asyncio.ensure_future(self._disconnect(u)) for u in urls]
            await asyncio.wait(farewells, timeout=max(0.0, deadline - loop.time()))
        if self._http is not None:
            await self._http.close()

    async def _disconnect(self, url: str) -> None:
        directory = self.registrations[url].directory  # OpenCode keeps them per directory
        try:
            await self._verify_listener(url)  # the password goes with it
            async with self._session().post(
                f"{url}/mcp/{quote(self.name, safe='')}/disconnect",
                params={"directory": directory},
                headers=self._headers(),
            ) as resp:
                answer = await resp.read()
                log.info("disconnected from OpenCode at %s: HTTP %s %s", url, resp.status, answer[:200])
                self.registrations[url].status = "disconnected"
        except _Refused as exc:
            log.info("did not disconnect from OpenCode at %s: %s", url, exc)
        except (aiohttp.ClientError, TimeoutError, asyncio.TimeoutError, OSError) as exc:
            log.info("could not disconnect from OpenCode at %s: %s", url, exc)

    def describe(self) -> list[dict[str, Any]]:
        return [
            {"url": r.url, "status": r.status, **({"error": r.error} if r.error else {})}
            for r in self.registrations.values()
        ]


def _not_listening(url: str) -> str:
    port = urlsplit(url).port
    start = f"`opencode serve --port {port}`" if port else "`opencode serve`"
    return (
        f"no OpenCode server is listening at {url}; start one ({start}) and run :GeminiOpencodeRegister again"
    )


def _status_of(text: str, name: str) -> str:
    try:
        data = json.loads(text)
    except ValueError:
        return "unknown"
    entry = data.get(name) if isinstance(data, dict) else None
    status = entry.get("status") if isinstance(entry, dict) else None
    return str(status or "unknown")
