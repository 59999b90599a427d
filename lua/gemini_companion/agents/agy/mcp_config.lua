-- :GeminiMcpConfig agy: the entry of its mcp_config.json, with `!` only (mcp_config.lua asks).
local M = {}

M.where = "in agy's ~/.gemini/config/mcp_config.json or the workspace's .agents/mcp_config.json"
M.literal_where = true -- its only snippet is the literal one: the note says where it goes

function M.snippet(c)
  if c.literal then
    -- `serverUrl`: the key both of agy's docs accept (one also names `url`, the other `httpUrl`).
    return c.json({ mcpServers = { [c.name] = { serverUrl = c.url, headers = { Authorization = c.auth } } } })
  end
  -- agy's docs name no ${VAR} expansion in mcp_config.json: an entry that works holds the token.
  return nil,
    "agy's mcp_config.json reads no environment variables (its docs name none), so an entry that works "
      .. 'holds the token itself: :GeminiMcpConfig! agy prints one (not yanked), best with '
      .. 'setup({ port = <n>, token_file = true }) so that the port stays',
    'warn'
end

return M
