#!/usr/bin/env node
/**
 * ts_client.mjs: test-only driver around the official MCP TypeScript SDK
 * (@modelcontextprotocol/sdk, pinned in package.json): `Client` plus
 * `StreamableHTTPClientTransport`.
 *
 * Usage:  node ts_client.mjs <url> [<bearer-token>]
 *   <url>           e.g. http://127.0.0.1:45841/mcp
 *   <bearer-token>  sent as "Authorization: Bearer <token>" on every request.
 *                   If it is omitted or "", no Authorization header is sent.
 *
 * Protocol: JSON lines. One command object per line on stdin; one JSON object
 * per line on stdout. stdout carries nothing else: every console.* call (ours
 * or a library's) goes to stderr. Set DRIVER_QUIET=1 to drop that stderr
 * chatter. Commands run concurrently, so replies can come out of order; match
 * them by "id". Every reply has "id" and "ok".
 *
 * Commands (stdin):
 *   {"id":1,"op":"list","cursor":optional}
 *       -> {"id":1,"ok":true,"result":<ListToolsResult>}
 *   {"id":2,"op":"call","name":"x","args":{...},"timeout_ms":optional}
 *       -> {"id":2,"ok":true,"result":<CallToolResult>}
 *          (a tool that reports isError:true still gives ok:true)
 *   {"id":3,"op":"call_cancel","name":"x","args":{...},"after_ms":100,"reason":optional}
 *       Starts the call with an AbortSignal and aborts it after after_ms. The
 *       SDK then sends notifications/cancelled {requestId, reason} and rejects.
 *       -> {"id":3,"ok":false,"cancelled":true,"error":"...","code":-32001}
 *          or, if the result arrived before the abort:
 *          {"id":3,"ok":true,"cancelled":false,"result":<CallToolResult>}
 *   {"id":4,"op":"request","method":"ping","params":{...},"timeout_ms":optional}
 *       Any raw request. The result is passed through unvalidated.
 *       -> {"id":4,"ok":true,"result":{...}}
 *   {"id":5,"op":"notify","method":"notifications/x","params":{...}}
 *       Sends a client notification. -> {"id":5,"ok":true}
 *   {"id":6,"op":"info"}
 *       -> {"id":6,"ok":true,"result":{"sessionId","protocolVersion","serverInfo","capabilities"}}
 *   {"id":7,"op":"close","terminate":optional bool}
 *       With terminate:true, first sends HTTP DELETE (terminateSession). Then it
 *       closes the transport, replies {"id":7,"ok":true}, and exits 0.
 *   Any failure:
 *       -> {"id":N,"ok":false,"error":"<message>","code":<JSON-RPC or HTTP code, if any>,"data":<if any>}
 *   Malformed line or unknown op -> {"id":<id or null>,"ok":false,"error":"..."}
 *
 * Events (stdout, no "id"):
 *   {"event":"connected","serverInfo":{...},"protocolVersion":"2025-11-25","capabilities":{...},"sessionId":"..."}
 *       Printed once, after initialize + notifications/initialized. Any
 *       notification that arrives earlier is held back until this line is out.
 *   {"event":"notification","method":"...","params":{...}}
 *       Every server notification: notifications/tools/list_changed,
 *       ide/contextUpdate, ide/diffAccepted, ide/diffRejected (dedicated zod
 *       handlers), and any other method (client.fallbackNotificationHandler).
 *   {"event":"request","method":"...","params":{...}}
 *       A server->client request with no SDK handler. It is still answered
 *       with JSON-RPC -32601 Method not found, as the SDK does by default.
 *       (The SDK answers "ping" itself; that one is not printed.)
 *   {"event":"error","message":"...","code":<if any>}
 *       Transport or protocol error (client.onerror). If connecting fails it
 *       is printed with "phase":"connect" (the only stdout line in that case;
 *       the exit code is 1, and an HTTP status like 401 is in "code"). Errors
 *       caused by our own close (aborted fetches) are not printed. Note: a
 *       server that answers a request the client already cancelled or timed
 *       out produces "Received a response for an unknown message ID: ..."
 *       here (the Python mcp 2.3 server does this, with error -32800).
 *   {"event":"closed"}
 *       The client/transport closed.
 * Stdin EOF: closes the transport and exits 0.
 */
import { out, quietConsole, serveCommands } from './driver_io.mjs';

quietConsole(); // stdout is reserved for our JSON lines

const { z } = await import('zod');
const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = await import(
  '@modelcontextprotocol/sdk/client/streamableHttp.js'
);
const { McpError, ErrorCode } = await import('@modelcontextprotocol/sdk/types.js');

function errFields(err) {
  const o = { error: err instanceof Error ? err.message : String(err) };
  if (err && typeof err === 'object') {
    if (typeof err.code === 'number') o.code = err.code;
    if (err.data !== undefined) o.data = err.data;
  }
  return o;
}

const [url, token] = process.argv.slice(2);
if (!url) {
  process.stderr.write('usage: node ts_client.mjs <url> [<bearer-token>]\n');
  process.exit(2);
}

const client = new Client({ name: 'nvim-gemini-test-ts-client', version: '0.0.0' });
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: token ? { Authorization: `Bearer ${token}` } : {} },
});

