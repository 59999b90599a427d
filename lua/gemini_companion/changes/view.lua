-- :GeminiChanges: the command, its quickfix list, and the view of one file: the text before
-- (read-only) beside the file's own buffer, with the review keys on that buffer to put earlier text
-- back through an undoable write. changes/init.lua (the model) keeps the baselines and finds the
-- changes; it knows nothing of this view.
local notify = require('gemini_companion.notify')
local changes = require('gemini_companion.changes')
local snapshot = require('gemini_companion.changes.snapshot')
local hunks = require('gemini_companion.text.hunks')
local paths = require('gemini_companion.text.paths')

local M = {}

--- The quickfix list's title: the view follows :cnext in this list only.
M.QF_TITLE = 'Gemini: changed without a review'

--- Close view `v`'s tab (wherever the cursor went meanwhile).
local function close(v)
  if vim.api.nvim_win_is_valid(v.left) then
    local tab = vim.api.nvim_win_get_tabpage(v.left)
    pcall(vim.cmd.tabclose, vim.api.nvim_tabpage_get_number(tab))
  end
end

--- A file new since the snapshot, all of it dropped: delete it once the user answers yes (a
--- deletion cannot be undone with `u`; anything else leaves it as it is).
local function remove(path, buf, v)
  local shown = paths.shown(path)
  if not notify.yes(('Delete %s (created without a review)?'):format(shown)) then
    return
  elseif vim.fn.delete(path) ~= 0 then
    return notify.say(('could not delete %s'):format(shown), 'error')
  end
  changes.deleted(path)
  close(v)
  pcall(vim.api.nvim_buf_delete, buf, {})
  notify.say(('deleted %s'):format(shown))
end

--- The bytes :write puts on disk for `buf`: its lines with its 'fileformat' line ends, a last one
--- as 'endofline'/'fixendofline' say, in its 'fileencoding' (with a BOM if 'bomb'); or nil and why.
function M.file_bytes(buf)
  local bo, lines = vim.bo[buf], vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  if #lines == 1 and lines[1] == '' and vim.api.nvim_buf_call(buf, vim.fn.wordcount).bytes == 0 then
    return '' -- (no line at all, not one empty line: :write writes nothing)
  end
  local nl = ({ dos = '\r\n', mac = '\r' })[bo.fileformat] or '\n'
  local last = (bo.endofline or (bo.fixendofline and not bo.binary)) and nl or ''
  local data = table.concat(lines, nl) .. last
  local fenc = bo.fileencoding ~= '' and bo.fileencoding or 'utf-8'
  if bo.bomb and (fenc:match('^utf') or fenc:match('^ucs')) then
    data = '\239\187\191' .. data -- U+FEFF, in the file's encoding below
  end
  if fenc ~= 'utf-8' and fenc ~= 'utf8' then
    data = vim.iconv(data, 'utf-8', fenc)
  end
  return data, not data and ('its text cannot be written as %s'):format(fenc) or nil
end

--- Write `buf` to `path` as :write would put it there, as a new file renamed over the path
--- (snapshot.replace): a hard link planted since the check shares no byte of it. No write
--- autocommands run (a formatter must not change what is put back).
local function write_back(path, buf)
  local data, why = M.file_bytes(buf)
  local existed, ok = vim.uv.fs_lstat(path) ~= nil, false
  if data then
    ok, why = snapshot.replace(path, data)
  end
  if not ok then
    local shown = paths.shown(path)
    return notify.say(('could not write %s: %s'):format(shown, why), 'error')
  end
  vim.bo[buf].modified = false
  vim.api.nvim_buf_call(buf, function()
    if existed then -- Neovim learns the file's new time and size; the text is the buffer's own
      vim.cmd(('setlocal noautoread | checktime %d | setlocal autoread<'):format(buf))
    else -- a deleted file put back: the buffer is of a file that exists now (else :w says E13)
      local undoreload = vim.o.undoreload
      vim.o.undoreload = 0 -- (its undo was of no file)
      pcall(vim.cmd, 'silent edit')
      vim.o.undoreload = undoreload
    end
  end)
end

