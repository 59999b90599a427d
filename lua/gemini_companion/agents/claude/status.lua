-- :GeminiStatus, Claude Code's line: the lock file it finds this Neovim by (`s`: state.server).
local M = {}

function M.status(s, add)
  add(
    'Claude Code',
    s.claude_lock_file and ('lock file ' .. s.claude_lock_file) or (s.claude_error or 'off (claude.enabled = false)')
  )
end

return M
