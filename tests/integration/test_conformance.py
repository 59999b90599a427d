"""The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, pinned in
tests/conformance/package.json) against a real headless Neovim with the plugin.

tests/conformance/README.md explains the choices below at more length. In short:

* One `conformance server --suite all` run executes every server scenario of the pinned suite
  (~2 s). The scenarios in APPLICABLE must pass (check by check, see there); those in
  NOT_APPLICABLE are run too but only reported, because they assume features this server does
  not have (resources, prompts, completions, logging, non-text tool content, tools that send
  notifications or requests to the client). If one of them starts passing, the test says so, so
  that it gets moved to APPLICABLE; a scenario in neither table (a new suite version) fails.
* The suite's client cannot send extra headers, and the server requires
  `Authorization: Bearer <token>` on every request. The suite therefore talks to a forwarding
  proxy written here (aiohttp, 127.0.0.1, random port) that adds that header and changes nothing
  else, with one exact exception: a `Host` naming the proxy itself (`127.0.0.1:<proxy port>` or
  `localhost:<proxy port>`) is forwarded with the server's port instead, so "this loopback
  endpoint" keeps meaning the same thing. Any other `Host` (the DNS-rebinding scenario's
  `evil.example.com`) and every `Origin` reach the server's checks verbatim; status, headers and
  bodies (SSE streams unbuffered) come back unmodified. A run without the proxy shows the need:
  the server answers the suite with 401.
* The tools the suite prescribes for tools-call-simple-text, tools-call-error and
  json-schema-2020-12 are registered in Lua through the plugin's public `register()` API, the
  path every user tool takes. The built-in tools are what tools-list checks besides them.
* dns-rebinding-protection: its first check (Host *and* Origin `evil.example.com` -> 4xx) must
  pass; its second (Host `127.0.0.1:<port>` *and* Origin `http://127.0.0.1:<port>` -> 2xx) fails
  by design: like Gemini CLI's VS Code companion, the server refuses every request carrying an
  Origin header (403), which is exactly what is asserted. Because the server checks Origin
  first, that scenario never isolates the Host check; test_server.py covers Host on its own.
* server-sse-polling and server-sse-multiple-streams: the server answers POSTs with JSON, which
  the suite accepts ("SSE streams optional"); their SSE-priming checks then report INFO.
* Node 20: the suite's bundle imports `fs.globSync` (Node >= 22) for its `tier-check` command
  only; a loader hook supplies a stub for that one import (nothing is patched on disk).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.support.helpers import ROOT, Neovim, record_figure

pytestmark = pytest.mark.real_agent

CONFORMANCE_DIR = ROOT / "tests" / "conformance"
CLI = CONFORMANCE_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
SUITE_TIMEOUT_S = 45

# Scenario -> the checks that must be SUCCESS. Any other check of these scenarios may be SUCCESS
# or INFO, never WARNING or FAILURE, except the by-design failures in EXPECTED_FAILURES.
APPLICABLE: dict[str, set[str]] = {
    "server-initialize": {"server-initialize"},
    "ping": {"ping"},
    # every tool (built-in and Lua) has a name, a description and an inputSchema
    "tools-list": {"tools-list"},
    # Lua tool test_simple_text returns a string -> one text content item
    "tools-call-simple-text": {"tools-call-simple-text"},
    # Lua tool test_error_handling raises -> isError: true with the message as text
    "tools-call-error": {"tools-call-error"},
    # (pending in the suite, SEP-1613) $schema/$defs/additionalProperties of a Lua tool's full
    # JSON Schema survive Lua -> Python -> tools/list
    "json-schema-2020-12": {
        "json-schema-2020-12-tool-found",
        "json-schema-2020-12-$schema",
        "json-schema-2020-12-$defs",
        "json-schema-2020-12-additionalProperties",
    },
    # three concurrent tools/list POSTs on one session, sent with MCP-Protocol-Version 2025-03-26
    "server-sse-multiple-streams": {"server-accepts-multiple-post-streams"},
    # (pending in the suite, SEP-1699) a tools/call POST on the session with
    # MCP-Protocol-Version 2025-03-26 must be accepted (a non-2xx status is a FAILURE); the
    # answer is JSON, so the priming/retry/resume checks are "not applicable" (INFO).
    "server-sse-polling": set(),
    "dns-rebinding-protection": {"localhost-host-rebinding-rejected"},
}

# (scenario, check) -> the HTTP status with which the check fails by design.
EXPECTED_FAILURES: dict[tuple[str, str], int] = {
    # Host 127.0.0.1:<port> + Origin http://127.0.0.1:<port>: any Origin is refused (403)
    ("dns-rebinding-protection", "localhost-host-valid-accepted"): 403,
}

# Run, reported, not asserted: they need features the server does not offer.
NOT_APPLICABLE: dict[str, str] = {
    "logging-set-level": "no logging capability (logging/setLevel: method not found)",
    "completion-complete": "no prompts or resource templates, so no completion/complete",
    "tools-call-image": "needs tool test_image_content with image content; Lua tools return text/JSON",
    "tools-call-audio": "needs tool test_audio_content with audio content; Lua tools return text/JSON",
    "tools-call-embedded-resource": "needs a tool returning an embedded resource; Lua tools return text/JSON",
    "tools-call-mixed-content": "needs a tool returning text+image+resource; Lua tools return text/JSON",
    "tools-call-with-logging": "needs logging/setLevel and a tool that sends notifications/message",
    "tools-call-with-progress": "needs a tool that sends notifications/progress (Lua tools cannot)",
    "tools-call-sampling": "needs a tool that sends sampling/createMessage to the client",
    "tools-call-elicitation": "needs a tool that sends elicitation/create to the client",
    "elicitation-sep1034-defaults": "needs a tool that sends elicitation/create to the client",
    "elicitation-sep1330-enums": "needs a tool that sends elicitation/create to the client",
    "resources-list": "no resources",
    "resources-read-text": "no resources",
    "resources-read-binary": "no resources",
    "resources-templates-read": "no resources",
    "resources-subscribe": "no resources",
    "resources-unsubscribe": "no resources",
    "prompts-list": "no prompts",
    "prompts-get-simple": "no prompts",
    "prompts-get-with-args": "no prompts",
    "prompts-get-embedded-resource": "no prompts",
    "prompts-get-with-image": "no prompts",
}

# The tools the suite prescribes for the applicable tools-call-* / json-schema scenarios.
CONFORMANCE_TOOLS = r"""
local mcp = require('gemini_companion')
mcp.register({
  name = 'test_simple_text',
  description = 'MCP conformance: returns simple text',
  execute = function() return 'This is a simple text response for testing.' end,
})
mcp.register({
  name = 'test_error_handling',
  description = 'MCP conformance: always fails',
  execute = function() error('This tool intentionally returns an error for testing', 0) end,
})
mcp.register({
  name = 'json_schema_2020_12_tool',
  description = 'Tool with JSON Schema 2020-12 features',
  schema = {
    ['$schema'] = 'https://json-schema.org/draft/2020-12/schema',
    type = 'object',
    ['$defs'] = {
      address = {
        type = 'object',
        properties = { street = { type = 'string' }, city = { type = 'string' } },
      },
    },
    properties = { name = { type = 'string' }, address = { ['$ref'] = '#/$defs/address' } },
    additionalProperties = false,
  },
  execute = function(args) return args end,
})
"""


# -- the suite ------------------------------------------------------------------------------


# The bundle imports `globSync` from `fs` (Node >= 22) for its `tier-check` command alone; on
# Node 20 that import stops the whole CLI from loading. A resolve hook hands the bundle's `fs`
# import a module that is `node:fs` plus a `globSync` that throws. Not installed on Node >= 22.
_FS_SHIM = (
    "import fs from 'node:fs';export * from 'node:fs';export default fs;"
    "export function globSync(){throw new Error('fs.globSync needs Node >= 22')}"
)
_HOOKS = (
    "const SHIM=" + json.dumps("data:text/javascript," + urllib.parse.quote(_FS_SHIM)) + ";"
    "export async function resolve(spec,ctx,next){"
    "if((spec==='fs'||spec==='node:fs')&&(ctx.parentURL||'').includes('/@modelcontextprotocol/conformance/'))"
    "return {url:SHIM,shortCircuit:true};return next(spec,ctx)}"
)
_REGISTER_HOOKS = (
    "import{register}from'node:module';register("
    + json.dumps("data:text/javascript," + urllib.parse.quote(_HOOKS))
    + ");"
)


def _node_args() -> list[str]:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is required for the MCP conformance suite")
    probe = [node, "-e", "process.exit(typeof require('fs').globSync === 'function' ? 0 : 1)"]
    if subprocess.run(probe, check=False, timeout=30).returncode == 0:
        return [node, str(CLI)]
    return [node, "--import", "data:text/javascript," + urllib.parse.quote(_REGISTER_HOOKS), str(CLI)]


@dataclass
class SuiteRun:
    out_dir: Path
    returncode: int | None  # None: killed at the timeout
    output: str
    seconds: float
    checks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # scenario -> its checks

    def read_results(self) -> SuiteRun:
        """The checks.json the CLI writes per scenario, in `<out>/server-<scenario>-<time>/`."""
        for path in sorted(self.out_dir.glob("*/checks.json")) if self.out_dir.exists() else []:
            match = _RESULT_DIR.match(path.parent.name)
            if match:
                self.checks[match["scenario"]] = json.loads(path.read_text(encoding="utf-8"))
        return self


_RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


async def run_suite(node_args: list[str], url: str, out_dir: Path, *selection: str) -> SuiteRun:
    """`conformance server --url URL --suite all` (or the given selection), with a timeout."""
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *node_args,
        "server",
        "--url",
        url,
        *(selection or ("--suite", "all")),
        "--output-dir",
        str(out_dir),
        cwd=CONFORMANCE_DIR,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "NO_COLOR": "1"},
    )
    returncode: int | None
    try:
        stdout, _ = await asyncio.wait_for(proc.communicate(), SUITE_TIMEOUT_S)
        returncode = proc.returncode
    except asyncio.TimeoutError:
        proc.kill()
        stdout, _ = await proc.communicate()
        stdout += f"\n[killed after {SUITE_TIMEOUT_S} s]".encode()
        returncode = None
    return SuiteRun(out_dir, returncode, stdout.decode(errors="replace"), time.monotonic() - started)


# -- the proxy that adds the bearer token ---------------------------------------------------

# Hop-by-hop headers (RFC 9110 7.6.1) describe one connection, not the message; Content-Length
# is recomputed by each side.
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
}


@contextlib.asynccontextmanager
async def auth_proxy(server_port: int, token: str) -> AsyncIterator[str]:
    """A forwarder on 127.0.0.1:<random> to the server that adds `Authorization: Bearer <token>`
    and otherwise passes requests and responses through (see the module docstring)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    proxy_port = sock.getsockname()[1]
    own_hosts = {f"127.0.0.1:{proxy_port}", f"localhost:{proxy_port}"}

    def upstream_host(host: str) -> str:
        if host.lower() in own_hosts:
            return f"{host.rsplit(':', 1)[0]}:{server_port}"
        return host

    # trust_env=False (the default): no HTTP(S)_PROXY; no decompression: bytes pass as they are
    session = aiohttp.ClientSession(auto_decompress=False, timeout=aiohttp.ClientTimeout(total=None))

    async def forward(request: web.Request) -> web.StreamResponse:
        skip = _HOP_BY_HOP | {"host", "authorization"}
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in skip]
        if "Host" in request.headers:
            headers.append(("Host", upstream_host(request.headers["Host"])))
        headers.append(("Authorization", f"Bearer {token}"))
        body = await request.read()
        async with session.request(
            request.method,
            f"http://127.0.0.1:{server_port}{request.raw_path}",
            headers=headers,
            data=body or None,
            skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
            allow_redirects=False,
        ) as upstream:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for k, v in upstream.headers.items():
                if k.lower() not in _HOP_BY_HOP:
                    response.headers.add(k, v)
            await response.prepare(request)
            with contextlib.suppress(ConnectionResetError, aiohttp.ClientConnectionError):
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
                await response.write_eof()
            return response

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_route("*", "/{tail:.*}", forward)
    # handler_cancellation: when the suite drops a connection (it cancels SSE readers), the
    # handler is cancelled and the upstream connection closes too, as if the suite were direct.
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=1)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    try:
        yield f"http://127.0.0.1:{proxy_port}/mcp"
    finally:
        await runner.cleanup()
        await session.close()