--- Put the earlier text back into `buf` for hunk `h` (all of them: nil), then write the file.
local function revert(path, buf, which, v)
  if vim.bo[buf].modified then
    notify.say(('%s has unsaved edits: write or discard them first'):format(path), 'warn')
    return
  end
  local before = changes.before_text(path)
  if not before then -- the server stopped meanwhile: nothing to compare with any more
    notify.say(('%s is no longer watched'):format(path), 'warn')
    return
  end
  local unsafe = changes.unsafe(path)
  if unsafe then
    local shown = paths.shown(path)
    return notify.say(('%s is %s: not written'):format(shown, unsafe), 'warn')
  end
  if before == '' and which == 'all' and not changes.known(path) then
    return remove(path, buf, v)
  end
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local hs = hunks.compute(before, hunks.text(lines))
  local old = hunks.lines(before)
  local i = which ~= 'all' and hunks.at(hs, vim.api.nvim_win_get_cursor(0)[1], #lines)
  if which ~= 'all' and not i then
    notify.say('no change under the cursor (]c goes to the next one)', 'warn')
    return
  end
  -- Modified before the change: its undo step keeps that, so `u` after the write gives back a
  -- buffer that differs from the file, as after :write.
  vim.bo[buf].modified = true
  if which == 'all' then
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, old)
  else
    hunks.drop(buf, hs[i], old)
  end
  write_back(path, buf)
end

local ACTIONS = {
  drop_hunk = { 'put the earlier text of this change back (and write)', 'one' },
  drop_all = { 'put the earlier text back everywhere (and write)', 'all' },
  keep_all = { 'accept these changes (they become the new baseline)', 'accept' },
}

