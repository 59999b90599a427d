-- Editor context for Gemini CLI (`ide/contextUpdate`): recently focused files, the active
-- file's cursor and selection. Debounced here; Python validates and fans out per client.

local to_host = require('gemini_companion.to_host')
local M = {}

-- The validated `context` settings (config.py owns them and their defaults; Python sends them with
-- every start, see M.start), plus `max_selection_chars`, agents/gemini/context.py's cap on a selection.
local settings = nil ---@type table|nil
local group = nil
local focus = {} ---@type table<integer, integer> bufnr -> epoch ms of last focus
local active = nil ---@type integer|nil the last focused file buffer
local cursors = {} ---@type table<integer, {line: integer, character: integer}>
---@type {buf: integer, text: string, expires: number|nil}|nil a selection kept after leaving Visual mode
local kept = nil
local timer = nil
local last_sent = nil
---@type {path: string, text: string, selection: table}|nil the last non-empty selection seen
M.latest_selection = nil

local VISUAL = { v = true, V = true, ['\22'] = true }

local function epoch_ms()
  local sec, usec = vim.uv.gettimeofday()
  return sec * 1000 + math.floor(usec / 1000)
end

--- A buffer Gemini may hear about: a real file on disk, not a terminal/help/quickfix/scratch/diff.
function M.eligible(buf)
  if not buf or not vim.api.nvim_buf_is_valid(buf) then
    return false
  end
  if vim.bo[buf].buftype ~= '' or vim.b[buf].gemini_diff then
    return false
  end
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' or name:match('^%a[%w+.-]*://') then
    return false
  end
  local stat = vim.uv.fs_stat(name)
  return stat ~= nil and stat.type == 'file'
end

local function cut(text)
  -- Cut here too, so a huge selection never crosses the RPC channel.
  local max = settings.max_selection_chars
  if vim.fn.strchars(text) > max then
    return vim.fn.strcharpart(text, 0, max)
  end
  return text
end

-- Lines read at a time while finding where a selection's first max_selection_chars end.
local CLAMP_STEP = 256

--- The text from `a` to `b` (getpos() positions) of a `mode` selection, read only as far as the
--- first max_selection_chars reach: a 10 MB selection read whole on every cursor move, then cut,
--- stalled Neovim for tens of milliseconds a move.
local function region(a, b, mode)
  if a[2] > b[2] or (a[2] == b[2] and a[3] > b[3]) then
    a, b = b, a
  end
  local max, chars, line = settings.max_selection_chars, 0, a[2]
  while line < b[2] and chars <= max do
    local chunk = vim.api.nvim_buf_get_lines(0, line - 1, math.min(line - 1 + CLAMP_STEP, b[2] - 1), false)
    for _, l in ipairs(chunk) do
      if mode == '\22' then
        l = '' -- a block's line may give no more than its line break: count that
      elseif mode == 'v' and line == a[2] then
        l = l:sub(a[3])
      end
      chars, line = chars + vim.fn.strchars(l) + 1, line + 1
      if chars > max then
        break
      end
    end
  end
  if chars > max and line - 1 < b[2] then -- the cap is reached on line - 1: stop there (a block keeps its edge)
    b = { b[1], line - 1, mode == '\22' and b[3] or vim.v.maxcol, 0 }
  end
  local ok, lines = pcall(vim.fn.getregion, a, b, { type = mode })
  return ok and cut(table.concat(lines, '\n')) or nil
end

--- The text of the Visual selection in the current window, or nil.
function M.live_selection()
  local mode = vim.api.nvim_get_mode().mode
  if not VISUAL[mode] then
    return nil
  end
  return region(vim.fn.getpos('v'), vim.fn.getpos('.'), mode)
end

