#!/usr/bin/env node
/**
 * ide_client.mjs: test-only driver around Gemini CLI's own IDE client, the
 * `IdeClient` class of @google/gemini-cli-core 0.61.0
 * (dist/src/ide/ide-client.js). That package bundles its own
 * @modelcontextprotocol/sdk 1.23.0, so the wire behaviour is the real CLI's.
 *
 * Usage:  node ide_client.mjs          (no arguments)
 *   The client finds the server exactly as `gemini` does: through discovery
 *   files in os.tmpdir()/gemini/ide/ (so set TMPDIR) and the GEMINI_CLI_IDE_*
 *   env vars. process.cwd() must be inside the chosen file's workspacePath.
 *   The harness sets cwd, TMPDIR and env; this script only reads them.
 *
 * Protocol: JSON lines. One command object per line on stdin; one JSON object
 * per line on stdout. stdout carries nothing else: the library logs through
 * console.debug/console.error (its debugLogger), and every console.* call goes
 * to stderr. Set DRIVER_QUIET=1 to drop that stderr chatter. (If you pipe
 * stderr, drain it, or a full pipe can block the process.) Commands are
 * handled one at a time in input order, and each reply is printed before the
 * next command starts; events can come in between. Every reply has "id" and
 * "ok". Commands are read only after the start-up connect() has settled.
 *
 * Events (stdout, no "id"):
 *   {"event":"status","status":"connecting"|"connected"|"disconnected","details":"..."?,"ideInfo":{"name","displayName"}?}
 *       On every IdeClient status change (addStatusChangeListener). "details"
 *       is present only when the client gave one. IdeClient only reports a
 *       change into "disconnected" if it was not already disconnected.
 *   {"event":"connect_done","status":...,"details":...?,"ideInfo":...?,"diffingEnabled":bool}
 *       Printed exactly once, after the start-up connect() settles, with the
 *       state at that moment. Wait for this line. If no IDE is detected (no
 *       discovery file with ideInfo was found, and no TERM_PROGRAM=vscode etc.
 *       in the env), connect() changes nothing: no status event is printed,
 *       this line has no "ideInfo", and "details" is still the initial
 *       "IDE integration is currently disabled. To enable it, run /ide enable."
 *       (IdeClient drops the "not supported" text because it was already
 *       disconnected.) Other outcomes seen: "connected"; "disconnected" with
 *       "Directory mismatch. ..." (cwd outside workspacePath); "disconnected"
 *       with "Failed to connect to IDE companion extension in Neovim. ..."
 *       (server down, or a wrong token: a 401 gives no more detail).
 *   {"event":"context","context":<IdeContext object | null>}
 *       On every ideContextStore change: the stored (normalized) context after
 *       an ide/contextUpdate, or null when the store is cleared. IdeClient
 *       clears it on every transition to (or report of) disconnected, so
 *       "context":null can repeat, e.g. twice on disconnect.
 *   {"event":"trust","isTrusted":bool}
 *       When a contextUpdate carries workspaceState.isTrusted (addTrustChangeListener).
 *   {"event":"diff_result","id":N,"result":{"status":"accepted"|"rejected","content":"..."?}}
 *   {"event":"diff_error","id":N,"message":"..."}
 *       When the promise from an open_diff command with id N settles.
 *       "content" is absent when undefined (a rejected diff, or an accept
 *       from the CLI where closeDiff returned no content).
 *
 * Commands (stdin):
 *   {"id":1,"op":"status"}
 *       -> {"id":1,"ok":true,"result":{"status":...,"details":...?,"ideInfo":...?}}
 *          (getConnectionStatus() plus getCurrentIde())
 *   {"id":2,"op":"open_diff","path":"/abs/file","content":"new text"}
 *       Calls openDiff(path, content), which sends tools/call openDiff and
 *       waits for ide/diffAccepted / ide/diffRejected for that exact path.
 *       -> {"id":2,"ok":true,"started":true}  at once, then a diff_result or
 *          diff_error event with "id":2. openDiff calls are serialized by
 *          IdeClient's mutex: a second one is sent only after the first settles.
 *   {"id":3,"op":"resolve_from_cli","path":"/abs/file","outcome":"accepted"|"rejected"}
 *       Calls resolveDiffFromCli(path, outcome). It sends tools/call closeDiff
 *       {filePath, suppressNotification:true}, then resolves the pending
 *       open_diff promise itself (accepted: with the content parsed from the
 *       closeDiff result). It returns nothing.
 *       -> {"id":3,"ok":true,"result":null}; the open_diff's diff_result event
 *          is printed separately (the order of the two lines is not fixed).
 *   {"id":4,"op":"close_diff","path":"/abs/file","suppress":optional bool}
 *       Calls closeDiff(path, {suppressNotification}) directly. It returns the
 *       "content" string parsed from the tool's JSON text, or undefined.
 *       -> {"id":4,"ok":true,"result":"<content>"|null}
 *   {"id":5,"op":"diffing_enabled"}
 *       -> {"id":5,"ok":true,"result":true|false}  (isDiffingEnabled(): connected
 *          and tools/list had both openDiff and closeDiff)
 *   {"id":6,"op":"context"}
 *       -> {"id":6,"ok":true,"result":<ideContextStore.get() | null>}
 *   {"id":7,"op":"disconnect"}
 *       Calls disconnect(): it sends closeDiff for every pending diff, sets the
 *       status to disconnected and closes the MCP client. (If the client is
 *       already disconnected it does nothing.)
 *       -> {"id":7,"ok":true} and exit 0.
 *   Any failure -> {"id":N,"ok":false,"error":"<message>"}
 *   Malformed line or unknown op -> {"id":<id or null>,"ok":false,"error":"..."}
 * Stdin EOF: disconnect and exit 0.
 */