# -- the test ---------------------------------------------------------------------------------


def _problems(run: SuiteRun) -> list[str]:
    problems: list[str] = []
    if run.returncode is None:
        problems.append(f"the suite was killed after {SUITE_TIMEOUT_S} s")
    known = set(APPLICABLE) | set(NOT_APPLICABLE)
    for scenario in sorted(set(run.checks) - known):
        problems.append(f"{scenario}: new scenario: add it to APPLICABLE or NOT_APPLICABLE (with the reason)")
    for scenario in sorted(known - set(run.checks)):
        problems.append(f"{scenario}: no result (not in this suite version, or the run stopped early)")
    for scenario, required in APPLICABLE.items():
        checks = run.checks.get(scenario)
        if checks is None:
            continue
        by_id = {c["id"]: c for c in checks}
        for check_id in sorted(required):
            status = by_id.get(check_id, {}).get("status", "missing")
            if status != "SUCCESS":
                problems.append(f"{scenario}/{check_id}: {status}, expected SUCCESS")
        for check in checks:
            expected_status = EXPECTED_FAILURES.get((scenario, check["id"]))
            if expected_status is not None:
                got = (check.get("details") or {}).get("statusCode")
                if check["status"] != "FAILURE" or got != expected_status:
                    problems.append(
                        f"{scenario}/{check['id']}: {check['status']} (HTTP {got}); expected the by-design "
                        f"FAILURE with HTTP {expected_status}: update EXPECTED_FAILURES and the README"
                    )
            elif check["status"] in ("FAILURE", "WARNING") and check["id"] not in required:
                problems.append(f"{scenario}/{check['id']}: {check['status']}: {check.get('errorMessage')}")
    for scenario in NOT_APPLICABLE:
        statuses = {c["status"] for c in run.checks.get(scenario, [])}
        if "SUCCESS" in statuses and not statuses & {"FAILURE", "WARNING"}:
            problems.append(f"{scenario}: passes now: move it from NOT_APPLICABLE to APPLICABLE")
    return problems