--- Where a selection from `a` to `b` (getpos() positions) lies: 0-based, end exclusive (Claude
--- Code's `selection_changed`; Gemini gets only the text).
local function span(a, b, mode)
  if a[2] > b[2] or (a[2] == b[2] and a[3] > b[3]) then
    a, b = b, a
  end
  local last = vim.fn.getline(b[2])
  if mode == 'V' then
    return { start = { line = a[2] - 1, character = 0 }, ['end'] = { line = b[2] - 1, character = #last } }
  end
  return {
    start = { line = a[2] - 1, character = a[3] - 1 },
    ['end'] = { line = b[2] - 1, character = math.min(b[3], #last) },
  }
end

local function live_span()
  local mode = vim.api.nvim_get_mode().mode
  return VISUAL[mode] and span(vim.fn.getpos('v'), vim.fn.getpos('.'), mode) or nil
end

local function last_selection()
  local a, b, mode = vim.fn.getpos("'<"), vim.fn.getpos("'>"), vim.fn.visualmode()
  return region(a, b, mode), span(a, b, mode)
end

local function live_cursor(win)
  local pos = vim.api.nvim_win_get_cursor(win)
  return { line = pos[1], character = pos[2] + 1 }
end

--- The full snapshot (what Python turns into `ide/contextUpdate`).
function M.snapshot()
  local cur = vim.api.nvim_get_current_buf()
  local files = {}
  for buf, ts in pairs(focus) do
    if M.eligible(buf) then
      local entry = { path = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':p'), timestamp = ts }
      if buf == active then
        entry.isActive = true
        entry.cursor = buf == cur and live_cursor(0) or cursors[buf]
        local text = buf == cur and M.live_selection() or nil
        local where = text and live_span()
        if not text and kept and kept.buf == buf then
          text, where = kept.text, kept.span
        end
        if text and text ~= '' then
          entry.selectedText, entry.selection = text, where
          M.latest_selection = { path = entry.path, text = text, selection = where }
        end
      end
      table.insert(files, entry)
    end
  end
  table.sort(files, function(a, b)
    return a.timestamp > b.timestamp
  end)
  while #files > settings.max_files do
    table.remove(files)
  end
  return { openFiles = files }
end

local function send()
  local snap = M.snapshot()
  if last_sent and vim.deep_equal(snap, last_sent) then
    return
  end
  last_sent = snap
  to_host.send_context(snap)
end

--- Debounced update (every editor event ends here).
function M.schedule()
  if not group then
    return
  end
  timer = timer or vim.uv.new_timer()
  timer:stop()
  timer:start(settings.debounce_ms, 0, vim.schedule_wrap(send))
end

local function on_focus()
  local buf = vim.api.nvim_get_current_buf()
  if M.eligible(buf) then
    if buf ~= active then
      kept = nil
    end
    focus[buf] = epoch_ms()
    active = buf
  end
  M.schedule()
end

local function on_gone(args)
  focus[args.buf] = nil
  cursors[args.buf] = nil
  if kept and kept.buf == args.buf then
    kept = nil
  end
  if active == args.buf then
    active = nil
    local best = -1
    for buf, ts in pairs(focus) do
      if ts > best and buf ~= args.buf then
        active, best = buf, ts
      end
    end
  end
  M.schedule()
end

local function on_cursor()
  local buf = vim.api.nvim_get_current_buf()
  if buf == active then
    cursors[buf] = live_cursor(0)
    -- A kept selection goes once the user moves on in that file (after the demotion delay).
    if kept and kept.buf == buf and (not kept.expires or vim.uv.now() >= kept.expires) then
      kept = nil
    end
  end
  M.schedule()
end

local function on_visual_left()
  local buf = vim.api.nvim_get_current_buf()
  if buf ~= active then
    return
  end
  -- Read it now: a quick `Vy` would otherwise end before the debounce reads anything.
  local text, where = last_selection()
  if not text or text == '' then
    return
  end
  local path = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':p')
  M.latest_selection = { path = path, text = text, selection = where }
  kept = { buf = buf, text = text, span = where, expires = vim.uv.now() + settings.selection_demotion_ms }
  M.schedule()
  vim.defer_fn(function()
    if kept and kept.buf == buf and vim.api.nvim_get_current_buf() == buf then
      -- Still in the file, no longer selecting: the selection is over.
      kept = nil
      M.schedule()
    elseif kept then
      -- The user went elsewhere (e.g. to the gemini terminal): keep it until they return.
      kept.expires = nil
    end
  end, settings.selection_demotion_ms)
end

--- Track the editor with `opts`, the validated `context` settings from Python (bridge.on_ready).
function M.start(opts)
  settings = opts
  M.stop()
  if not settings.enabled then
    return
  end
  group = vim.api.nvim_create_augroup('gemini_companion_context', { clear = true })
  local au = function(events, fn, pattern)
    vim.api.nvim_create_autocmd(events, { group = group, pattern = pattern, callback = fn })
  end
  au({ 'BufEnter', 'WinEnter', 'BufWritePost', 'BufFilePost' }, on_focus)
  au({ 'BufDelete', 'BufWipeout' }, on_gone)
  au({ 'CursorMoved', 'CursorMovedI' }, on_cursor)
  au('ModeChanged', on_visual_left, { 'v:*', 'V:*', '\22:*' })
  au('ModeChanged', M.schedule, { '*:v', '*:V', '*:\22' })
  au('FocusGained', M.schedule)
  on_focus()
  send()
end

--- Context is tracked (the server runs with context.enabled).
function M.running()
  return group ~= nil
end

function M.stop()
  if group then
    pcall(vim.api.nvim_del_augroup_by_id, group)
    group = nil
  end
  if timer then
    timer:stop()
  end
  last_sent = nil
end

return M
