-- `@file#Lx-y` into Claude Code's prompt (its `at_mentioned` notification), for the send commands.
local to_host = require('gemini_companion.to_host')
local state = require('gemini_companion.state')
local sanitize = require('gemini_companion.sanitize')

local M = {}

--- Whether a Claude Code session is connected over the IDE WebSocket (per the last state push).
function M.connected()
  for _, client in ipairs(state.server.clients or {}) do
    if client.transport == 'ws' then
      return true
    end
  end
  return false
end
M.claude_connected = M.connected -- its name in the README and :help

--- Mention `path` (lines 1-based, inclusive, both or neither) in every connected Claude Code
--- session; true when at least one was connected to receive it.
---@param path string
---@param line_start integer|nil
---@param line_end integer|nil
---@return boolean
function M.at_mentioned(path, line_start, line_end)
  vim.validate({ path = { path, 'string' } })
  if state.server.state ~= 'running' or not M.connected() then
    return false
  end
  local first, last = nil, nil
  if line_start and line_end then
    first, last = math.max(0, line_start - 1), math.max(0, line_end - 1)
  end
  -- claude shows the mention in its prompt: a file name's control characters must not reach it
  to_host.at_mentioned(sanitize.agent_text(vim.fn.fnamemodify(path, ':p')), first, last)
  return true
end

return M
