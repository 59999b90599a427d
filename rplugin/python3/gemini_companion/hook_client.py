"""An agent's command hook (its review gate), run by the agent for each edit it is about to make:
`python -I hook_client.py <agent>`. It hands the hook's input to the Neovim that started the agent
and prints Neovim's answer.

Standard library only, and run isolated (-I: no user site, no PYTHON* variables, nothing imported
from the agent's working directory, nor from this file's folder). The address and token come from
the environment Neovim gives its children (GEMINI_CLI_IDE_SERVER_PORT, GEMINI_CLI_IDE_AUTH_TOKEN),
never from a file.

It fails closed. An agent started from a Neovim (both variables set) gets Neovim's review or a
`deny` with the reason: when the listener on that port is not this user's (it is then sent
nothing: neither the token nor the edit), when nothing listens (Neovim's server stopped, moved
after a restart, or Neovim quit), or when the answer is not a JSON object from a 2xx. Only an
agent not started from a Neovim gets no decision, and goes on as its mode says.
"""

import http.client
import importlib.util
import json
import os
import socket
import sys
from pathlib import Path
from types import ModuleType

CONNECT_TIMEOUT_S = 10.0  # reaching 127.0.0.1; the answer itself may wait as long as the user reviews
# What gemini's BeforeTool input (`tool_name`) and agy's PreToolUse input (`toolCall`) name a tool
# by. Any other event (gemini's AfterAgent, the end of its turn) is not an edit: it is never denied,
# since a deny there makes gemini retry its turn.
TOOL_KEYS = ("tool_name", "toolCall")
LOOK = "Ask the user to look at :GeminiStatus in Neovim."
GATE_HEADER = "X-Neovim-Review-Gate"  # on every answer of Neovim's hook routes (review_gate.py)


def _listener() -> ModuleType:
    """base/listener.py, below this file: the same check the OpenCode registration makes, loaded by
    its path (it is standard library only) because -I keeps this folder off sys.path, and the
    package's __init__ would pull in more than the standard library."""
    path = Path(__file__).resolve().parent / "base" / "listener.py"
    spec = importlib.util.spec_from_file_location("gemini_companion_hook_listener", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses looks its module up while building Check)
    spec.loader.exec_module(module)
    return module


class NoReview(Exception):
    """Why Neovim's review cannot be had for this edit, and what the model can do about it."""

    def __init__(self, why: str, then: str = "") -> None:
        super().__init__(f"{why}: this edit was not made." + (f" {then}" if then else ""))