def _report(run: SuiteRun) -> str:
    lines = [f"suite: exit {run.returncode}, {run.seconds:.1f} s"]
    for scenario, checks in sorted(run.checks.items()):
        kind = (
            "asserted"
            if scenario in APPLICABLE
            else "not applicable"
            if scenario in NOT_APPLICABLE
            else "new"
        )
        shown = [
            f"{c['id']}={c['status']}" + (f" ({c['errorMessage']})" if c.get("errorMessage") else "")
            for c in checks
            if c["status"] != "INFO"
        ]
        lines.append(f"  [{kind}] {scenario}: {'; '.join(shown) or 'INFO only'}")
    return "\n".join(lines)


def test_official_mcp_conformance_suite(make_nvim: Any, tmp_path: Path) -> None:
    assert CLI.exists(), "run `make test` (dev/bootstrap.sh installs tests/conformance)"
    node_args = _node_args()
    nvim: Neovim = make_nvim(init_lua=CONFORMANCE_TOOLS)
    disc = nvim.wait_discovery()
    nvim.wait_state("running")

    async def run_both() -> tuple[SuiteRun, SuiteRun]:
        async with auth_proxy(disc.port, disc.token) as proxied:
            return await asyncio.gather(
                run_suite(node_args, proxied, tmp_path / "results"),
                # Straight to the server, without the token: why the proxy is needed.
                run_suite(node_args, disc.url, tmp_path / "direct", "--scenario", "server-initialize"),
            )

    run, direct = (r.read_results() for r in asyncio.run(run_both()))
    report = _report(run)
    print(report)

    # (the SDK reports the 401 by its body: 'Error POSTing to endpoint: {"error": "missing or ...')
    direct_init = next(iter(direct.checks.get("server-initialize", [])), {})
    assert direct_init.get("id") == "server-initialize" and direct_init.get("status") == "FAILURE", (
        f"without the bearer token the server must refuse the suite: {direct_init or direct.output[-2000:]}"
    )

    problems = _problems(run)
    failed = {p.split("/", 1)[0].split(":", 1)[0] for p in problems}
    record_figure(
        "conformance",
        scenarios_total=len(run.checks),
        applicable_run=len([s for s in APPLICABLE if s in run.checks]),
        applicable_passed=len([s for s in APPLICABLE if s in run.checks and s not in failed]),
        not_applicable=len(NOT_APPLICABLE),
        seconds=round(run.seconds, 1),
    )
    if problems:
        pytest.fail(
            "MCP conformance: "
            + "\n  ".join(["", *problems])
            + f"\n\nper-scenario results:\n{report}\n\nsuite output (tail):\n{run.output[-6000:]}",
            pytrace=False,
        )


