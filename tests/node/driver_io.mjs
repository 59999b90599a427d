// What the two drivers share: stdout carries only their JSON lines, and stdin carries one JSON
// command per line.
import { format } from 'node:util';
import { createInterface } from 'node:readline';

/** Send all console output to stderr (or nowhere with DRIVER_QUIET): stdout is for JSON lines. */
export function quietConsole() {
  const quiet = !!process.env.DRIVER_QUIET;
  for (const k of ['log', 'info', 'debug', 'warn', 'error', 'trace']) {
    console[k] = (...a) => {
      if (!quiet) process.stderr.write(format(...a) + '\n');
    };
  }
}

export function out(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

const messageOf = (err) => ({ error: err instanceof Error ? err.message : String(err) });

/**
 * Answer each stdin command with `handle(cmd)` (a reply object, or null for none); a failure is
 * answered `{id, ok: false, ...errorFields(err)}`. `sequential` runs commands one after another
 * in input order, else they run side by side. `onEnd` runs at stdin EOF (after the queue).
 */
export function serveCommands(handle, { sequential = false, errorFields = messageOf, onEnd }) {
  let queue = Promise.resolve();
  const answer = (cmd) =>
    handle(cmd).then(
      (reply) => {
        if (reply) out(reply);
      },
      (err) => out({ id: cmd.id ?? null, ok: false, ...errorFields(err) }),
    );
  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
  rl.on('line', (line) => {
    if (!line.trim()) return;
    let cmd;
    try {
      cmd = JSON.parse(line);
      if (!cmd || typeof cmd !== 'object') throw new Error('command must be a JSON object');
    } catch (err) {
      out({ id: null, ok: false, error: `bad command line: ${err.message}` });
      return;
    }
    if (sequential) queue = queue.then(() => answer(cmd));
    else void answer(cmd);
  });
  rl.on('close', () => {
    queue = queue.then(() => onEnd());
  });
}