// Hold notifications back until the "connected" line is printed.
let connected = false;
const pending = [];
function emitEvent(obj) {
  if (connected) out(obj);
  else pending.push(obj);
}
function onNotification(n) {
  const ev = { event: 'notification', method: n.method };
  if (n.params !== undefined) ev.params = n.params;
  emitEvent(ev);
}

for (const method of [
  'notifications/tools/list_changed',
  'ide/contextUpdate',
  'ide/diffAccepted',
  'ide/diffRejected',
]) {
  client.setNotificationHandler(
    z.object({ method: z.literal(method), params: z.any().optional() }).passthrough(),
    onNotification,
  );
}
// Protocol.fallbackNotificationHandler (SDK 1.32.2): called for any method
// without a dedicated handler.
client.fallbackNotificationHandler = async (n) => onNotification(n);
client.fallbackRequestHandler = async (req) => {
  const ev = { event: 'request', method: req.method };
  if (req.params !== undefined) ev.params = req.params;
  emitEvent(ev);
  throw new McpError(ErrorCode.MethodNotFound, 'Method not found');
};

let closing = false;
client.onerror = (err) => {
  if (closing) {
    // Our own close() aborts the in-flight fetches (the GET stream); that is
    // expected noise, so it goes to stderr only.
    console.error(`[ts_client] error while closing: ${err?.message ?? err}`);
    return;
  }
  emitEvent({ event: 'error', message: err instanceof Error ? err.message : String(err),
              ...(typeof err?.code === 'number' ? { code: err.code } : {}) });
};
client.onclose = () => {
  emitEvent({ event: 'closed' });
};

try {
  await client.connect(transport);
} catch (err) {
  // Whatever onerror/onclose reported during the failed connect is only logged.
  for (const ev of pending.splice(0)) console.error(`[ts_client] during connect: ${JSON.stringify(ev)}`);
  out({ event: 'error', phase: 'connect', message: errFields(err).error,
        ...(typeof err?.code === 'number' ? { code: err.code } : {}) });
  process.exitCode = 1;
  // Flush stdout, then exit even if sockets linger.
  process.stdout.write('', () => process.exit(1));
  await new Promise(() => {});
}

out({
  event: 'connected',
  serverInfo: client.getServerVersion(),
  protocolVersion: transport.protocolVersion,
  capabilities: client.getServerCapabilities(),
  sessionId: transport.sessionId,
});
connected = true;
for (const ev of pending.splice(0)) out(ev);

async function shutdown(code, reply) {
  if (closing) return;
  closing = true;
  try {
    await client.close();
  } catch (err) {
    process.stderr.write(`close failed: ${err}\n`);
  }
  if (reply) out(reply);
  process.stdout.write('', () => process.exit(code));
}

async function handle(cmd) {
  const { id, op } = cmd;
  switch (op) {
    case 'list': {
      const result = await client.listTools(cmd.cursor ? { cursor: cmd.cursor } : undefined);
      return { id, ok: true, result };
    }
    case 'call': {
      const opts = cmd.timeout_ms ? { timeout: cmd.timeout_ms } : undefined;
      const result = await client.callTool({ name: cmd.name, arguments: cmd.args ?? {} }, undefined, opts);
      return { id, ok: true, result };
    }
    case 'call_cancel': {
      const ac = new AbortController();
      const reason = cmd.reason ?? `cancelled by ts_client after ${cmd.after_ms ?? 0} ms`;
      const timer = setTimeout(() => ac.abort(reason), cmd.after_ms ?? 0);
      const opts = { signal: ac.signal };
      if (cmd.timeout_ms) opts.timeout = cmd.timeout_ms;
      try {
        const result = await client.callTool({ name: cmd.name, arguments: cmd.args ?? {} }, undefined, opts);
        clearTimeout(timer);
        return { id, ok: true, cancelled: false, result };
      } catch (err) {
        clearTimeout(timer);
        return { id, ok: false, cancelled: ac.signal.aborted, ...errFields(err) };
      }
    }
    case 'request': {
      const opts = cmd.timeout_ms ? { timeout: cmd.timeout_ms } : undefined;
      const req = { method: cmd.method };
      if (cmd.params !== undefined) req.params = cmd.params;
      const result = await client.request(req, z.any(), opts);
      return { id, ok: true, result };
    }
    case 'notify': {
      const n = { method: cmd.method };
      if (cmd.params !== undefined) n.params = cmd.params;
      // transport.send bypasses the SDK's client-capability check on notifications.
      await transport.send({ jsonrpc: '2.0', ...n });
      return { id, ok: true };
    }
    case 'info':
      return {
        id,
        ok: true,
        result: {
          sessionId: transport.sessionId,
          protocolVersion: transport.protocolVersion,
          serverInfo: client.getServerVersion(),
          capabilities: client.getServerCapabilities(),
        },
      };
    case 'close': {
      if (cmd.terminate) {
        try {
          await transport.terminateSession();
        } catch (err) {
          await shutdown(0, { id, ok: false, ...errFields(err) });
          return null;
        }
      }
      await shutdown(0, { id, ok: true });
      return null;
    }
    default:
      return { id: id ?? null, ok: false, error: `unknown op: ${op}` };
  }
}

serveCommands(handle, { errorFields: errFields, onEnd: () => shutdown(0) });
