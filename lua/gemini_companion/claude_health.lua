-- :checkhealth gemini_companion, Claude Code's part: its program, and the lock file it finds
-- this Neovim by (`s`: the server state Python pushed, bridge.server).
local M = {}

--- Claude Code: its program, and the lock file it finds this Neovim by.
function M.check(h, s)
  h.start('Claude Code (claude in :terminal)')
  if s.state == 'running' and s.claude_error then
    h.error(s.claude_error) -- claude cannot find this Neovim: as serious as a missing discovery file
  elseif s.state == 'running' and not s.claude_lock_file then
    h.info('switched off (claude.enabled = false): claude does not find this Neovim')
  elseif s.state == 'running' then
    h.ok(
      ('lock file %s: claude in :terminal connects by itself (CLAUDE_CODE_SSE_PORT=%s)'):format(
        s.claude_lock_file,
        tostring(s.port)
      )
    )
  end
  local exe = vim.fn.exepath('claude')
  if exe == '' then
    h.info(
      '`claude` is not on the PATH of Neovim (only needed to use Claude Code: npm install -g @anthropic-ai/claude-code)'
    )
    return
  end
  local res = vim.system({ exe, '--version' }, { text = true }):wait(20000)
  local version = res.code == 0 and (res.stdout or ''):match('%d+%.%d+%.%d+') or nil
  if version then
    h.ok(('claude %s (%s)'):format(version, exe))
  else
    h.warn(('%s --version did not say its version (exit %s)'):format(exe, tostring(res.code)))
  end
end

return M
