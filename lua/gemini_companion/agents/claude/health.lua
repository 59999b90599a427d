-- :checkhealth gemini_companion, Claude Code's part: its program, and the lock file it finds
-- this Neovim by (`s`: the server state Python pushed, state.server).
local state = require('gemini_companion.state')
local util = require('gemini_companion.builtin.util')

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
  M.check_mode(h, version)
end

-- Since this release a fresh claude starts in auto mode (2.1.197 still started asking).
M.AUTO_DEFAULT_SINCE = '2.1.331'
-- The modes in which claude asks before it edits a file, so the edit opens as a review here.
local ASKING = { default = true, plan = true }

--- The `permissions.defaultMode` claude starts with, and the settings file that sets it: the
--- most specific of the project's local and shared settings and the user's (claude's own order).
local function default_mode()
  local user = vim.env.CLAUDE_CONFIG_DIR or vim.fs.joinpath(vim.env.HOME or '', '.claude')
  local files = {
    vim.fs.joinpath(vim.fn.getcwd(), '.claude', 'settings.local.json'),
    vim.fs.joinpath(vim.fn.getcwd(), '.claude', 'settings.json'),
    vim.fs.joinpath(user, 'settings.json'),
  }
  for _, file in ipairs(files) do
    -- read_file: a settings file in a hostile repository may be a FIFO, which must not hang this
    local ok, text = pcall(util.read_file, file)
    if ok then
      local decoded_ok, settings = pcall(vim.json.decode, text)
      local mode = decoded_ok
        and type(settings) == 'table'
        and type(settings.permissions) == 'table'
        and settings.permissions.defaultMode
      if type(mode) == 'string' then
        return mode, file
      end
    end
  end
end

--- The review gate's part: true when it makes every mode review claude's edits (and, second,
--- true when it is installed but switched off).
local function check_gate(h)
  local found, problems = require('gemini_companion.agents.claude.hook_entry').where()
  for _, problem in ipairs(problems) do
    h.warn('review gate: ' .. problem)
  end
  local setting = vim.tbl_get(state.settings or {}, 'review', 'gate') or 'auto-modes'
  if #found == 0 then
    h.info(
      'review gate not installed: :GeminiGate install claude opens the edits claude makes without asking as reviews'
    )
    return false
  end
  if setting == 'never' then
    h.warn(
      ('review gate installed (%s), but review.gate = "never" lets every edit through but those of agent settings files'):format(
        found[1]
      )
    )
    return false
  end
  if require('gemini_companion.agents.gate_off').check(h, 'claude') then
    return false, true
  end
  local gate = require('gemini_companion.agents.claude.hook_entry')
  local unguarded = vim.tbl_filter(function(path)
    return not gate.guarded(path)
  end, found)
  if #unguarded > 0 then
    h.warn(
      ('review gate installed (%s) without its guard (an older install): a claude whose connection to Neovim drops while it waits on a review applies the edit'):format(
        table.concat(unguarded, ', ')
      ),
      { ':GeminiGate install claude (again) adds the guard' }
    )
    return false
  end
  h.ok(
    ('review gate installed (%s): an edit claude makes without asking (auto, acceptEdits, dontAsk, bypass) opens as a review%s'):format(
      table.concat(found, ', '),
      setting == 'always' and '; review.gate = "always": every edit the gate sees does' or ''
    )
  )
  return true
end

--- Whether claude's edits will reach a review: in a mode where it asks before editing, or through
--- the review gate in any mode.
function M.check_mode(h, version)
  local gated, switched_off = check_gate(h)
  local mode, file = default_mode()
  local skip = gated and ' the review gate opens its edits as reviews'
    or ' claude writes files without asking, so no review opens; :GeminiChanges shows what it changed'
  local fix = gated and nil
    or (switched_off and '' or ':GeminiGate install claude, or ')
      .. 'press shift+tab in claude until it shows "manual mode on", or set "permissions": {"defaultMode": "default"} in ~/.claude/settings.json'
  if mode and ASKING[mode] then
    h.ok(('claude starts in "%s" mode (%s): it asks before editing, so its edits open as reviews'):format(mode, file))
  elseif mode and gated then
    h.ok(('claude starts in "%s" mode (%s):%s'):format(mode, file, skip))
  elseif mode then
    h.warn(('claude starts in "%s" mode (%s):%s'):format(mode, file, skip), { fix })
  elseif version and vim.version.ge(version, M.AUTO_DEFAULT_SINCE) and gated then
    h.ok(('claude %s starts in auto mode:%s'):format(version, skip))
  elseif version and vim.version.ge(version, M.AUTO_DEFAULT_SINCE) then
    h.warn(
      ('claude %s starts in auto mode:%s'):format(version, skip),
      { fix .. ', and answer No when claude offers to make auto mode your default' }
    )
  elseif version then
    h.ok(('claude %s starts in its default mode: it asks before editing, so its edits open as reviews'):format(version))
  end
end

return M
