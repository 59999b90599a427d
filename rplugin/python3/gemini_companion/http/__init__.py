"""The HTTP edge: the aiohttp app and its policy (127.0.0.1, token, Origin/Host), the MCP SDK's
session manager behind it, the WebSocket transport, the SDK workarounds. Over `core`."""
