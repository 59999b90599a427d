-- Gemini CLI's review gate as Lua sees it: where its entry lives and how to know it (for
-- :checkhealth). The entry is agents/gemini/gate.py's `HOOK` (a command hook running our
-- hook_client.py), found by its name (tests/unit/test_gate.py holds the two halves together).
local M = {}

M.EVENT = 'BeforeTool'
M.NAME = 'neovim-review-gate'
--- What :GeminiGate passes on from Neovim's environment: where the agent keeps its settings.
M.env = { 'GEMINI_CLI_HOME' }

--- gemini's settings file for `scope`, as agents/gemini/gate.py's settings_file.
---@param scope 'user'|'project'
---@return string
function M.settings_file(scope)
  if scope == 'project' then
    return vim.fs.joinpath(vim.fn.getcwd(-1, -1), '.gemini', 'settings.json')
  end
  local home = vim.env.GEMINI_CLI_HOME
  if not home or home == '' then
    home = vim.env.HOME or vim.uv.os_homedir()
  end
  return vim.fs.joinpath(home, '.gemini', 'settings.json')
end

function M.is_ours(hook)
  return hook.type == 'command' and hook.name == M.NAME
end

function M.where()
  return require('gemini_companion.agents.settings').where(M)
end

--- The system settings files gemini reads on Linux, as its getSystemSettingsPath and
--- getSystemDefaultsPath: the defaults (under the user's), the settings (over everything).
local function system_files()
  local settings = vim.env.GEMINI_CLI_SYSTEM_SETTINGS_PATH
  if not settings or settings == '' then
    settings = '/etc/gemini-cli/settings.json'
  end
  local defaults = vim.env.GEMINI_CLI_SYSTEM_DEFAULTS_PATH
  if not defaults or defaults == '' then
    defaults = vim.fs.joinpath(vim.fs.dirname(settings), 'system-defaults.json')
  end
  return defaults, settings
end

--- The settings file that switches gemini's hooks, or this gate by its name, off for a gemini
--- started in `cwd`, and how it does; nil when none does. gemini 0.61 merges system defaults, the
--- user's, the workspace's (not when the workspace is the home folder) and the system settings, in
--- that order: "hooksConfig.enabled" the last that sets it wins, "hooksConfig.disabled" (hook names)
--- is the union of all. (gemini skips a workspace's file in a folder the user did not trust; that
--- is not looked at here: a file that would switch the gate off is said either way.)
---@param cwd string
---@return string|nil file, string|nil how
function M.switched_off(cwd)
  local defaults, system = system_files()
  local files = { defaults, M.settings_file('user') }
  local home = vim.fs.dirname(vim.fs.dirname(M.settings_file('user')))
  if vim.uv.fs_realpath(cwd) ~= vim.uv.fs_realpath(home) then
    table.insert(files, vim.fs.joinpath(cwd, '.gemini', 'settings.json'))
  end
  table.insert(files, system)
  local enabled_by, enabled
  for _, file in ipairs(files) do
    local hooks = vim.tbl_get(require('gemini_companion.agents.settings').read(file) or {}, 'hooksConfig')
    if type(hooks) == 'table' then
      if hooks.enabled ~= nil then
        enabled_by, enabled = file, hooks.enabled
      end
      if type(hooks.disabled) == 'table' and vim.tbl_contains(hooks.disabled, M.NAME) then
        return file, ('switches the review gate off ("hooksConfig": {"disabled": ["%s"]})'):format(M.NAME)
      end
    end
  end
  if enabled == false then
    return enabled_by, 'switches gemini\'s hooks off ("hooksConfig": {"enabled": false})'
  end
end

return M
