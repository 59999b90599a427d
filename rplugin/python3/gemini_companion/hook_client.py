"""An agent's command hook (its review gate), run by the agent for each edit it is about to make:
`python -I hook_client.py <agent>`. It hands the hook's input to the Neovim that started the agent
and prints Neovim's answer.

Standard library only, and run isolated (-I: no user site, no PYTHON* variables, nothing imported
from the agent's working directory). The address and token come from the environment Neovim gives
its children (GEMINI_CLI_IDE_SERVER_PORT, GEMINI_CLI_IDE_AUTH_TOKEN), never from a file. Without
them, or when Neovim does not answer, it prints nothing (the agent goes on as its mode says) and
says why on stderr.
"""

import os
import sys
import urllib.error
import urllib.request


def main(argv: list[str]) -> int:
    agent = argv[1] if len(argv) > 1 else ""
    port, token = os.environ.get("GEMINI_CLI_IDE_SERVER_PORT"), os.environ.get("GEMINI_CLI_IDE_AUTH_TOKEN")
    if not (agent.isalpha() and port and port.isdigit() and token):
        sys.stderr.write("neovim review gate: not started from a Neovim that serves it: no review\n")
        return 0
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/hooks/{agent}",
        data=sys.stdin.buffer.read(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    # No proxy: the answer comes from this machine's Neovim, whatever HTTP_PROXY says.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=None) as response:
            answer = response.read()
    except (OSError, urllib.error.URLError) as exc:
        sys.stderr.write(f"neovim review gate: Neovim did not answer ({exc}): no review\n")
        return 0
    sys.stdout.write(answer.decode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
