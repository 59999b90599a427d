"""Claude Code: its IDE protocol over our WebSocket (tools, lock file, selection notifications)."""
