-- This Neovim's server as an entry of an Agent Client Protocol session's `mcpServers` (ACP
-- McpServerHttp: type, name, url, headers as {name, value} pairs), for ACP clients such as
-- codecompanion.nvim and avante.nvim to hand to the agents they run.
local state = require('gemini_companion.state')

local M = {}

--- The entry for the server of this start, or nil while it is not running (port and token
--- change at every start: ask again after `User GeminiServerReady`).
---@param name string|nil how the agent names the server (default "nvim")
function M.mcp_server(name)
  local token = vim.env.GEMINI_CLI_IDE_AUTH_TOKEN
  if state.server.state ~= 'running' or not state.server.url or not token then
    return nil
  end
  return {
    type = 'http',
    name = name or 'nvim',
    url = state.server.url,
    headers = { { name = 'Authorization', value = 'Bearer ' .. token } },
  }
end

return M
