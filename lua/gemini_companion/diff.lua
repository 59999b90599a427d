-- Diff review for proposed edits (`openDiff`): the file as on disk (read-only) beside an
-- editable proposed buffer. `:w` in the proposed buffer accepts, closing it rejects.
-- The plugin never writes the file: Gemini CLI does, after `ide/diffAccepted`.
local bridge = require('gemini_companion.bridge')

local M = {}

local settings = { layout = 'vertical', new_tab = true, focus = true, keymaps = { accept = false, reject = false } }

---@class GeminiDiff
---@field path string exactly as the client sent it
---@field proposed integer buffer
---@field original integer buffer
---@field wins integer[] windows we created
---@field tab integer|nil tab we created
---@field prev_win integer window focused before
---@field prev_mode string
---@field dos boolean
---@field resolved boolean

---@type table<string, GeminiDiff>
local diffs = {}

function M.configure(opts)
  settings = vim.tbl_deep_extend('force', settings, opts or {})
end

local function emit(pattern, d)
  vim.api.nvim_exec_autocmds('User', {
    pattern = pattern,
    modeline = false,
    data = { path = d.path, proposed_buf = d.proposed, original_buf = d.original },
  })
end

--- Lines of `text`, whether it ended with a newline, and whether it used CRLF throughout.
local function split(text)
  local lines = vim.split(text, '\n', { plain = true })
  local eol = false
  if #lines > 1 and lines[#lines] == '' then
    table.remove(lines)
    eol = true
  end
  local dos = #lines > 0 and text ~= ''
  for _, l in ipairs(lines) do
    if l:sub(-1) ~= '\r' then
      dos = false
      break
    end
  end
  if dos then
    for i, l in ipairs(lines) do
      lines[i] = l:sub(1, -2)
    end
  end
  return lines, eol, dos
end

--- The proposed buffer's text as Neovim would write it ('eol'/'fixeol', 'fileformat').
local function buffer_text(d)
  local lines = vim.api.nvim_buf_get_lines(d.proposed, 0, -1, false)
  local nl = d.dos and '\r\n' or '\n'
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

local function teardown(d)
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
  if was_ours and vim.api.nvim_win_is_valid(d.prev_win) then
    pcall(vim.api.nvim_set_current_win, d.prev_win)
    if d.prev_mode == 't' and vim.bo[vim.api.nvim_win_get_buf(d.prev_win)].buftype == 'terminal' then
      vim.cmd('startinsert')
    end
  end
end

