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

-- How often a mention sent to a claude that has just started is looked for in its terminal.
M.SHOWN_CHECK_MS = 1500

--- A claude just started takes mentions only once its prompt has subscribed to them, a moment
--- after it connects (its `at_mentioned` handler is set when its UI learns of the connection): one
--- that comes before is dropped, silently, and under load that moment grows. So: mention, and
--- mention again while claude's terminal `buf` does not show it, up to `tries` times.
---@param buf integer
---@param path string
---@param line_start integer|nil
---@param line_end integer|nil
---@param tries integer|nil
function M.after_start(buf, path, line_start, line_end, tries)
  -- claude shows `@<path from its folder>#L<start>-<end> ` in its input, wrapped to its width
  local suffix = ''
  if line_start and line_end then
    suffix = line_start == line_end and ('#L%d'):format(line_start) or ('#L%d-%d'):format(line_start, line_end)
  end
  local shown_as = (vim.fn.fnamemodify(path, ':t') .. suffix):gsub('%s', '')
  local function times_shown()
    local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false)):gsub('%s', '')
    return select(2, text:gsub(vim.pesc(shown_as), ''))
  end
  local before = times_shown()
  local function send(left)
    if not vim.api.nvim_buf_is_valid(buf) or not M.at_mentioned(path, line_start, line_end) then
      return
    end
    vim.defer_fn(function()
      if left > 1 and vim.api.nvim_buf_is_valid(buf) and times_shown() <= before then
        send(left - 1)
      end
    end, M.SHOWN_CHECK_MS)
  end
  send(tries or 10)
end

return M
