-- :GeminiMcpConfig claude: a project's .mcp.json, or with `!` a `claude mcp add` line (mcp_config.lua asks).
local M = {}

M.variables = '${%s}' -- Claude Code expands ${VAR} in a project's .mcp.json each time it starts
M.where = "in .mcp.json at your project's root (not `claude mcp add`: it would keep this start's port and token)"

function M.snippet(c)
  if c.literal then
    return ('claude mcp add --transport http %s %s --header "Authorization: %s"'):format(c.name, c.url, c.auth)
  end
  -- `claude mcp add` would store the values the shell expands now, dead at our next start.
  return c.json({ mcpServers = { [c.name] = { type = 'http', url = c.url, headers = { Authorization = c.auth } } } })
end

return M
