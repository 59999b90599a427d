#!/usr/bin/env python3
"""`make stress`: the long versions of the reliability tests, summarised in bench/reliability.md.

Runs fuzzing at >= 10 000 generated HTTP/JSON-RPC inputs (and ~8 000 tool calls), the full load
(50 clients x 200 calls), every fault and security test and the MCP conformance suite, then writes
what was tried and what held.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TESTS = [
    "tests/protocol/test_hostile_http.py",
    "tests/integration/test_fuzz_tools.py",
    "tests/integration/test_load.py",
    "tests/integration/test_faults.py",
    "tests/protocol/test_vanishing_clients.py",
    "tests/integration/test_security.py",
    "tests/protocol/test_who_gets_in.py",
    "tests/integration/test_security_send.py",
    "tests/integration/test_security_install.py",
    "tests/integration/test_security_paths.py",
    "tests/integration/test_security_changes.py",
    "tests/integration/test_security_port.py",
    "tests/integration/test_security_host.py",
    "tests/integration/test_conformance.py",
    "tests/integration/test_review.py",
    # Issue 38's hostile cases: a gate that fails closed with the real agents, a repository that
    # switches hooks off, git that runs nothing of the repository's, a hook client that proves
    # its listener.
    "tests/integration/test_gate_fails_closed_claude.py",
    "tests/integration/test_gate_fails_closed_gemini.py",
    "tests/integration/test_gate_switched_off.py",
    "tests/integration/test_security_git.py",
    "tests/integration/test_gemini_gate.py",
    "tests/integration/test_mcp_config.py",
    "tests/protocol/test_opencode_targets.py::test_a_port_taken_by_another_user_gets_neither_token_nor_password",
    "tests/protocol/test_opencode_targets.py::test_a_target_that_failed_is_not_contacted_again_until_registered_again",
]


def main() -> int:
    figures_file = ROOT / "bench" / "stress-figures.jsonl"
    junit = ROOT / "bench" / "stress-junit.xml"
    figures_file.unlink(missing_ok=True)
    env = {
        **os.environ,
        "STRESS": "1",
        "FUZZ_EXAMPLES": os.environ.get("FUZZ_EXAMPLES", "17000"),
        "GEMINI_COMPANION_FIGURES": str(figures_file),
    }
    tests = [t for t in TESTS if (ROOT / t.split("::")[0]).exists()]
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--timeout", "3600", f"--junitxml={junit}", *tests],
        cwd=ROOT,
        env=env,
        check=False,
    )
    seconds = time.monotonic() - t0
    figures = (
        [json.loads(line) for line in figures_file.read_text().splitlines()] if figures_file.exists() else []
    )
    cases = _cases(junit)
    (ROOT / "bench" / "reliability.md").write_text(render(figures, cases, seconds))
    print((ROOT / "bench" / "reliability.md").read_text())
    return proc.returncode


def _cases(junit: Path) -> list[dict[str, Any]]:
    if not junit.exists():
        return []
    out = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "FAILED"
            elif child.tag == "skipped":
                outcome = (
                    "xfail"
                    if "xfail" in (child.get("type") or "") + (child.get("message") or "")
                    else "skipped"
                )
        out.append(
            {
                "file": Path(case.get("classname", "").replace(".", "/")).name,
                "name": case.get("name"),
                "seconds": float(case.get("time") or 0),
                "outcome": outcome,
            }
        )
    return out


# What a hostile party on the same machine tries (issues 15 and 24), and the tests that try it.
HOSTILE = [
    (
        "another local user: the token (discovery directory made first, symlinked, loose modes)",
        ("test_other_users_cannot_read", "discovery_directory", "loose_directory"),
    ),
    ("a web page: browsers, CORS, DNS rebinding", ("dns_rebinding",)),
    (
        "an agent's arguments: too deep, too many values, a channel Neovim closed",
        ("too_deep", "channel_neovim"),
    ),
    (
        "files that hang or exhaust Neovim; paths outside the workspace",
        ("would_hang", "inside_the_workspace"),
    ),
    (
        "connections: idle or slow sockets, the cap, abandoned and piled-up calls",
        ("past_the_cap", "idle_sockets", "whole_request", "mid_call", "bounded_per_session"),
    ),
    ("the host killed: state, environment and status line", ("dead_host", "killed_host")),
    (
        "an agent's proposals: a flood, caps, another session's review, accepts without an explicit write, "
        "a session ending with the user's edits",
        ("flood", "capped", "owning_session", "never_accept", "outlives", "aliased", "another_file"),
    ),
    (
        "a squatted OpenCode port; the token in registers, the clipboard and ShaDa",
        ("port_taken_by_another_user", "not_contacted_again", "never_yanked"),
    ),
    (
        "text typed into an agent: escape sequences in code, file names, diagnostics (terminal and tmux)",
        ("nested_paste_end", "same_filter", "no_control_characters"),
    ),
    (
        "a repository whose venv.py, pip.py or pynvim.py would run at install or start",
        ("hostile_repository",),
    ),
    (
        "a client's paths: URLs (term://), FIFOs, /proc, outside the workspace; a client accepting a review",
        ("runs_nothing", "not_a_plain_file", "buffers_by_number", "no_client_accepts"),
    ),
    (
        ":GeminiChanges after the agent: a file swapped for a FIFO, a link planted for a revert to write",
        (
            "replaced_by_a_fifo",
            "symlink_the_agent_planted",
            "swapped_for_a_symlink",
            "link_out_of_the_workspace",
        ),
    ),
    (
        "a fixed port and token file: another user squatting the port; a dead host's files",
        ("squatted_port", "never_valid", "ours_again", "killed_host_leaves", "another_server_wrote"),
    ),
]


HOSTILE_FILES = (
    "test_security",
    "test_faults",
    "test_review",
    "test_opencode",
    "test_mcp_config",
    "test_gate_fails_closed",
    "test_gate_switched_off",
    "test_gemini_gate",
)


def render(figures: list[dict[str, Any]], cases: list[dict[str, Any]], seconds: float) -> str:
    by_name: dict[str, list[dict[str, Any]]] = {}
    for f in figures:
        by_name.setdefault(f["name"], []).append(f)
    lines = [
        "# Reliability under stress",
        "",
        f"Generated by `make stress` on {time.strftime('%Y-%m-%d %H:%M')} ({seconds:.0f} s in all).",
        "",
    ]

    lines += ["## Hostile input (fuzzing)", "", "| category | inputs | failures |", "|---|---:|---:|"]
    fuzz = [f for f in figures if f["name"].startswith("fuzz.")]
    for f in fuzz:
        lines.append(f"| {f['name'][5:]} | {f.get('inputs', '?')} | {f.get('failures', '?')} |")
    if not fuzz:
        lines.append("| (no fuzz figures recorded) | | |")
    for f in figures:
        if f["name"].startswith("coverage."):  # what the fuzz modules tried, beyond pass/fail
            values = ", ".join(
                f"{k} = {json.dumps(v, sort_keys=True)}" for k, v in f.items() if k not in ("name", "at")
            )
            lines.append(f"\n`{f['name'][9:]}`: {values}")

    lines += ["", "## Load", ""]
    for f in by_name.get("load.mixed", []):
        lines += [
            f"{f['clients']} clients × {f['calls'] // f['clients']} mixed calls each ({f['calls']} calls: "
            "initialize, tools/list, nvim_info, read_buffer), each client with its own session:",
            "",
            "| errors | p50 ms | p99 ms | calls/s | Neovim nvim_eval p50 / p99 ms | host RSS before→after |",
            "|---:|---:|---:|---:|---|---|",
            f"| {f['errors']} | {f['p50_ms']} | {f['p99_ms']} | {f['calls_per_s']} | "
            f"{f['nvim_eval_p50_ms']} / {f['nvim_eval_p99_ms']} | "
            f"{f['host_rss_before_kib'] // 1024} → {f['host_rss_after_kib'] // 1024} MiB |",
        ]
    for f in by_name.get("load.session_cleanup", []):
        lines += [
            "",
            f"Sessions of vanished clients expired after {f['idle_expiry_s']} s idle; past "
            f"max_sessions = {f['max_sessions']} a new session got HTTP {f['refused_status']}.",
        ]

    lines += [
        "",
        "## Hostile users, agents and files",
        "",
        "| what is tried | tests | failed |",
        "|---|---:|---:|",
    ]
    for title, keys in HOSTILE:
        hits = [c for c in cases if c["file"].startswith(HOSTILE_FILES) and any(k in c["name"] for k in keys)]
        failed = sum(c["outcome"] != "passed" for c in hits)
        lines.append(f"| {title} | {len(hits)} | {failed} |")
    for f in figures:
        if f["name"].startswith("hostile."):
            values = ", ".join(f"{k} = {v}" for k, v in f.items() if k not in ("name", "at"))
            lines.append(f"\n`{f['name'][8:]}`: {values}")

    lines += ["", "## Faults and security", "", "| test | outcome | s |", "|---|---|---:|"]
    for c in cases:
        if c["file"].startswith(("test_faults", "test_security", "test_load")):
            lines.append(f"| {c['file']}::{c['name']} | {c['outcome']} | {c['seconds']:.1f} |")

    lines += ["", "## MCP conformance suite", ""]
    for f in by_name.get("conformance", []):
        lines.append(
            f"{f['scenarios_total']} scenarios run; {f['applicable_passed']} of {f['applicable_run']} "
            f"applicable scenarios passed; {f['not_applicable']} do not apply (tests/conformance/README.md)."
        )
    failed = [c for c in cases if c["outcome"] == "FAILED"]
    lines += [
        "",
        f"Tests: {len(cases)} run, {len(failed)} failed"
        + (": " + ", ".join(c["name"] for c in failed) if failed else "."),
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
