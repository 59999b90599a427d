-- Where a review puts the user (see review/init.lua): the proposal's window on its first change
-- (found by comparing the two texts, by memcmp where LuaJIT has it), and focus only when the user
-- is not typing (in the agent's terminal: once they pause).
local notify = require('gemini_companion.notify')
local paths = require('gemini_companion.text.paths')

local M = {}

--- Is the user in the middle of something their next keys finish (Insert, Visual, Replace, the
--- command line, a pending operator or count)? Only Normal and Terminal mode may be left.
local function typing(mode)
  return mode.blocking or not (mode.mode == 'n' or mode.mode == 'nt' or mode.mode == 't')
end

-- LuaJIT's FFI where there is one (the common start of two texts without copying them).
local ffi = (function()
  local ok, lib = pcall(require, 'ffi')
  if ok then
    pcall(lib.cdef, 'int memcmp(const void *a, const void *b, size_t n);')
    return lib
  end
end)()

--- How many bytes `a` and `b` start with alike, compared 4 KiB at a time. By memcmp where LuaJIT
--- has it: copies (`sub`) of a 22 MB text 4 KiB at a time filled ~40 MiB of LuaJIT's segments
--- that a few live objects then kept (measured).
local function same_start(a, b)
  local n, at, step = math.min(#a, #b), 0, 4096
  if ffi then
    local pa, pb = ffi.cast('const char *', a), ffi.cast('const char *', b)
    while at + step <= n and ffi.C.memcmp(pa + at, pb + at, step) == 0 do
      at = at + step
    end
  else
    while at + step <= n and a:sub(at + 1, at + step) == b:sub(at + 1, at + step) do
      at = at + step
    end
  end
  while at < n and a:byte(at + 1) == b:byte(at + 1) do
    at = at + 1
  end
  return at
end

--- The row (1-based) of the first change in `new` (the proposal's text as shown), nil when it is
--- the disk text. A scan of the two texts: computing every hunk of a big file to find the first
--- took ~20 ms (50 000 lines).
local function first_change_row(d, new)
  local old = d.old_text
  if old == new then
    return nil
  end
  local _, breaks = new:sub(1, same_start(old, new)):gsub('\n', '')
  return math.max(1, math.min(breaks + 1, vim.api.nvim_buf_line_count(d.proposed)))
end

--- The cursor of the proposal's window on its first change; `proposed_text`: the proposal's text
--- as shown.
function M.to_first_change(d, proposed_text)
  local win = d.wins[#d.wins]
  local first = first_change_row(d, proposed_text)
  if first and vim.api.nvim_win_is_valid(win) then
    vim.api.nvim_win_set_cursor(win, { first, 0 })
  end
end

--- The proposal's window on its first change; go there if settings.focus and the user is not
--- typing (`mode`: nvim_get_mode() as the review arrived), else say where the review is.
--- `proposed_text`: the proposal's text as just shown (nil: still filling; M.to_first_change
--- comes later).
function M.focus(d, settings, mode, proposed_text)
  local win = d.wins[#d.wins]
  if proposed_text then
    M.to_first_change(d, proposed_text)
  end
  if settings.focus and mode.mode == 't' and require('gemini_companion.typing').recent() then
    -- Typing in a terminal (the agent's): keys still in flight would land in the review. Focus
    -- once they pause, if the review is still there and they are still where they were.
    local from = vim.api.nvim_get_current_win()
    require('gemini_companion.typing').after_pause(function()
      if vim.api.nvim_win_is_valid(win) and vim.api.nvim_get_current_win() == from then
        vim.api.nvim_set_current_win(win)
      end
    end)
    return
  end
  if settings.focus and not typing(mode) then
    vim.api.nvim_set_current_win(win)
    return
  end
  if mode.mode:match('^[vVsS\22\19]') and vim.api.nvim_get_mode().mode ~= mode.mode then
    -- `:tabnew` ended their Visual or Select mode: back to it, as it was.
    vim.cmd('normal! gv' .. (mode.mode:match('^[sS\19]') and '\7' or ''))
  end
  if settings.focus then
    local tab = vim.api.nvim_win_get_tabpage(win)
    notify.say(('review of %s opened in tab %d'):format(paths.shown(d.key), vim.api.nvim_tabpage_get_number(tab)))
  end
end

return M
