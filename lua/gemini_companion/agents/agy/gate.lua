-- The Antigravity CLI's review gate as Lua sees it (for :checkhealth, through agents/settings.lua):
-- agents/agy/gate.py's `HOOK`, a command hook in the named set SECTION of the workspace's
-- .agents/hooks.json (agy's docs name no file of the user's own).
local M = {}

M.EVENT = 'PreToolUse'
M.SECTION = 'gemini-companion'

--- agy's hooks file for `scope`: the workspace's; none for 'user'.
---@param scope 'user'|'project'
---@return string|nil
function M.settings_file(scope)
  if scope == 'project' then
    return vim.fs.joinpath(vim.fn.getcwd(-1, -1), '.agents', 'hooks.json')
  end
end

function M.is_ours(hook)
  return hook.type == 'command' and type(hook.command) == 'string' and vim.endswith(hook.command, ' agy')
end

--- Where the gate is installed: the files that hold it, and problems reading any.
function M.where()
  return require('gemini_companion.agents.settings').where(M)
end

return M