import { out, quietConsole, serveCommands } from './driver_io.mjs';

// docs/PROTOCOL.md §5: inside a container (/.dockerenv or /run/.containerenv exists)
// IdeClient dials host.docker.internal instead of 127.0.0.1, unless
// SSH_CONNECTION (or VSCODE_REMOTE_CONTAINERS_SESSION / REMOTE_CONTAINERS)
// is set. The test server listens on 127.0.0.1 on this machine, so force the
// loopback host. This must happen before the client connects; we set it
// before the client module is even imported.
process.env.SSH_CONNECTION ??= '1 1 1 1';

// stdout is reserved for our JSON lines. The library's debugLogger calls
// console.debug (which writes to stdout) and console.error.
quietConsole();

// Dynamic imports, so that the two settings above take effect before any
// library code runs. Both paths resolve to the same module files that
// ide-client.js imports, so ideContextStore is the instance the client fills.
const { IdeClient } = await import('@google/gemini-cli-core/dist/src/ide/ide-client.js');
const { ideContextStore } = await import('@google/gemini-cli-core/dist/src/ide/ideContext.js');

// JSON.stringify drops undefined fields; make the top-level value null instead.
const orNull = (v) => (v === undefined ? null : v);

function statusFields(ide, state = ide.getConnectionStatus()) {
  const o = { status: state.status };
  if (state.details !== undefined) o.details = state.details;
  const info = ide.getCurrentIde();
  if (info) o.ideInfo = { name: info.name, displayName: info.displayName };
  return o;
}

process.on('unhandledRejection', (err) => {
  console.error('[ide_client] unhandled rejection:', err);
});

// getInstance() is memoized. It walks the process tree (ps), reads the
// discovery files once and detects the IDE from the file's ideInfo.
const ide = await IdeClient.getInstance();

ide.addStatusChangeListener((state) => out({ event: 'status', ...statusFields(ide, state) }));
ide.addTrustChangeListener((isTrusted) => out({ event: 'trust', isTrusted }));
ideContextStore.subscribe((context) => out({ event: 'context', context: orNull(context) }));

let exiting = false;
async function shutdown(reply) {
  if (exiting) return;
  exiting = true;
  try {
    await ide.disconnect();
  } catch (err) {
    console.error('[ide_client] disconnect failed:', err);
  }
  if (reply) out(reply);
  // Undici keep-alive sockets can hold the event loop open: exit explicitly
  // once stdout is flushed.
  process.stdout.write('', () => process.exit(0));
}

async function handle(cmd) {
  const { id, op } = cmd;
  switch (op) {
    case 'status':
      return { id, ok: true, result: statusFields(ide) };
    case 'open_diff': {
      if (typeof cmd.path !== 'string' || typeof cmd.content !== 'string') {
        return { id, ok: false, error: 'open_diff needs string "path" and "content"' };
      }
      ide.openDiff(cmd.path, cmd.content).then(
        (result) => out({ event: 'diff_result', id, result }),
        (err) => out({ event: 'diff_error', id, message: err instanceof Error ? err.message : String(err) }),
      );
      return { id, ok: true, started: true };
    }
    case 'resolve_from_cli': {
      if (cmd.outcome !== 'accepted' && cmd.outcome !== 'rejected') {
        return { id, ok: false, error: 'outcome must be "accepted" or "rejected"' };
      }
      const result = await ide.resolveDiffFromCli(cmd.path, cmd.outcome);
      return { id, ok: true, result: orNull(result) };
    }
    case 'close_diff': {
      const opts = cmd.suppress === undefined ? undefined : { suppressNotification: !!cmd.suppress };
      const result = await ide.closeDiff(cmd.path, opts);
      return { id, ok: true, result: orNull(result) };
    }
    case 'diffing_enabled':
      return { id, ok: true, result: ide.isDiffingEnabled() };
    case 'context':
      return { id, ok: true, result: orNull(ideContextStore.get()) };
    case 'disconnect':
      await shutdown({ id, ok: true });
      return null;
    default:
      return { id: id ?? null, ok: false, error: `unknown op: ${op}` };
  }
}

// Commands are read only after the start-up connect() settles, so that a
// command never races the connection (stdin is buffered until then).
await ide.connect();
out({ event: 'connect_done', ...statusFields(ide), diffingEnabled: ide.isDiffingEnabled() });

// Commands run one after another, in input order (open_diff does not wait
// for the diff outcome, so it never blocks the queue).
serveCommands(handle, { sequential: true, onEnd: shutdown });
