-- :GeminiStatus, Gemini CLI's lines: how a gemini finds this Neovim, in its :terminal or from a
-- separate one (the discovery directory it looks in, and what to type there first).
local state = require('gemini_companion.state')
local status = require('gemini_companion.status')

local M = {}

--- The first gemini (major, minor) that finds Neovim from a separate terminal, by workspace.
M.SEPARATE_TERMINAL = { 0, 31 }

--- Where gemini looks for discovery files (agents/gemini/discovery.py's discovery_dir).
function M.discovery_dir()
  return status.tmpdir() .. '/gemini/ide'
end

local function shell_word(text)
  return text:match('^[%w%._/+:@%-]+$') and text or vim.fn.shellescape(text)
end

--- What to type in a terminal Neovim did not start, so that gemini there finds this Neovim.
---@return string[]
function M.separate_terminal_lines()
  local s = state.server
  local lines = { 'cd ' .. shell_word((s.workspace or {})[1] or vim.fn.getcwd(-1, -1)) }
  local dir, var = status.tmpdir()
  if var then
    table.insert(lines, ('export %s=%s'):format(var, shell_word(dir)))
  end
  table.insert(lines, status.container_export())
  table.insert(lines, ('gemini   (needs %d.%d or newer)'):format(unpack(M.SEPARATE_TERMINAL)))
  return lines
end

function M.status(_, add, lines)
  add('Own terminal', 'gemini in :terminal finds this Neovim by itself')
  add('Other terminal', 'to connect a gemini started elsewhere, run there:')
  for _, l in ipairs(M.separate_terminal_lines()) do
    table.insert(lines, '    ' .. l)
  end
end

return M
