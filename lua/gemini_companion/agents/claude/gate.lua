-- Claude Code's review gate as Lua sees it: where its entry lives and whether it is there (for
-- :checkhealth). Writing the entry is Python's (agents/gates.py, hook_settings.py: the user's
-- file keeps its order and form); the entry itself is agents/claude/gate.py's `HOOK`, found here
-- by the same three fields (tests/unit/test_gate.py holds the two halves together).
local M = {}

M.EVENT = 'PreToolUse'
M.SERVER = 'ide'
M.TOOL = 'review_gate'

--- claude's settings file for `scope` ('user' or 'project'), as agents/claude/gate.py's
--- settings_file: the user's ($CLAUDE_CONFIG_DIR or ~/.claude), or the project's uncommitted one.
---@param scope 'user'|'project'
---@return string
function M.settings_file(scope)
  if scope == 'project' then
    return vim.fs.joinpath(vim.fn.getcwd(-1, -1), '.claude', 'settings.local.json')
  end
  local dir = vim.env.CLAUDE_CONFIG_DIR
  if not dir or dir == '' then
    dir = vim.fs.joinpath(vim.env.HOME or vim.uv.os_homedir(), '.claude')
  end
  return vim.fs.joinpath(dir, 'settings.json')
end

--- Whether `path` holds our entry: true, false, or nil and why it could not be read.
---@return boolean|nil, string|nil
function M.installed_in(path)
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
  local groups = type(settings.hooks) == 'table' and settings.hooks[M.EVENT] or nil
  for _, group in ipairs(type(groups) == 'table' and groups or {}) do
    for _, hook in ipairs(type(group) == 'table' and type(group.hooks) == 'table' and group.hooks or {}) do
      if type(hook) == 'table' and hook.type == 'mcp_tool' and hook.server == M.SERVER and hook.tool == M.TOOL then
        return true
      end
    end
  end
  return false
end

--- Where the gate is installed: the scopes' files that hold it, and problems reading any.
---@return string[] found, string[] problems
function M.where()
  local found, problems = {}, {}
  for _, scope in ipairs({ 'project', 'user' }) do
    local path = M.settings_file(scope)
    local yes, err = M.installed_in(path)
    if yes then
      table.insert(found, path)
    elseif err then
      table.insert(problems, err)
    end
  end
  return found, problems
end

return M
