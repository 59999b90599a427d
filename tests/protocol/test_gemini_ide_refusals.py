"""What the server refuses of Gemini CLI's openDiff before Neovim sees it (moved from
tests/integration/test_gemini_ide.py, where the reviews the user sees stay): targets no review can
be, and edits over max_body_bytes. Judged by an MCP client (the Python SDK's; for the body
cap the TypeScript SDK's, tests/node/ts_client.mjs, as in the test it came from)."""

from __future__ import annotations

from pathlib import Path

from gemini_companion import seam

from tests.support.fake_neovim import InProcessServer
from tests.support.helpers import wait_for
from tests.support.node_driver import NodeDriver
from tests.support.tool_calls import call_tools


def test_bad_targets_are_clear_errors(server: InProcessServer) -> None:
    # The errors as the server sends them; Gemini CLI's IdeClient shows a tool's error text as its
    # openDiff's error (tests/integration/test_gemini_ide.py: its results, from the same client).
    project = server.fake.workspace
    (project / "a.py").write_text("line 1\n")
    cases = [
        ("relative/x.py", "a", "absolute"),
        (str(project / "a.py" / "x.py"), "a", "not a directory"),
        (str(project), "a", "not a regular file"),
        (str(project / "bin.dat"), "a\0b", "NUL"),
    ]
    results = call_tools(
        server.discovery(),
        [("openDiff", {"filePath": path, "newContent": content}) for path, content, _ in cases],
    )
    for (is_error, text), (_, _, expect) in zip(results, cases, strict=True):
        assert is_error and expect in text, text
    assert server.fake.reviews == {}
    assert not [code for code, _ in server.fake.calls if code == seam.OPEN_REVIEW]  # Neovim asked nothing


def test_oversized_proposals_are_refused_clearly(server: InProcessServer, tmp_path: Path) -> None:
    disc, big = server.discovery(), server.fake.workspace / "big.txt"
    with NodeDriver("ts_client.mjs", disc.url, disc.token, log_dir=tmp_path) as ts:
        ts.wait_event(lambda e: e.get("event") == "connected", what="connected")
        reply = ts.send("call", name="openDiff", args={"filePath": str(big), "newContent": "x" * (25 << 20)})
        assert not reply["ok"] and "request body larger than 25165824 bytes" in reply["error"]
    assert server.fake.reviews == {}
    # The user, who waits for that edit, is told in Neovim too: who, which file, how big, what to raise.
    told = wait_for(lambda: [m for m, _ in server.fake.notifications if "max_body_bytes" in m], what="told")
    assert told == [
        f"nvim-gemini-test-ts-client sent an edit of {big} of 25.0 MiB, "
        "over max_body_bytes (24.0 MiB): refused, it cannot be reviewed. "
        "Raise max_body_bytes to take edits this large."
    ]