--- After an accept, Gemini CLI writes the file: reload the buffers showing it, unless they
--- hold unsaved changes (those are kept, and the user is told).
local function reload_when_written(path)
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
        bridge.notify(
          ('%s was changed on disk; your unsaved changes in buffer %d were kept (:e! to load the new text)'):format(
            vim.fn.fnamemodify(path, ':~:.'),
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

local function finish(d, outcome)
  if d.resolved then
    return
  end
  d.resolved = true
  if diffs[d.path] == d then
    diffs[d.path] = nil
  end
  local content = outcome == 'accepted' and buffer_text(d) or nil
  bridge.send({ type = 'diff', action = outcome, path = d.path, content = content })
  emit(outcome == 'accepted' and 'GeminiDiffAccepted' or 'GeminiDiffRejected', d)
  vim.schedule(function()
    teardown(d)
  end)
  if outcome == 'accepted' then
    reload_when_written(d.path)
  end
end

local function from_buffer(buf)
  for _, d in pairs(diffs) do
    if d.proposed == buf or d.original == buf then
      return d
    end
  end
end

--- The diff the user means: the one under the cursor, else the only one.
local function pick(path)
  if path and path ~= '' then
    return diffs[path]
  end
  local d = from_buffer(vim.api.nvim_get_current_buf())
  if d then
    return d
  end
  local only, count = nil, 0
  for _, x in pairs(diffs) do
    only, count = x, count + 1
  end
  return count == 1 and only or nil
end

--- Decide the diff for `path` (or the one the user means): 'accepted' or 'rejected'.
local function decide(path, outcome)
  local d = pick(path)
  if not d then
    local verb = outcome == 'accepted' and 'accept' or 'reject'
    bridge.notify(('no diff to %s here (:GeminiDiffs lists them)'):format(verb), 'warn')
    return false
  end
  finish(d, outcome)
  return true
end

function M.accept(path)
  return decide(path, 'accepted')
end

function M.reject(path)
  return decide(path, 'rejected')
end

function M.reject_all()
  local n = 0
  for _, d in pairs(diffs) do
    finish(d, 'rejected')
    n = n + 1
  end
  return n
end

function M.pending()
  local out = {}
  for path, d in pairs(diffs) do
    table.insert(out, { path = path, proposed_buf = d.proposed, original_buf = d.original })
  end
  table.sort(out, function(a, b)
    return a.path < b.path
  end)
  return out
end

--- Still shown anywhere? A proposed buffer that no window shows counts as closed.
local function check_closed(d)
  if d.resolved then
    return
  end
  if not vim.api.nvim_buf_is_valid(d.proposed) or #vim.fn.win_findbuf(d.proposed) == 0 then
    finish(d, 'rejected')
  end
end

local function scratch(name, lines, ft)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  pcall(vim.api.nvim_buf_set_name, buf, name)
  vim.bo[buf].bufhidden = 'wipe'
  if ft then
    vim.bo[buf].filetype = ft
  end
  vim.bo[buf].modifiable = false
  vim.bo[buf].readonly = true
  vim.b[buf].gemini_diff = { role = 'original' }
  return buf
end

--- Open a review of `content` for `path`. Returns {ok=true} or {ok=false, error=...}.
function M.open(path, content)
  if diffs[path] then
    -- A new proposal for the same file replaces the old one (Python rejects the old one).
    local old = diffs[path]
    old.resolved = true
    diffs[path] = nil
    teardown(old)
  end
  local exists = vim.uv.fs_stat(path) ~= nil
  local disk_lines = {}
  if exists then
    -- Checked and read here, as Neovim sees the path (/proc/self/fd/N is Neovim's own), with a
    -- byte limit: a pipe, a device or a huge file must not hang or exhaust Neovim.
    local ok, read = pcall(require('gemini_companion.builtin.util').read_file, path)
    if not ok then
      return { ok = false, error = read }
    end
    disk_lines = split(read)
  end
  local lines, eol, dos = split(content)
  local ft = vim.filetype.match({ filename = path })
  local user_buf = find_buf(path)

  local prev_win = vim.api.nvim_get_current_win()
  local prev_mode = vim.api.nvim_get_mode().mode
  local original = scratch(path .. (exists and ' (on disk)' or ' (does not exist yet)'), disk_lines, ft)

  local proposed = vim.api.nvim_create_buf(false, false)
  vim.bo[proposed].buftype = 'acwrite'
  vim.bo[proposed].bufhidden = 'wipe'
  vim.bo[proposed].swapfile = false
  vim.api.nvim_buf_set_lines(proposed, 0, -1, false, lines)
  pcall(vim.api.nvim_buf_set_name, proposed, path .. (exists and ' (proposed)' or ' (new file)'))
  vim.bo[proposed].eol = eol
  vim.bo[proposed].fixeol = user_buf and vim.bo[user_buf].fixeol or vim.go.fixeol
  if ft then
    vim.bo[proposed].filetype = ft
  end
  vim.bo[proposed].modified = false
  vim.b[proposed].gemini_diff = { role = 'proposed', path = path }

  local d = {
    path = path,
    proposed = proposed,
    original = original,
    wins = {},
    prev_win = prev_win,
    prev_mode = prev_mode,
    dos = dos,
    resolved = false,
  }

  local vertical = settings.layout ~= 'horizontal'
  local ok, err = pcall(function()
    local left
    if settings.new_tab then
      vim.cmd('tabnew')
      left = vim.api.nvim_get_current_win()
      local placeholder = vim.api.nvim_get_current_buf()
      vim.bo[placeholder].bufhidden = 'wipe'
      vim.api.nvim_win_set_buf(left, original)
      d.tab = vim.api.nvim_get_current_tabpage()
    else
      left = vim.api.nvim_open_win(original, true, { split = vertical and 'right' or 'below', win = -1 })
    end
    local right = vim.api.nvim_open_win(proposed, true, { split = vertical and 'right' or 'below', win = left })
    d.wins = { left, right }
    for _, win in ipairs(d.wins) do
      vim.api.nvim_win_call(win, function()
        vim.cmd('diffthis')
      end)
    end
  end)
  if not ok then
    d.resolved = true
    teardown(d)
    return { ok = false, error = tostring(err) }
  end
  diffs[path] = d

  local group = vim.api.nvim_create_augroup('gemini_companion_diff_' .. proposed, { clear = true })
  vim.api.nvim_create_autocmd('BufWriteCmd', {
    group = group,
    buffer = proposed,
    callback = function()
      finish(d, 'accepted')
      -- Written, as far as Neovim is concerned (so `:wq` works).
      vim.bo[proposed].modified = false
    end,
  })
  vim.api.nvim_create_autocmd({ 'BufDelete', 'BufWipeout', 'BufUnload' }, {
    group = group,
    buffer = proposed,
    callback = function()
      if not d.resolved then
        finish(d, 'rejected')
      end
    end,
  })
  vim.api.nvim_create_autocmd('BufWinLeave', {
    group = group,
    buffer = proposed,
    callback = function()
      -- After the window is gone: is the proposal still shown somewhere?
      vim.schedule(function()
        check_closed(d)
      end)
    end,
  })
  for action, lhs in pairs(settings.keymaps or {}) do
    if lhs and lhs ~= '' then
      vim.keymap.set('n', lhs, function()
        if action == 'accept' then
          finish(d, 'accepted')
        else
          finish(d, 'rejected')
        end
      end, { buffer = proposed, desc = 'Gemini: ' .. action .. ' this diff' })
    end
  end

  if settings.focus then
    vim.api.nvim_set_current_win(d.wins[2])
    pcall(vim.cmd, 'normal! gg]c')
  elseif vim.api.nvim_win_is_valid(prev_win) then
    vim.api.nvim_set_current_win(prev_win)
    if prev_mode == 't' then
      vim.cmd('startinsert')
    end
  end
  emit('GeminiDiffOpened', d)
  return { ok = true }
end

--- Close every view silently (the server stopped: nobody is waiting for an answer).
function M.close_all()
  for path in pairs(diffs) do
    M.close(path)
  end
end

--- Close silently (the client decided, e.g. in its own prompt) and return the proposed text.
function M.close(path)
  local d = diffs[path]
  if not d then
    return { found = false }
  end
  local text = buffer_text(d)
  d.resolved = true
  diffs[path] = nil
  teardown(d)
  return { found = true, content = text }
end

return M
