"""Drive the Node test clients (tests/node/*.mjs) over their JSON-lines stdin/stdout protocol."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

NODE_DIR = Path(__file__).resolve().parents[1] / "node"


class NodeDriver:
    def __init__(
        self,
        script: str,
        *args: str,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        log_dir: Path | None = None,
    ) -> None:
        self._stderr_path = (log_dir or Path("/tmp")) / f"{script}.{os.getpid()}.{time.monotonic_ns()}.stderr"
        self._stderr = self._stderr_path.open("wb")
        self.proc = subprocess.Popen(
            ["node", str(NODE_DIR / script), *args],
            cwd=cwd,
            env=env or os.environ.copy(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        self.events: list[dict[str, Any]] = []
        self._replies: dict[int, dict[str, Any]] = {}
        self._cond = threading.Condition()
        self._next_id = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                msg = json.loads(raw)
            except ValueError:
                msg = {"event": "garbage", "line": raw.decode("utf-8", "replace")}
            with self._cond:
                if "id" in msg and "ok" in msg:
                    self._replies[msg["id"]] = msg
                else:
                    self.events.append(msg)
                self._cond.notify_all()
        with self._cond:
            self.events.append({"event": "exited"})
            self._cond.notify_all()

    def send(self, op: str, timeout: float = 20.0, **fields: Any) -> dict[str, Any]:
        """Send a command; return its reply."""
        return self.wait_reply(self.send_nowait(op, **fields), timeout)

    def send_nowait(self, op: str, **fields: Any) -> int:
        with self._cond:
            self._next_id += 1
            cmd_id = self._next_id
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"id": cmd_id, "op": op, **fields}) + "\n").encode())
        self.proc.stdin.flush()
        return cmd_id

    def wait_reply(self, cmd_id: int, timeout: float = 20.0) -> dict[str, Any]:
        with self._cond:
            if not self._cond.wait_for(
                lambda: cmd_id in self._replies or self.proc.poll() is not None, timeout
            ):
                raise AssertionError(f"no reply to command {cmd_id}; stderr: {self.stderr()[-2000:]}")
            if cmd_id not in self._replies:
                raise AssertionError(f"driver exited; stderr: {self.stderr()[-2000:]}")
            return self._replies.pop(cmd_id)

    def wait_event(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 20.0, what: str = "event"
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for ev in self.events:
                    if predicate(ev):
                        return ev
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"timed out waiting for {what}; events: {self.events[-10:]}; "
                        f"stderr: {self.stderr()[-1500:]}"
                    )
                self._cond.wait(remaining)

    def clear_events(self) -> None:
        with self._cond:
            self.events.clear()

    def stderr(self) -> str:
        self._stderr.flush()
        return self._stderr_path.read_text(errors="replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(5)
            except (subprocess.TimeoutExpired, OSError):
                self.proc.kill()
                self.proc.wait(5)
        self._stderr.close()

    def __enter__(self) -> NodeDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def ide_client_env(nvim_env: dict[str, str], **extra: str) -> dict[str, str]:
    """The environment a `gemini` started from Neovim's :terminal would see."""
    env = {k: v for k, v in nvim_env.items() if not k.startswith("GEMINI_CLI_IDE_")}
    env.update({"DRIVER_QUIET": "1", **extra})
    return env
