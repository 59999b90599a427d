-- An agent's own settings file as Lua reads it (:checkhealth, :Gemini's IDE mode question):
-- JSONC, never a FIFO, and whether it holds our gate's entry. (Writing it is Python's:
-- agents/hook_entries.py, agent_settings.py.) Claude Code and Gemini CLI keep hooks alike:
-- { hooks = { <Event> = { { matcher = ..., hooks = { <hook>, ... } }, ... } } }.
local M = {}

--- The settings in `path` (nil, nil: no such file; nil, why: unreadable), read as JSON with // and
--- /* */ comments: gemini reads its settings so (strip-json-comments), and strict JSON is the same.
function M.read(path)
  if not vim.uv.fs_stat(path) then
    return nil, nil
  end
  -- read_file, not io.open: a settings file in a hostile repository may be a FIFO (open would hang)
  local read_ok, text = pcall(require('gemini_companion.builtin.util').read_file, path)
  if not read_ok then
    return nil, text
  end
  local options = { luanil = { object = true, array = true } }
  local ok, value = pcall(vim.json.decode, text, options)
  if ok and type(value) == 'table' then
    return value, nil
  end
  local out, i, n, in_string = {}, 1, #text, false
  while i <= n do
    local c, two = text:sub(i, i), text:sub(i, i + 1)
    if in_string then
      table.insert(out, two:sub(1, c == '\\' and 2 or 1))
      i = i + (c == '\\' and 2 or 1)
      in_string = c ~= '"'
    elseif two == '//' then
      i = (text:find('\n', i, true) or n + 1)
    elseif two == '/*' then
      i = (select(2, text:find('*/', i + 2, true)) or n) + 1
    else
      in_string = c == '"'
      table.insert(out, c)
      i = i + 1
    end
  end
  ok, value = pcall(vim.json.decode, table.concat(out), options)
  if not ok or type(value) ~= 'table' then
    return nil, 'not valid JSON'
  end
  return value, nil
end

--- Whether the settings file `path` holds a hook under `event` for which `is_ours(hook)` holds:
--- true, false, or nil and why the file could not be read.
---@param path string
---@param event string
---@param is_ours fun(hook: table): boolean
---@param section? string where the file keeps hooks: "hooks" (claude, gemini), a named set (agy)
---@return boolean|nil, string|nil
function M.installed_in(path, event, is_ours, section)
  local stat = vim.uv.fs_stat(path)
  if not stat then
    return false
  end
  if stat.type ~= 'file' then
    return nil, path .. ' is not a regular file'
  end
  local settings, err = M.read(path)
  if not settings then
    return nil, ('%s: %s'):format(path, tostring(err))
  end
  local hooks = settings[section or 'hooks']
  local groups = type(hooks) == 'table' and hooks[event] or nil
  for _, group in ipairs(type(groups) == 'table' and groups or {}) do
    for _, hook in ipairs(type(group) == 'table' and type(group.hooks) == 'table' and group.hooks or {}) do
      if type(hook) == 'table' and is_ours(hook) then
        return true
      end
    end
  end
  return false
end

--- Where an agent's gate (its hook_entry module: settings_file(scope), EVENT, is_ours) is installed:
--- the files that hold it, and problems reading any.
---@return string[] found, string[] problems
function M.where(gate)
  local found, problems = {}, {}
  for _, scope in ipairs({ 'project', 'user' }) do
    local path = gate.settings_file(scope)
    local yes, err
    if path then -- (an agent may read no file for a scope)
      yes, err = M.installed_in(path, gate.EVENT, gate.is_ours, gate.SECTION)
    end
    if yes then
      table.insert(found, path)
    elseif err then
      table.insert(problems, err)
    end
  end
  return found, problems
end

return M