async def test_the_proxy_adds_the_token_and_changes_nothing_else() -> None:
    """What the conformance results are worth rests on the proxy: check it against a recorder."""
    seen: list[tuple[str, str, list[tuple[str, str]], bytes]] = []
    first_chunk_read = asyncio.Event()

    async def record(request: web.Request) -> web.StreamResponse:
        seen.append((request.method, request.raw_path, list(request.headers.items()), await request.read()))
        if request.method == "GET":  # an SSE stream must reach the client event by event
            stream = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Mcp-Session-Id": "s1"})
            await stream.prepare(request)
            await stream.write(b"id: 1\ndata: first\n\n")
            await asyncio.wait_for(first_chunk_read.wait(), 5)
            await stream.write(b"data: second\n\n")
            return stream
        return web.json_response({"ok": True}, status=403, headers={"X-Echo": "1"})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", record)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    upstream = web.TCPSite(runner, "127.0.0.1", 0)
    await upstream.start()
    upstream_port = runner.addresses[0][1]

    async def raw(port: int, head: str, body: bytes = b"") -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        await writer.drain()
        data = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        writer.close()
        return data

    try:
        async with auth_proxy(upstream_port, "tok") as url:
            port = int(url.split(":")[2].split("/")[0])
            body = b'{"jsonrpc":"2.0","id":1,"method":"initialize"}'
            sent = [
                ("Host", "evil.example.com"),
                ("Origin", "http://evil.example.com"),
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Mcp-Session-Id", "abc"),
                ("MCP-Protocol-Version", "2025-03-26"),
            ]
            head = (
                "POST /mcp?q=1 HTTP/1.1\n"
                + "".join(f"{k}: {v}\n" for k, v in sent)
                + f"Content-Length: {len(body)}\nConnection: close\n"
            )
            reply = await raw(port, head, body)
            assert reply.startswith(b"HTTP/1.1 403 ") and b"X-Echo: 1" in reply
            method, path, headers, got_body = seen[-1]
            assert (method, path, got_body) == ("POST", "/mcp?q=1", body)
            assert [h for h in headers if h[0].lower() not in ("content-length", "authorization")] == sent
            assert ("Authorization", "Bearer tok") in headers

            for host, expected in [
                (f"127.0.0.1:{port}", f"127.0.0.1:{upstream_port}"),
                (f"localhost:{port}", f"localhost:{upstream_port}"),
                (f"LOCALHOST:{port}", f"LOCALHOST:{upstream_port}"),
                (f"127.0.0.1:{port + 1}", f"127.0.0.1:{port + 1}"),
                (f"127.0.0.1.evil.example:{port}", f"127.0.0.1.evil.example:{port}"),
                ("127.0.0.1", "127.0.0.1"),
            ]:
                await raw(port, f"DELETE /mcp HTTP/1.1\nHost: {host}\nConnection: close\n")
                assert dict(seen[-1][2])["Host"] == expected, host

            async with (
                aiohttp.ClientSession() as client,
                client.get(url, headers={"Accept": "text/event-stream"}) as stream,
            ):
                assert stream.status == 200 and stream.headers["Mcp-Session-Id"] == "s1"
                first = await asyncio.wait_for(stream.content.readuntil(b"\n\n"), 5)
                assert first == b"id: 1\ndata: first\n\n"
                first_chunk_read.set()
                assert await asyncio.wait_for(stream.content.readuntil(b"\n\n"), 5) == b"data: second\n\n"
    finally:
        await runner.cleanup()
