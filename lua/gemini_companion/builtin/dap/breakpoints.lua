-- Breakpoint tools: nvim-dap's own breakpoints (the user's signs), sent to every session.
local dap = require('dap')
local breakpoints = require('dap.breakpoints')
local util = require('gemini_companion.builtin.util')

local M = {}

M.path_arg = { type = 'string', description = 'File path', required = true }
M.line_arg = { type = 'integer', description = 'Line (1-based)', required = true }

--- The buffer of `filename`, loaded though not shown: a breakpoint in an unloaded buffer lands on
--- line 1. Errors when the file may not be read.
function M.buffer(filename)
  local path = vim.fs.normalize(vim.fn.fnamemodify(filename, ':p'))
  return util.load_hidden(path), path -- load_hidden checks the path may be read
end

--- Every breakpoint, sorted by file and line, with what the adapter said of it.
function M.list()
  local out = {}
  for buf, list in pairs(breakpoints.get()) do
    local path = vim.api.nvim_buf_get_name(buf)
    for _, bp in ipairs(list) do
      local state = bp.state or {}
      table.insert(out, {
        file = path,
        line = bp.line,
        condition = bp.condition or vim.NIL,
        hit_condition = bp.hitCondition or vim.NIL,
        log_message = bp.logMessage or vim.NIL,
        verified = state.verified == nil and vim.NIL or state.verified,
        message = state.message or vim.NIL,
      })
    end
  end
  table.sort(out, function(a, b)
    return a.file < b.file or (a.file == b.file and a.line < b.line)
  end)
  return out
end

--- Send one buffer's breakpoints to every session; `done_fn` after the adapters answered.
local function push(buf, done_fn)
  local sessions = vim.tbl_values(dap.sessions())
  if #sessions == 0 then
    return done_fn()
  end
  local pending = #sessions
  for _, s in ipairs(sessions) do
    s:set_breakpoints({ [buf] = breakpoints.get(buf)[buf] or {} }, function()
      pending = pending - 1
      if pending == 0 then
        done_fn()
      end
    end)
  end
end

--- Set every breakpoint aside but one at `buf`:`line` (as nvim-dap's run_to_cursor does). Returns
--- the breakpoints to send to `session` now, and the function that puts the old ones back (once).
function M.only(session, buf, line)
  local before = breakpoints.get()
  breakpoints.clear()
  breakpoints.set({}, buf, line)
  local temp = breakpoints.get(buf)
  for b in pairs(before) do
    if b ~= buf then
      temp[b] = {} -- tells the adapter to drop that file's breakpoints
    end
  end
  local restored = false
  local function restore()
    if restored then
      return
    end
    restored = true
    breakpoints.clear()
    for b, list in pairs(before) do
      for _, bp in ipairs(list) do
        breakpoints.set(
          { condition = bp.condition, hit_condition = bp.hitCondition, log_message = bp.logMessage },
          b,
          bp.line
        )
      end
    end
    local all = breakpoints.get()
    all[buf] = all[buf] or {}
    if not session.closed then
      session:set_breakpoints(all)
    end
  end
  return temp, restore
end

--- Notes on what the adapter of session `s` cannot do of what `args` asks.
local function unsupported(s, args)
  local caps = s and s.capabilities or {}
  local notes = {}
  if s and args.condition and not caps.supportsConditionalBreakpoints then
    table.insert(notes, 'the adapter does not support conditions')
  end
  if s and args.hit_condition and not caps.supportsHitConditionalBreakpoints then
    table.insert(notes, 'the adapter does not support hit conditions')
  end
  if s and args.log_message and not caps.supportsLogPoints then
    table.insert(notes, 'the adapter does not support log points')
  end
  return notes
end

M.tools = {
  {
    name = 'dap_set_breakpoint',
    description = 'Set a breakpoint (optionally conditional, hit-conditional, or a log point) at a file and '
      .. "line; works for files not open in Neovim. Shows in the user's signs.",
    args = {
      filename = M.path_arg,
      line = M.line_arg,
      condition = { type = 'string' },
      hit_condition = { type = 'string' },
      log_message = { type = 'string' },
    },
    execute = function(args, done)
      local ok, buf, path = pcall(M.buffer, args.filename)
      if not ok then
        return done(nil, buf)
      end
      local count = vim.api.nvim_buf_line_count(buf)
      if args.line < 1 or args.line > count then
        return done(nil, ('line %d is outside %s (%d lines)'):format(args.line, path, count))
      end
      local s = dap.session()
      local notes = unsupported(s, args)
      breakpoints.set({
        condition = args.condition,
        hit_condition = args.hit_condition,
        log_message = args.log_message,
        replace = true,
      }, buf, args.line)
      push(buf, function()
        for _, bp in ipairs(M.list()) do
          if bp.file == path and bp.line == args.line then
            bp.notes = #notes > 0 and notes or vim.NIL
            bp.session = s and 'sent to the adapter' or 'no session yet: sent when one starts'
            return done(bp)
          end
        end
        done({ file = path, line = args.line })
      end)
    end,
  },
  {
    name = 'dap_remove_breakpoint',
    description = 'Remove the breakpoint at a file and line.',
    args = { filename = M.path_arg, line = M.line_arg },
    execute = function(args, done)
      local ok, buf, path = pcall(M.buffer, args.filename)
      if not ok then
        return done(nil, buf)
      end
      local had = false
      for _, bp in ipairs(breakpoints.get(buf)[buf] or {}) do
        had = had or bp.line == args.line
      end
      if not had then
        return done({ removed = false, message = ('no breakpoint at %s:%d'):format(path, args.line) })
      end
      breakpoints.remove(buf, args.line)
      push(buf, function()
        done({ removed = true, file = path, line = args.line })
      end)
    end,
  },
  {
    name = 'dap_clear_breakpoints',
    description = 'Remove every breakpoint.',
    args = {},
    execute = function()
      local n = #M.list()
      dap.clear_breakpoints()
      return { removed = n }
    end,
  },
  {
    name = 'dap_breakpoints',
    description = 'All breakpoints: file, line, condition, hit condition, log message, and whether the '
      .. 'adapter verified them.',
    read_only = true,
    args = {},
    execute = function()
      local list = M.list()
      return { count = #list, breakpoints = list }
    end,
  },
}

return M
