-- The Antigravity CLI's review gate as Lua sees it (for :checkhealth, through agents/settings.lua):
-- agents/agy/gate.py's `HOOK`, a command hook in the named set SECTION of the workspace's
-- .agents/hooks.json, or for every workspace of our agy plugin's hooks.json (agy's docs name no
-- hooks file of the user's own).
local M = {}

M.EVENT = 'PreToolUse'
M.SECTION = 'gemini-companion'

--- agy's hooks file for `scope`: the workspace's, or our plugin's (agents/agy/plugin.lua).
---@param scope 'user'|'project'
---@return string
function M.settings_file(scope)
  if scope == 'project' then
    return vim.fs.joinpath(vim.fn.getcwd(-1, -1), '.agents', 'hooks.json')
  end
  return vim.fs.joinpath(require('gemini_companion.agents.agy.plugin').dir(), 'hooks.json')
end

function M.is_ours(hook)
  return hook.type == 'command' and type(hook.command) == 'string' and vim.endswith(hook.command, ' agy')
end

--- Where the gate is installed: the files that hold it, and problems reading any.
function M.where()
  return require('gemini_companion.agents.settings').where(M)
end

--- The hooks file that switches this gate off for an agy started in `cwd`, and how; nil when none
--- does. agy's docs name one switch, a named set's own "enabled": false, and none that turns
--- every hook off.
---@param cwd string
---@return string|nil file, string|nil how
function M.switched_off(cwd)
  local files = { vim.fs.joinpath(cwd, '.agents', 'hooks.json'), M.settings_file('user') }
  for _, file in ipairs(files) do
    local ours = vim.tbl_get(require('gemini_companion.agents.settings').read(file) or {}, M.SECTION)
    if type(ours) == 'table' and ours.enabled == false then
      return file, ('switches the review gate off ("%s": {"enabled": false})'):format(M.SECTION)
    end
  end
end

return M
