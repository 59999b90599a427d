"""OpenCode: registering this server with `opencode serve` instances."""
