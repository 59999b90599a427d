"""The stall probe of the growth table: a second RPC client asking Neovim `nvim_eval('1')` every
2 ms (the scale probe's method), in a process of its own. In the bench's own process it waited for
the bench's GIL too: parsing the 22 MB `ide/diffAccepted` a 1 M-line review sends showed as a
75-100 ms "stall" of Neovim's that Neovim never had.

`StallProbe(sock)` starts it; `worst(since, until)` is the slowest answer (ms) among the probes
that overlap that span (time.perf_counter, CLOCK_MONOTONIC: the same clock in both processes).
Run as `python -m bench.stall_probe SOCK`: probes until stdin closes; each line on stdin is
answered with the samples so far, as one JSON line of [start, seconds] pairs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.run import RawRpc
from tests.support.helpers import wait_for

ROOT = Path(__file__).resolve().parents[1]


class StallProbe:
    def __init__(self, sock: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.stall_probe", str(sock)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        wait_for(self.samples, 10, 0.01, what="the stall probe's first answer")

    def samples(self) -> list[tuple[float, float]]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        return [(s, d) for s, d in json.loads(self.proc.stdout.readline())]

    def worst(self, since: float, until: float | None = None) -> float:
        """The slowest answer (ms) overlapping [since, until] (until: now), once a probe that
        started after `until` has answered (so a stall at the very end is counted)."""
        end = time.perf_counter() if until is None else until
        got: list[list[tuple[float, float]]] = []

        def answered_after_end() -> bool:
            got[:] = [self.samples()]
            return any(s >= end for s, _ in got[0][-3:])

        wait_for(answered_after_end, 30, 0.005, what="probe")
        return max((d for s, d in got[0] if s + d >= since and s <= end), default=0.0) * 1000

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(10)


def main() -> None:
    rpc = RawRpc(Path(sys.argv[1]))
    samples: list[tuple[float, float]] = []
    done = threading.Event()

    def answer() -> None:
        for _ in sys.stdin:
            print(json.dumps(samples[:]), flush=True)
        done.set()

    threading.Thread(target=answer, daemon=True).start()
    while not done.is_set():
        t = time.perf_counter()
        rpc.request("nvim_eval", "1")
        samples.append((t, time.perf_counter() - t))
        time.sleep(0.002)
    rpc.close()


if __name__ == "__main__":
    main()
