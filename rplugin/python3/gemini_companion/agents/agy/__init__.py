"""The Antigravity CLI (`agy`): no IDE protocol, an MCP client; its review gate is its PreToolUse hook."""
