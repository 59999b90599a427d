-- :GeminiMcpConfig gemini: the entry of ~/.gemini/settings.json's mcpServers (mcp_config.lua asks).
local M = {}

M.variables = '${%s}' -- gemini expands ${VAR} in its settings each time it starts
M.where = 'in ~/.gemini/settings.json'

function M.snippet(c)
  return c.json({ mcpServers = { [c.name] = { httpUrl = c.url, headers = { Authorization = c.auth } } } })
end

return M