-- Per buffer shown in a view: the user's own buffer-local mappings the review keys shadow
-- (restored when its last view closes), what each key did before (to fall through to outside a
-- view), both by "<mode> <lhs>", and its open views, by "before" buffer: { left = win, right = win }.
---@type table<integer, { saved: table<string, table|false>, before: table<string, table|false>, views: table }>
local keyed = {}
local fill -- (below: a view's sides filled)
local unwatched -- (below: what a count leaves out)

--- Do what `lhs` did before the review keys shadowed it (`mapping`: maparg()'s; false: Vim's own).
local function fall_through(lhs, mapping)
  local function feed(keys, noremap)
    keys = vim.api.nvim_replace_termcodes(keys, true, true, true)
    vim.api.nvim_feedkeys(keys, noremap and 'n' or 'm', false)
  end
  if not mapping then
    return feed((vim.v.count > 0 and vim.v.count or '') .. lhs, true)
  end
  local rhs = mapping.rhs
  if mapping.callback then
    rhs = mapping.callback()
    if mapping.expr ~= 1 then
      return
    end
  elseif mapping.expr == 1 then
    rhs = vim.api.nvim_eval(mapping.rhs)
  end
  if type(rhs) == 'string' then
    feed(rhs, mapping.noremap == 1)
  end
end

--- The view of `buf` whose file window is the current window, if any.
local function current_view(buf)
  local win = vim.api.nvim_get_current_win()
  for old_buf, v in pairs(keyed[buf] and keyed[buf].views or {}) do
    if v.right == win and vim.api.nvim_win_is_valid(v.left) and vim.api.nvim_win_get_buf(v.left) == old_buf then
      return v
    end
  end
end

--- The last view of `buf` closed: take the review keys away, give the user's mappings back.
local function unmap_keys(buf)
  local state = keyed[buf]
  keyed[buf] = nil
  if not (state and vim.api.nvim_buf_is_valid(buf)) then
    return
  end
  for key, mapping in pairs(state.saved) do
    local mode, lhs = key:sub(1, 1), key:sub(3)
    pcall(vim.keymap.del, mode, lhs, { buffer = buf })
    if mapping then
      vim.api.nvim_buf_call(buf, function() -- mapset() maps in the current buffer
        vim.fn.mapset(mode, false, mapping)
      end)
    end
  end
end

--- Map the review keys on the user's own buffer (once, however many views show it); they act only
--- in a view's file window and do what they did before anywhere else.
local function map_keys(path, buf)
  local keymaps = require('gemini_companion.config').defaults.review.keymaps
  local ok, review = pcall(require, 'gemini_companion.review')
  keymaps = ok and review.keymaps() or keymaps
  local state = { saved = {}, before = {}, views = {} }
  keyed[buf] = state
  local function map(modes, lhs, desc, act)
    if type(lhs) ~= 'string' or lhs == '' then
      return
    end
    for _, mode in ipairs(modes) do
      local key = mode .. ' ' .. lhs
      local before = vim.fn.maparg(lhs, mode, false, true)
      state.saved[key] = before.buffer == 1 and before or false
      state.before[key] = next(before) and before or false
      vim.keymap.set(mode, lhs, function()
        local v = current_view(buf)
        if not v then
          return fall_through(lhs, state.before[key])
        end
        act(v)
      end, { buffer = buf, desc = 'Gemini changes: ' .. desc })
    end
  end
  for action, spec in pairs(ACTIONS) do
    map({ 'n' }, keymaps[action], spec[1], function(v)
      if spec[2] == 'accept' then
        changes.remember(path)
        close(v)
      else
        revert(path, buf, spec[2], v)
      end
    end)
  end
  map({ 'n', 'x' }, keymaps.comment, 'comment on this line (or the selected lines) for the agent', function()
    require('gemini_companion.comments').here(buf, path)
  end)
  vim.api.nvim_create_autocmd('BufWipeout', {
    buffer = buf,
    once = true,
    callback = function()
      keyed[buf] = nil
    end,
  })
end

--- View `v` (its "before" side `old_buf`) of `buf` opens: the keys are there until the last closes.
local function add_view(path, buf, old_buf, v)
  if not keyed[buf] then
    map_keys(path, buf)
  end
  keyed[buf].views[old_buf] = v
  vim.api.nvim_create_autocmd('BufWipeout', {
    buffer = old_buf,
    once = true,
    callback = function()
      local state = keyed[buf]
      if state and state.views[old_buf] then
        state.views[old_buf] = nil
        if not next(state.views) then
          unmap_keys(buf)
        end
      end
    end,
  })
end

--- Show what changed in `path` since its baseline: the text before beside the file's buffer.
function M.show(path)
  local before, why = changes.before(path)
  if not before then
    notify.say(('%s: %s (see :help gemini-companion-changes)'):format(paths.shown(path), why), 'warn')
    return false
  end
  -- Never loaded into a buffer (a FIFO would hang Neovim for good) nor written through later.
  local unsafe = changes.unsafe(path)
  if unsafe or path:match('^/proc/') or path:match('^/sys/') or path:match('^/dev/') then
    notify.say(('%s is %s: not shown'):format(paths.shown(path), unsafe or 'no file of the workspace'), 'warn')
    return false
  end
  local buf = vim.fn.bufadd(path)
  vim.fn.bufload(buf)
  if vim.bo[buf].modified then
    notify.say(('%s has unsaved edits: write or discard them first'):format(paths.shown(path)), 'warn')
    return false
  end
  local autoread = vim.bo[buf].autoread
  vim.bo[buf].autoread = true -- the buffer may still hold the text from before the change
  pcall(vim.cmd.checktime, buf)
  vim.bo[buf].autoread = autoread
  vim.cmd('tabnew')
  local left = vim.api.nvim_get_current_win()
  vim.bo[vim.api.nvim_get_current_buf()].bufhidden = 'wipe'
  local right = vim.api.nvim_open_win(buf, true, { split = 'right', win = left })
  fill(path, before, buf, left, right)
  return true
end

-- The views' file windows, to follow the quickfix list: :cnext, :cprev, <CR> in the quickfix
-- window put the next file in such a window, and the "before" side follows it.
local file_wins = {} ---@type table<integer, integer> file window -> its "before" window

--- The file window `win` of a view now shows `buf` (a jump in :GeminiChanges' quickfix list):
--- show its change in the same view, or say why not and leave diff mode.
local function follow(win, buf)
  local left = file_wins[win]
  local qf = vim.fn.getqflist({ title = 1 }).title
  if not (left and vim.api.nvim_win_is_valid(left)) or qf ~= M.QF_TITLE then
    return
  end
  local path = vim.fs.normalize(vim.api.nvim_buf_get_name(buf))
  local old_buf = vim.api.nvim_win_get_buf(left)
  if keyed[buf] and keyed[buf].views[old_buf] then -- this very view
    return
  end
  local before, why = changes.before(path)
  if not before or vim.bo[buf].modified then
    file_wins[win] = nil
    vim.api.nvim_win_call(left, function()
      vim.cmd('enew')
    end)
    vim.bo[vim.api.nvim_win_get_buf(left)].bufhidden = 'wipe'
    vim.wo[win].diff = false
    local shown = paths.shown(path)
    why = before and 'has unsaved edits: write or discard them first' or why
    return notify.say(('%s: %s'):format(shown, why), 'warn')
  end
  fill(path, before, buf, left, win)
end

--- Fill view `left` (the "before" side) and `right` (showing `buf`) with `path`'s change.
fill = function(path, before, buf, left, right)
  local ft = vim.filetype.match({ filename = path })
  local old_buf =
    require('gemini_companion.diffmode').readonly_side(path .. ' (before the change)', hunks.lines(before), ft)
  vim.api.nvim_win_set_buf(left, old_buf) -- the last "before" buffer is wiped (and its keys go)
  require('gemini_companion.diffmode').set({ left, right }, true)
  add_view(path, buf, old_buf, { left = left, right = right })
  file_wins[right] = left
  vim.api.nvim_win_call(right, function()
    vim.cmd('normal! gg')
    if vim.fn.diff_hlID(1, 1) == 0 and vim.fn.diff_filler(1) == 0 then
      pcall(vim.cmd, 'normal! ]c')
    end
  end)
end

vim.api.nvim_create_autocmd('BufWinEnter', {
  group = vim.api.nvim_create_augroup('gemini_companion_changes_view', {}),
  callback = function(ev)
    local win = vim.api.nvim_get_current_win()
    if file_wins[win] and vim.api.nvim_win_get_buf(win) == ev.buf then
      follow(win, ev.buf)
    end
  end,
})
vim.api.nvim_create_autocmd('WinClosed', {
  group = 'gemini_companion_changes_view',
  callback = function(ev)
    file_wins[tonumber(ev.match)] = nil
  end,
})

--- What the count of changes leaves out, and git not asked: said each time, not only when the
--- snapshot was taken.
unwatched = function()
  local n, without_git = changes.unwatched(), changes.without_git()
  return (n > 0 and ('; %d past changes.max_files not watched'):format(n) or '')
    .. (without_git and '; ' .. without_git or '')
end

--- Put the changes found in the quickfix list and show the first.
local function list(changed)
  if #changed == 0 then
    notify.say(('no file changed on disk without a review (%s)%s'):format(changes.watched(), unwatched()))
    return
  end
  local items = vim.tbl_map(function(c)
    if c.strange then -- no file name: jumping to the entry would open it (a FIFO hangs Neovim)
      return { text = ('%s: %s'):format(paths.shown(c.path), c.note) }
    end
    local first = c.hunks[1] and math.max(1, c.hunks[1][3]) or 1
    local counts = c.hunks[1] and ('+%d −%d '):format(c.added, c.removed) or ''
    local turn = changes.turn_of(c.path)
    local by = turn and ('turn %d (%s): '):format(turn.n, turn.agent) or ''
    return { filename = c.path, lnum = first, text = by .. counts .. c.note }
  end, changed)
  vim.fn.setqflist({}, ' ', { title = M.QF_TITLE, items = items })
  local first = nil
  for i, c in ipairs(changed) do
    if c.hunks[1] then
      first = first or i
    end
  end
  local count = #changed == 1 and '1 file' or ('%d files'):format(#changed)
  notify.say(
    (
      first and ('%s changed without a review: :copen lists them, :cnext shows the next'):format(count)
      or ('%s changed without a review, none shown as a diff (:copen lists them)'):format(count)
    ) .. unwatched()
  )
  if first then -- said after the count: why it cannot be shown (unsaved edits) is the last word
    vim.fn.setqflist({}, 'a', { idx = first }) -- :cnext goes on from the one shown
    M.show(changed[first].path)
  end
end

--- An agent's turn ended (its turn hook): one line when it changed files without a review.
function M.turn_ended(agent)
  changes.turn_ended(agent, function(turn)
    if turn then
      local count = #turn.paths == 1 and '1 file' or ('%d files'):format(#turn.paths)
      notify.say(('%s changed %s without a review this turn: :GeminiTurn shows them'):format(agent, count), 'warn')
    end
  end)
end

--- :GeminiTurn: the changes of the last turn that changed files without a review.
function M.turn()
  local turn = changes.last_turn()
  if not turn then
    return notify.say('no turn changed a file without a review (the turn hooks: :GeminiGate install)')
  end
  changes.scan(function(changed)
    local wanted = {}
    for _, path in ipairs(turn.paths) do
      wanted[path] = true
    end
    list(vim.tbl_filter(function(c)
      return wanted[c.path] and changes.turn_of(c.path) == turn
    end, changed))
  end)
end

--- :GeminiChanges [file]: that file's change, else all of them in the quickfix list and the
--- first one shown (once the scan is done: at once, unless the workspace is large). With
--- `bang`: changes.mark().
function M.command(arg, bang)
  if bang then
    return changes.mark()
  end
  if arg and arg ~= '' then
    local path = vim.fs.normalize(vim.fn.fnamemodify(arg, ':p'))
    if not changes.needs_scan(path) then
      return M.show(path)
    end
    return changes.scan(function() -- whether it is new in the workspace, or a file the scan never lists
      M.show(path)
    end)
  end
  changes.scan(list)
end

return M