def deny(reason: str, agent: str) -> str:
    """The agent's own deny: claude's PreToolUse output (agents/claude/gate.py's hook_output);
    gemini's BeforeTool and agy's PreToolUse both read the other (agents/*/gate.py answer alike)."""
    if agent == "claude":
        out = {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
        return json.dumps({"hookSpecificOutput": out})
    return json.dumps({"decision": "deny", "reason": reason})


class NotNeovim(Exception):
    """Another editor's companion answers at the address the agent was given: that editor started
    the agent, not a Neovim, so it goes on as its mode says."""


def main(argv: list[str]) -> int:
    agent = argv[1] if len(argv) > 1 else ""
    port, token = os.environ.get("GEMINI_CLI_IDE_SERVER_PORT"), os.environ.get("GEMINI_CLI_IDE_AUTH_TOKEN")
    body = sys.stdin.buffer.read()
    if not (port and token):
        sys.stderr.write("neovim review gate: not started from a Neovim that serves it: no review\n")
        return 0
    try:
        if not (agent.isalpha() and port.isdigit() and 0 < int(port) < 65536):
            raise NoReview(f"Neovim's review gate cannot use agent {agent!r} and port {port!r}")
        answer = ask_neovim(agent, int(port), token, body)
    except NotNeovim as exc:
        sys.stderr.write(f"neovim review gate: {exc}: no review\n")
        return 0
    except NoReview as exc:
        sys.stderr.write(f"neovim review gate: {exc}\n")
        if is_tool_call(body):
            sys.stdout.write(deny(str(exc), agent) + "\n")
        return 0
    sys.stdout.write(answer)
    return 0


def is_tool_call(body: bytes) -> bool:
    """Whether the hook's input is about a tool the agent is to run (or unreadable: then assume so)."""
    try:
        event = json.loads(body)
    except ValueError:
        return True
    return not isinstance(event, dict) or any(key in event for key in TOOL_KEYS)


def ask_neovim(agent: str, port: int, token: str, body: bytes) -> str:
    """Neovim's answer to the hook's input, sent only once the listener is proven this user's."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=CONNECT_TIMEOUT_S)
    try:
        try:
            connection.connect()
        except OSError as exc:
            raise where_neovim_went(agent, port, exc) from exc
        # Connected first, then checked: the socket we hold is the listener's now, so a listener
        # that changed owner in between would have to give way to this user's own Neovim.
        listener = _listener()
        found = listener.check("127.0.0.1", port)
        if found is None or found.listening is not listener.Listening.OURS:
            raise NoReview(
                f"Neovim's review is not reachable: 127.0.0.1:{port}, its address when {agent} started, is "
                + (
                    f"held by {found.detail}, not by this user's Neovim"
                    if found is not None and found.listening is listener.Listening.OTHER_USER
                    else f"held by a listener whose owner cannot be told ({found and found.detail})"
                )
                + ", so neither the edit nor the token was sent there",
                f"Ask the user to start {agent} again from Neovim (after :GeminiStart if it is stopped).",
            )
        assert connection.sock is not None
        connection.sock.settimeout(None)  # the user may take their time
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        try:
            connection.request("POST", f"/hooks/{agent}", body=body, headers=headers)
            response = connection.getresponse()
            answer = response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise gone_while_waiting(agent, port, exc) from exc
    finally:
        connection.close()
    if response.status == 404 and response.getheader(GATE_HEADER) is None:
        raise NotNeovim(f"127.0.0.1:{port} is another editor's companion server (it has no /hooks/{agent})")
    if not 200 <= response.status < 300:
        raise NoReview(
            f"Neovim's review answered HTTP {response.status} {response.reason}",
            f"Ask the user to start {agent} again from Neovim."
            if response.status == 401  # (a token of another start)
            else LOOK,
        )
    try:
        decision = json.loads(answer)
    except (ValueError, RecursionError):
        decision = None
    if not isinstance(decision, dict):
        raise NoReview("Neovim's review answered something that is not a JSON object", LOOK)
    return json.dumps(decision)


def gone_while_waiting(agent: str, port: int, exc: Exception) -> NoReview:
    """The connection dropped before Neovim answered: why, if the listener is gone too (it stopped,
    moved or quit while the user reviewed)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as refused:
        return where_neovim_went(agent, port, refused)
    return NoReview(f"Neovim's review did not answer ({exc})", LOOK)


def where_neovim_went(agent: str, port: int, exc: OSError) -> NoReview:
    """Why nothing answers on `port`: the server stopped, moved after a restart, or Neovim quit.
    Told from the names of gemini's discovery files (never read: they hold the token), which
    carry Neovim's pid and its server's port."""
    pid = os.environ.get("GEMINI_CLI_IDE_PID", "")
    again = f"Ask the user to start {agent} again from Neovim."
    if pid.isdigit():
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return NoReview(f"The Neovim that started {agent} (pid {pid}) has quit: nothing reviews edits")
        except OSError:
            pass  # alive, but not ours to signal
        prefix = f"gemini-ide-server-{pid}-"
        try:
            names = [e.name for e in os.scandir(_discovery_dir()) if e.name.startswith(prefix)]
        except OSError:
            names = []
        ports = {name[len(prefix) : -len(".json")] for name in names if name.endswith(".json")}
        moved = sorted(p for p in ports if p.isdigit() and int(p) != port)
        if moved:
            return NoReview(
                f"Neovim's review moved to a new address after a restart (127.0.0.1:{moved[0]}, "
                f"no longer 127.0.0.1:{port})",
                again,
            )
        if str(port) not in ports:
            return NoReview(
                "Neovim's review server is stopped",
                f"Ask the user to run :GeminiStart in Neovim, then to start {agent} again from there.",
            )
    return NoReview(f"Neovim's review is not reachable at 127.0.0.1:{port} ({exc.strerror or exc})", again)


def _discovery_dir() -> Path:
    """Where gemini looks for Neovim: `<node os.tmpdir()>/gemini/ide` (agents/gemini/discovery.py)."""
    tmp = next((os.environ[n] for n in ("TMPDIR", "TMP", "TEMP") if os.environ.get(n)), "/tmp")
    return Path(tmp.rstrip("/") or "/") / "gemini" / "ide"


if __name__ == "__main__":
    sys.exit(main(sys.argv))
