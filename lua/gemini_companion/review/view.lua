-- The views of a diff review (see review/init.lua): the read-only "on disk" buffer, the editable
-- proposal, their windows, the text as Neovim would write it, and closing it all again.
local notify = require('gemini_companion.notify')
local hunks = require('gemini_companion.text.hunks')
local lines_of = require('gemini_companion.text.lines')
local paths = require('gemini_companion.text.paths')
local fill = require('gemini_companion.review.fill')

local M = {}

--- Whether `path` exists and its size, or nil and why it cannot be reviewed. The one check of a
--- client's path (both protocols' openDiff reach here, and every accept): a plain file, never a
--- URL, a FIFO or /proc, in the workspace with tools.restrict_to_workspace.
function M.disk(path)
  local checked, why = pcall(require('gemini_companion.builtin.util').client_path, path)
  if not checked then
    return nil, why
  end
  local stat = vim.uv.fs_stat(path)
  return stat ~= nil, stat and stat.size or 0
end

--- The file M.disk checked (`exists`: its answer), read: its text ('' when it does not exist)
--- and whether it exists, or nil and why it cannot be read. Read here, as Neovim sees the path
--- (/proc/self/fd/N is Neovim's own), with a byte limit: a pipe, a device or a huge file must not
--- hang or exhaust Neovim.
function M.read_checked(path, exists)
  if not exists then
    return '', false
  end
  local ok, text = pcall(require('gemini_companion.builtin.util').read_file, path)
  if not ok then
    return nil, text
  end
  return text, true
end

--- The file as on disk: M.read_checked after M.disk.
function M.read_disk(path)
  local exists, why = M.disk(path)
  if exists == nil then
    return nil, why
  end
  return M.read_checked(path, exists)
end

--- M.read_checked off the main loop: `done(text, exists)` or `done(nil, why)`.
function M.read_disk_async(path, exists, done)
  if not exists then
    return done('', false)
  end
  require('gemini_companion.builtin.util').read_file_async(path, function(text, why)
    done(text, text and true or why)
  end)
end

--- Make `text` (the file on disk; '' when it does not `exists`) what review `d` compares with.
--- Returns its lines; `big`: not cut into lines (review/fill.lua does that in slices), returns
--- nil and whether it is CRLF throughout.
function M.set_disk(d, text, exists, big)
  local lines, eol, dos
  if big then
    eol, dos = fill.shape(text)
    d.old_text = fill.compare_text(text, eol, dos)
  else
    lines, eol, dos = lines_of.split(text)
    d.old_text = hunks.text(lines)
  end
  d.disk_text, d.exists = text, exists
  d.disk_eol = eol or not exists
  d.disk_ff = lines_of.fileformat(text, dos)
  d.hunks_tick = nil -- the hunks are computed again
  return lines, dos
end

--- The proposed buffer's text as Neovim would write it ('eol'/'fixeol', 'fileformat').
function M.buffer_text(d)
  local lines = vim.api.nvim_buf_get_lines(d.proposed, 0, -1, false)
  local nl = vim.bo[d.proposed].fileformat == 'dos' and '\r\n' or '\n'
  if #lines == 1 and lines[1] == '' then
    -- Like :w: a buffer with no line at all (the user deleted everything) is written empty; one
    -- empty line is a newline if it had one (a proposal of "\n").
    local no_line = vim.api.nvim_buf_call(d.proposed, function()
      return vim.fn.wordcount().bytes == 0
    end)
    return (vim.bo[d.proposed].eol and not no_line) and nl or ''
  end
  local text = table.concat(lines, nl)
  if vim.bo[d.proposed].eol or vim.bo[d.proposed].fixeol then
    text = text .. nl
  end
  return text
end

local function find_buf(path)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.api.nvim_buf_get_name(buf) == path then
      return buf
    end
  end
end

--- Name `buf` `name`, or `name [2]`, `[3]`… if a buffer has it already (an unnamed proposal
--- could not be written: E32). Returns the name given.
function M.set_unique_name(buf, name)
  local candidate = name
  for n = 2, 1000 do
    if pcall(vim.api.nvim_buf_set_name, buf, candidate) then
      return candidate
    end
    candidate = ('%s [%d]'):format(name, n)
  end
end

-- Diff mode needs "hor" in the global 'scrollopt' (:diffthis adds it too); we take back only
-- the "hor" we added, once no diff is left anywhere.
local added_hor = false

--- Whether any of `wins` is in diff mode.
local function any_diff(wins)
  return vim.iter(wins):any(function(win)
    return vim.wo[win].diff
  end)
end

function M.teardown(d)
  local current = vim.api.nvim_get_current_win()
  local was_ours = vim.tbl_contains(d.wins, current)
  for _, win in ipairs(d.wins) do
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_call(win, function()
        vim.cmd('diffoff')
      end)
      if not pcall(vim.api.nvim_win_close, win, true) then
        -- The last window of Neovim: show an empty buffer instead of quitting.
        local empty = vim.api.nvim_create_buf(true, false)
        pcall(vim.api.nvim_win_set_buf, win, empty)
      end
    end
  end
  for _, buf in ipairs({ d.proposed, d.original }) do
    if vim.api.nvim_buf_is_valid(buf) then
      pcall(vim.api.nvim_buf_delete, buf, { force = true })
    end
  end
  pcall(vim.api.nvim_del_augroup_by_name, 'gemini_companion_diff_' .. d.proposed)
  -- Both texts go now (a big review's are tens of MB each), whoever still holds the record.
  d.disk_text, d.old_text, d.content, d.hunks, d.hunks_tick, d.marking = nil, nil, nil, {}, nil, nil
  if d.big then
    fill.collect()
  end
  if d.had_hor and not vim.o.scrollopt:find('hor') then
    vim.opt.scrollopt:append('hor') -- Neovim drops it when the last diff window of a tab goes
  end
  if added_hor and not any_diff(vim.api.nvim_list_wins()) then
    vim.opt.scrollopt:remove('hor')
    added_hor = false
  end
  if was_ours and vim.api.nvim_win_is_valid(d.prev_win) then
    pcall(vim.api.nvim_set_current_win, d.prev_win)
    if d.prev_mode == 't' and vim.bo[vim.api.nvim_win_get_buf(d.prev_win)].buftype == 'terminal' then
      if d.decision then
        -- Entering Terminal mode draws -- TERMINAL -- over the decision's line: say it again after.
        vim.api.nvim_create_autocmd('ModeChanged', {
          pattern = '*:t',
          once = true,
          callback = function()
            -- After the redraw that shows the mode (a scheduled echo came before it, and was lost).
            vim.defer_fn(function()
              vim.api.nvim_echo({ { 'gemini-companion: ' .. d.decision } }, false, {})
            end, 50)
          end,
        })
      end
      vim.cmd('startinsert')
    end
  end
end

--- Tear `d` down once the current command is done; a big review's (wiping two 1 M-line buffers,
--- ~15 ms) in a turn of the event loop of its own (a timer: clients waiting are answered first).
--- `after()`, if given, runs once it is torn down.
function M.teardown_soon(d, after)
  local later = d.big and function(f)
    vim.defer_fn(f, 0)
  end or vim.schedule
  later(function()
    M.teardown(d)
    if after then
      after()
    end
  end)
end

--- After an accept, Gemini CLI writes the file: reload the buffers showing it, unless they
--- hold unsaved changes (those are kept, and the user is told).
function M.reload_when_written(path)
  local before = vim.uv.fs_stat(path)
  local tries = 0
  local timer = vim.uv.new_timer()
  timer:start(
    100,
    100,
    vim.schedule_wrap(function()
      tries = tries + 1
      local now = vim.uv.fs_stat(path)
      local changed = now
        and (
          not before
          or now.mtime.sec ~= before.mtime.sec
          or now.mtime.nsec ~= before.mtime.nsec
          or now.size ~= before.size
        )
      if not changed and tries < 100 then
        return
      end
      timer:stop()
      timer:close()
      if not changed then
        return
      end
      local buf = find_buf(path)
      if not buf then
        return
      end
      if vim.bo[buf].modified then
        notify.say(
          ('%s was changed on disk; your unsaved changes in buffer %d were kept (:e! to load the new text)'):format(
            paths.shown(path),
            buf
          ),
          'warn'
        )
        return
      end
      local autoread = vim.bo[buf].autoread
      vim.bo[buf].autoread = true
      pcall(vim.cmd.checktime, buf)
      vim.bo[buf].autoread = autoread
    end)
  )
end

--- The read-only on-disk side; `lines` nil: left empty (review/fill.lua fills it, then the
--- filetype is set).
function M.original_buffer(name, lines, ft, ff)
  local buf = vim.api.nvim_create_buf(false, true)
  if lines then
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  end
  M.set_unique_name(buf, name)
  vim.bo[buf].fileformat = ff or 'unix' -- shown in the status line: [dos]
  vim.bo[buf].bufhidden = 'wipe'
  if ft and lines then
    vim.bo[buf].filetype = ft
  end
  vim.bo[buf].modifiable = false
  vim.bo[buf].readonly = true
  vim.b[buf].gemini_diff = { role = 'original' }
  return buf
end

--- The proposal's buffer, written with the file's line ends (the proposal's own for a file without
--- any). Returns it, its lines and the proposal's own line ends (nil: no line break), and whether
--- it is CRLF throughout. `big`: left empty and unmodifiable, with no undo and no filetype, for
--- review/fill.lua to fill (then M.filled); its lines are nil.
function M.proposal_buffer(d, content, exists, ft, big)
  local lines, eol, dos
  if big then
    eol, dos = fill.shape(content)
  else
    lines, eol, dos = lines_of.split(content)
  end
  local user_buf = find_buf(d.key)
  local buf = vim.api.nvim_create_buf(false, false)
  vim.bo[buf].buftype = 'acwrite'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  vim.bo[buf].undolevels = -1 -- `u` must not go back to an empty buffer
  if not big then
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    vim.bo[buf].undolevels = -123456 -- back to the global value
  end
  d.name = M.set_unique_name(buf, d.key .. (exists and ' (proposed)' or ' (new file)'))
  local proposal_ff = lines_of.fileformat(content, dos)
  vim.bo[buf].fileformat = d.disk_ff or proposal_ff or 'unix'
  vim.bo[buf].eol = eol
  vim.bo[buf].fixeol = user_buf and vim.bo[user_buf].fixeol or vim.go.fixeol
  if ft and not big then
    vim.bo[buf].filetype = ft
  end
  vim.bo[buf].modified = false
  vim.bo[buf].modifiable = not big
  vim.b[buf].gemini_diff = { role = 'proposed', path = d.key }
  return buf, lines, proposal_ff, dos
end

--- A big review's file was read (after its buffers were made): they take its line ends.
function M.disk_line_ends(d)
  for _, buf in ipairs({ d.proposed, d.original }) do
    if d.disk_ff and vim.api.nvim_buf_is_valid(buf) then
      local bo = vim.bo[buf]
      local modifiable, readonly = bo.modifiable, bo.readonly
      bo.modifiable, bo.readonly = true, false
      bo.fileformat = d.disk_ff
      bo.modifiable, bo.readonly, bo.modified = modifiable, readonly, false
    end
  end
end

--- A big review's buffers are filled (review/fill.lua): editable, with undo and filetypes, as
--- M.proposal_buffer and M.original_buffer make them at once for smaller ones.
function M.filled(d, ft)
  local bo = vim.bo[d.proposed]
  bo.modifiable = true
  bo.undolevels = -123456 -- back to the global value
  if ft then
    bo.filetype = ft
    if d.original and vim.api.nvim_buf_is_valid(d.original) then
      vim.bo[d.original].filetype = ft
    end
  end
  bo.modified = false
end

--- The file changed on disk during review `d`: it now compares with `text` (the hunks follow).
function M.refresh_disk(d, text, exists)
  local old_ff = d.disk_ff
  local lines = M.set_disk(d, text, exists)
  if d.disk_ff and vim.bo[d.proposed].fileformat == old_ff then
    vim.bo[d.proposed].fileformat = d.disk_ff -- the line ends still follow the file's
    vim.bo[d.proposed].modified = false
  end
  if d.compare then
    d.compare() -- a big review: its hunks are found again off the main loop (review/fill.lua)
  elseif not d.original then
    require('gemini_companion.review.unified').render(d)
  end
  if d.original and vim.api.nvim_buf_is_valid(d.original) then
    local buf = d.original
    vim.bo[buf].modifiable = true
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    vim.bo[buf].fileformat = d.disk_ff or 'unix'
    vim.bo[buf].modifiable = false
    vim.bo[buf].modified = false
    local name = d.key .. (exists and ' (on disk)' or ' (deleted on disk)')
    if vim.api.nvim_buf_get_name(buf) ~= name then
      M.set_unique_name(buf, name)
    end
  end
end

--- Larger reviews open without diff folds (`:setlocal foldmethod=diff` adds them).
M.FOLD_MAX_LINES = 20000

--- What `:diffthis` does to a window, with its folds only for `folds`: Neovim computes diff
--- folds line by line against every hunk, which was ~100 of the ~150 ms a 50 000-line review
--- took to appear (bench/diff_steps.lua); setting 'diff' itself only runs the diff (~15 ms).
local function diff_window(win, folds)
  local wo = vim.wo[win][0] -- local to the window, as :diffthis sets them: never the user's global values
  wo.scrollbind = true
  wo.cursorbind = true
  if not vim.o.diffopt:find('followwrap') then
    wo.wrap = false
  end
  if folds then
    wo.foldmethod = 'diff'
    wo.foldcolumn = vim.o.diffopt:match('foldcolumn:(%d+)') or '2'
    wo.foldenable = true
    wo.foldlevel = 0
  end
  if not vim.o.scrollopt:find('hor') then
    vim.opt.scrollopt:append('hor')
    added_hor = true
  end
  wo.diff = true
end

--- `lines`: the on-disk and proposed lines, to draw the unified layout without reading them back.
--- Diff mode in `wins`, with diff folds if `folds`.
function M.diff_windows(wins, folds)
  for _, win in ipairs(wins) do
    diff_window(win, folds)
  end
end

--- The review's windows, made without entering them: the keys the user types stay theirs.
--- A tab of its own (settings.new_tab, or when the user's tab has a diff of its own: a third
--- buffer in diff mode would break their `:diffget`, E101), else splits in the current tab.
function M.open_windows(d, settings, lines)
  local split = settings.layout ~= 'horizontal' and 'right' or 'below'
  local left
  local first = d.original or d.proposed -- the unified layout has no on-disk buffer
  if settings.new_tab or any_diff(vim.api.nvim_tabpage_list_wins(0)) then
    -- `:tab sbuffer` of the review's own buffer, not `:tabnew`: the empty buffer `:tabnew` makes
    -- would end the user's Insert's undo step (typed on, their text takes two `u` to undo).
    vim.api.nvim_win_call(0, function()
      vim.cmd('tab sbuffer ' .. first)
      left = vim.api.nvim_get_current_win()
    end)
  else
    left = vim.api.nvim_open_win(first, false, { split = split, win = -1 })
  end
  if not d.original then
    d.wins = { left }
    if not d.filling then -- a big review's hunks are drawn once it is filled
      require('gemini_companion.review.unified').start(d, lines)
    end
    return
  end
  local right = vim.api.nvim_open_win(d.proposed, false, { split = split, win = left })
  local tab = vim.api.nvim_win_get_tabpage(right)
  if tab ~= vim.api.nvim_get_current_tabpage() then
    vim.api.nvim_tabpage_set_win(tab, right) -- going to the tab lands in the proposal
  end
  d.wins = { left, right }
  d.had_hor = vim.o.scrollopt:find('hor') ~= nil
  if not d.filling then -- a big review's diff mode comes once it is filled (M.diff_mode)
    M.diff_mode(d)
  end
end

--- Diff mode in the review's windows (Neovim compares the two buffers as it is set).
function M.diff_mode(d)
  M.diff_windows(d.wins, vim.api.nvim_buf_line_count(d.proposed) <= M.FOLD_MAX_LINES)
end

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
