-- Claude Code's review gate as Lua sees it: where its entry lives and how to know it (for
-- :checkhealth, through agents/settings.lua). The entry is agents/claude/gate.py's `HOOK`, found by
-- the same fields (tests/unit/test_gate.py holds the two halves together).
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

function M.is_ours(hook)
  return hook.type == 'mcp_tool' and hook.server == M.SERVER and hook.tool == M.TOOL
end

--- Where the gate is installed: the files that hold it, and problems reading any.
function M.where()
  return require('gemini_companion.agents.settings').where(M)
end

return M
