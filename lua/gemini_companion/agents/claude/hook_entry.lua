-- Claude Code's review gate as Lua sees it: where its entry lives and how to know it (for
-- :checkhealth, through agents/settings.lua). The entry is agents/claude/gate.py's `HOOK`, found by
-- the same fields (tests/unit/test_gate.py holds the two halves together).
local M = {}

M.EVENT = 'PreToolUse'
M.SERVER = 'ide'
M.TOOL = 'review_gate'
--- What :GeminiGate passes on from Neovim's environment: where the agent keeps its settings.
M.env = { 'CLAUDE_CONFIG_DIR' }

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

function M.is_ours(hook)
  return hook.type == 'mcp_tool' and hook.server == M.SERVER and hook.tool == M.TOOL
end

--- The guard beside the gate (agents/claude/gate.py's GUARD): it denies an edit when the claude
--- Neovim started cannot reach Neovim, where the mcp_tool hook alone would let it through.
function M.is_guard(hook)
  return hook.type == 'command'
    and type(hook.command) == 'string'
    and vim.endswith(hook.command, 'hook_client.py claude')
end

--- Where the gate is installed: the files that hold it, and problems reading any.
function M.where()
  return require('gemini_companion.agents.settings').where(M)
end

--- Whether `path` (one that holds the gate) holds its guard too (an older install does not).
function M.guarded(path)
  return require('gemini_companion.agents.settings').installed_in(path, M.EVENT, M.is_guard, M.SECTION) == true
end

-- The managed (policy) settings claude reads on Linux: the file, then its drop-in folder's files in
-- name order, each over the last (claude's own order). They win over every other file.
local MANAGED_DIR = '/etc/claude-code'

local function managed_files()
  local files = { vim.fs.joinpath(MANAGED_DIR, 'managed-settings.json') }
  local drop_ins = vim.fs.joinpath(MANAGED_DIR, 'managed-settings.d')
  local names = {}
  for name, kind in vim.fs.dir(drop_ins) do
    if kind == 'file' and vim.endswith(name, '.json') then
      table.insert(names, name)
    end
  end
  table.sort(names)
  for _, name in ipairs(names) do
    table.insert(files, vim.fs.joinpath(drop_ins, name))
  end
  return files
end

--- The last of `files` whose settings set `key` (claude merges its files so: the later wins), and
--- the value it sets.
local function last_setting(files, key)
  local where, value
  for _, file in ipairs(files) do
    local settings = require('gemini_companion.agents.settings').read(file)
    if type(settings) == 'table' and settings[key] ~= nil then
      where, value = file, settings[key]
    end
  end
  return where, value
end

--- The settings file that switches claude's hooks, and so this gate, off for a claude started in
--- `cwd`, and how it does; nil when none does. Claude reads (real claude 2.1.331, its hooks
--- loader): managed settings' "disableAllHooks" (none run) or "allowManagedHooksOnly" (only
--- managed ones run: ours is the user's or the project's); else "disableAllHooks" merged over the
--- user's, the project's shared and its local settings (a repository's own file switches the user's
--- hooks off). `--safe-mode` and `--settings` are the user's own choice at claude's start.
---@param cwd string
---@return string|nil file, string|nil how
function M.switched_off(cwd)
  local managed = managed_files()
  for _, key in ipairs({ 'disableAllHooks', 'allowManagedHooksOnly' }) do
    local file, value = last_setting(managed, key)
    if value == true then
      return file, ('switches claude\'s hooks off ("%s": true)'):format(key)
    end
  end
  local file, value = last_setting({
    M.settings_file('user'),
    vim.fs.joinpath(cwd, '.claude', 'settings.json'),
    vim.fs.joinpath(cwd, '.claude', 'settings.local.json'),
  }, 'disableAllHooks')
  if value == true then
    return file, 'switches claude\'s hooks off ("disableAllHooks": true)'
  end
end

return M
