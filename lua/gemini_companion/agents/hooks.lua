-- An agent's hooks settings as :checkhealth reads them: whether a file holds our gate's entry.
-- (Writing it is Python's: agents/gates.py, agent_settings.py.) Claude Code and Gemini CLI keep
-- hooks alike: { hooks = { <Event> = { { matcher = ..., hooks = { <hook>, ... } }, ... } } }.
local M = {}

--- Whether the settings file `path` holds a hook under `event` for which `is_ours(hook)` holds:
--- true, false, or nil and why the file could not be read.
---@param path string
---@param event string
---@param is_ours fun(hook: table): boolean
---@return boolean|nil, string|nil
function M.installed_in(path, event, is_ours)
  local stat = vim.uv.fs_stat(path)
  if not stat then
    return false
  end
  if stat.type ~= 'file' then
    return nil, path .. ' is not a regular file'
  end
  local read_ok, text = pcall(require('gemini_companion.builtin.util').read_file, path)
  if not read_ok then
    return nil, tostring(text)
  end
  local ok, settings = pcall(vim.json.decode, text, { luanil = { object = true, array = true } })
  if not ok or type(settings) ~= 'table' then
    return nil, path .. ' is not valid JSON'
  end
  local groups = type(settings.hooks) == 'table' and settings.hooks[event] or nil
  for _, group in ipairs(type(groups) == 'table' and groups or {}) do
    for _, hook in ipairs(type(group) == 'table' and type(group.hooks) == 'table' and group.hooks or {}) do
      if type(hook) == 'table' and is_ours(hook) then
        return true
      end
    end
  end
  return false
end

--- Where an agent's gate (its gate module: settings_file(scope), EVENT, is_ours) is installed:
--- the files that hold it, and problems reading any.
---@return string[] found, string[] problems
function M.where(gate)
  local found, problems = {}, {}
  for _, scope in ipairs({ 'project', 'user' }) do
    local path = gate.settings_file(scope)
    local yes, err = M.installed_in(path, gate.EVENT, gate.is_ours)
    if yes then
      table.insert(found, path)
    elseif err then
      table.insert(problems, err)
    end
  end
  return found, problems
end

return M
