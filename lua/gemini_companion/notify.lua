-- What the plugin says to the user: one line, named, at a level ('info', 'warn', 'error'). Every
-- feature says it here, so no feature needs the seam (bridge.lua) just to speak.
local M = {}

---@param msg string
---@param level? 'debug'|'info'|'warn'|'error'
function M.say(msg, level)
  vim.notify('gemini-companion: ' .. msg, vim.log.levels[(level or 'info'):upper()] or vim.log.levels.INFO)
end

return M
