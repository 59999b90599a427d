"""Registering this server with OpenCode servers (`opencode serve`) as a remote MCP server.

OpenCode keeps registrations in memory, per project directory: we post ours again whenever
our port or token changes (restart) or Neovim's directory changes, and disconnect it when we
stop. A server that is still starting is retried with backoff; a failure is reported once.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp

log = logging.getLogger(__name__)

_BACKOFF_S = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


@dataclass
class Registration:
    url: str
    directory: str
    status: str = "pending"  # pending | connected | failed | disconnected
    error: str | None = None


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
        self._reported: set[str] = set()
        self.registrations: dict[str, Registration] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._http: aiohttp.ClientSession | None = None

    def _session(self) -> aiohttp.ClientSession:
        if self._http is None or self._http.closed:
            self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
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

    async def _register(self, url: str, directory: str, announce: bool) -> None:
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
        reg = self.registrations[url]
        last_error = ""
        for delay in (0.0, *_BACKOFF_S):
            await asyncio.sleep(delay)
            try:
                async with self._session().post(
                    f"{url}/mcp", params={"directory": directory}, json=body, headers=self._headers()
                ) as resp:
                    text = await resp.text()
                    if resp.status == 200:
                        status = _status_of(text, self.name)
                        reg.status, reg.error = (
                            ("connected", None)
                            if status == "connected"
                            else ("failed", f"OpenCode reports {status}")
                        )
                        log.info("registered with OpenCode at %s: %s", url, status)
                        self._changed()
                        if announce or reg.error:
                            self._report(
                                f"OpenCode at {url}: {reg.error or 'registered as ' + repr(self.name)}",
                                "warn" if reg.error else "info",
                            )
                        return
                    last_error = f"HTTP {resp.status}: {text[:200]}"
                    if resp.status in (401, 403):
                        last_error += " (set OPENCODE_SERVER_PASSWORD for Neovim)"
                        break
                    if resp.status < 500:
                        break
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                last_error = f"{type(exc).__name__}: {exc}"  # not up yet: retry
        reg.status, reg.error = "failed", last_error
        self._changed()
        log.warning("could not register with OpenCode at %s: %s", url, last_error)
        message = f"could not register with OpenCode at {url}: {last_error}"
        if message not in self._reported or announce:
            self._reported.add(message)
            self._report(message, "warn")

    def forget(self, url: str) -> None:
        url = url.rstrip("/")
        task = self._tasks.pop(url, None)
        if task is not None:
            task.cancel()
        self.registrations.pop(url, None)

    async def disconnect_all(self, timeout_s: float = 0.3) -> None:
        """Tell every OpenCode server we registered with that we are going away (bounded time)."""
        for task in self._tasks.values():
            task.cancel()
        urls = [u for u, r in self.registrations.items() if r.status == "connected"]
        if urls:
            await asyncio.wait([asyncio.ensure_future(self._disconnect(u)) for u in urls], timeout=timeout_s)
        if self._http is not None:
            await self._http.close()

    async def _disconnect(self, url: str) -> None:
        directory = self.registrations[url].directory  # OpenCode keeps them per directory
        try:
            async with self._session().post(
                f"{url}/mcp/{quote(self.name, safe='')}/disconnect",
                params={"directory": directory},
                headers=self._headers(),
            ) as resp:
                answer = await resp.read()
                log.info("disconnected from OpenCode at %s: HTTP %s %s", url, resp.status, answer[:200])
                self.registrations[url].status = "disconnected"
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            log.info("could not disconnect from OpenCode at %s: %s", url, exc)

    def describe(self) -> list[dict[str, Any]]:
        return [
            {"url": r.url, "status": r.status, **({"error": r.error} if r.error else {})}
            for r in self.registrations.values()
        ]


def _status_of(text: str, name: str) -> str:
    import json

    try:
        data = json.loads(text)
    except ValueError:
        return "unknown"
    entry = data.get(name) if isinstance(data, dict) else None
    status = entry.get("status") if isinstance(entry, dict) else None
    return str(status or "unknown")
