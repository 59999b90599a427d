-- :GeminiMcpConfig opencode: the entry of opencode.json's `mcp` (mcp_config.lua asks).
local M = {}

M.variables = '{env:%s}' -- OpenCode's own syntax for an environment variable in its config
M.where = 'in opencode.json'

function M.snippet(c)
  return c.json({
    ['$schema'] = 'https://opencode.ai/config.json',
    mcp = {
      [c.name] = { type = 'remote', url = c.url, enabled = true, oauth = false, headers = { Authorization = c.auth } },
    },
  })
end

return M
