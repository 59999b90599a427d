-- Gemini CLI's review gate as Lua sees it: where its entry lives and how to know it (for
-- :checkhealth). The entry is agents/gemini/gate.py's `HOOK` (a command hook running our
-- hook_client.py), found by its name (tests/unit/test_gate.py holds the two halves together).
local M = {}

M.EVENT = 'BeforeTool'
M.NAME = 'neovim-review-gate'

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

return M
