-- What the plugin says to the user: one line, named, at a level ('info', 'warn', 'error'). Every
-- feature says it here, so no feature needs the seam (bridge.lua) just to speak.
local M = {}

-- The question M.yes waits on, if any: a caller in a scheduled callback does not show in
-- nvim_get_mode() as waiting for input, so a remote UI or a test can tell from this.
---@type string|nil
M.asking = nil

---@param msg string
---@param level? 'debug'|'info'|'warn'|'error'
function M.say(msg, level)
  vim.notify('gemini-companion: ' .. msg, vim.log.levels[(level or 'info'):upper()] or vim.log.levels.INFO)
end

--- A yes/no question answered by one key, as Vim's own questions are: a prompt that waits for
--- Enter would take the user's next command as the answer. `default` is what Enter means; <C-c>
--- and <Esc> are always no.
---@param question string
---@param default? boolean
---@return boolean
function M.yes(question, default)
  vim.api.nvim_echo({ { question .. (default and ' [Y/n] ' or ' [y/N] '), 'Question' } }, false, {})
  M.asking = question
  local ok, key = pcall(vim.fn.getcharstr)
  M.asking = nil
  -- Clear the question: a message said next would go below it, and two lines make Neovim stop
  -- at "Press ENTER".
  vim.cmd('redraw | echo ""')
  if not ok or key == '\27' then
    return false
  elseif key == '\r' or key == '\n' then
    return default == true
  end
  return key:match('^[yY]$') ~= nil
end

return M
