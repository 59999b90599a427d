-- :GeminiChanges — files that changed on disk without passing through a review (an agent in
-- auto-edit/YOLO mode, its shell commands) while the companion server runs.
--
-- What is watched: the on-disk text of every file loaded in a buffer, remembered when the server
-- starts and when a file is read into a buffer; the user's own writes and accepted reviews move
-- that baseline forward. At most MAX_BYTES of such text is kept (first come; later files are not
-- watched), so memory stays bounded. The first MAX_WATCHES of those files also get a file-system
-- watch (vim.uv fs_event, no polling): a change that leaves the text different from the baseline is
-- said once (one line), until the baseline moves. :GeminiChanges compares them all when asked.
--
-- A change is shown as a diff: the text before (read-only) beside the file's own buffer. `do`
-- puts the earlier text of the change under the cursor back and writes the file (one undoable
-- change: `u` and `:w` bring the agent's text back); `dO` does so for every change; `dP`
-- accepts them all (they become the new baseline). A buffer with unsaved edits is never touched.
local hunks = require('gemini_companion.diff.hunks')

local M = {}

M.MAX_BYTES = 32 * 1024 * 1024
M.MAX_WATCHES = 256

---@type table<string, string> path -> text remembered (as hunks.text compares it)
local baseline = {}
local total = 0
local writing = {} -- paths we are writing ourselves (a revert is no new baseline)
local watches = {} ---@type table<string, uv.uv_fs_event_t>
local told = {} -- paths whose change was said already

local function bridge()
  return require('gemini_companion.bridge')
end

local function disk_text(path)
  local ok, text = pcall(require('gemini_companion.builtin.util').read_file, path)
  if not ok then
    return nil
  end
  return hunks.text((require('gemini_companion.diff.view').split(text)))
end

local watch

--- A watched file changed on disk: say so once if its text now differs from the baseline.
local function check(path)
  local before = baseline[path]
  if before and not told[path] and (disk_text(path) or '') ~= before then
    told[path] = true
    local shown = require('gemini_companion.diff.view').shown(path)
    bridge().notify(('%s changed on disk without a review (:GeminiChanges shows it)'):format(shown))
  end
end

--- Watch `path` (within MAX_WATCHES); armed again after each event, since a file replaced by
--- rename (how many tools write) is a new file to watch.
watch = function(path)
  if watches[path] or vim.tbl_count(watches) >= M.MAX_WATCHES then
    return
  end
  local handle = vim.uv.new_fs_event()
  if not handle then
    return
  end
  watches[path] = handle
  local ok = handle:start(path, {}, function()
    if watches[path] ~= handle then
      return
    end
    watches[path] = nil
    handle:close()
    vim.defer_fn(function() -- once the writer is done (several events per write)
      if baseline[path] then
        watch(path)
        check(path)
      end
    end, 100)
  end)
  if not ok then
    watches[path] = nil
    handle:close()
  end
end

--- Remember `path`'s text on disk as the baseline (`text`: known already), within MAX_BYTES.
function M.remember(path, text)
  text = text or disk_text(path)
  if not text then
    return
  end
  local old = baseline[path]
  local size = total - (old and #old or 0) + #text
  if size <= M.MAX_BYTES then
    baseline[path], total, told[path] = text, size, nil
    watch(path)
  end
end

local function file_of(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  if vim.bo[buf].buftype == '' and name ~= '' and vim.uv.fs_stat(name) then
    return vim.fs.normalize(name)
  end
end

--- Start watching (the server runs): the files loaded now, and each one read or written later.
function M.start()
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local path = vim.api.nvim_buf_is_loaded(buf) and file_of(buf)
    if path and not baseline[path] then
      M.remember(path)
    end
  end
  local group = vim.api.nvim_create_augroup('gemini_companion_changes', { clear = true })
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufWritePost' }, {
    group = group,
    callback = function(ev)
      local path = file_of(ev.buf)
      -- A file read for the first time, or written by the user: that is the text to compare with.
      if path and not writing[path] and (ev.event == 'BufWritePost' or not baseline[path]) then
        M.remember(path)
      end
    end,
  })
end

--- The server stopped: forget everything.
function M.stop()
  pcall(vim.api.nvim_del_augroup_by_name, 'gemini_companion_changes')
  for _, handle in pairs(watches) do
    handle:close()
  end
  baseline, total, watches, told = {}, 0, {}, {}
end

--- Files whose text on disk differs from their baseline: { {path, added, removed, hunks} } by path.
function M.changed()
  local out = {}
  for path, before in pairs(baseline) do
    local now = disk_text(path) or ''
    if now ~= before then
      local hs = hunks.compute(before, now)
      local added, removed = hunks.counts(hs)
      table.insert(out, { path = path, added = added, removed = removed, hunks = hs })
    end
  end
  table.sort(out, function(a, b)
    return a.path < b.path
  end)
  return out
end

--- Put the earlier text back into `buf` for hunk `h` (all of them: nil), then write the file.
local function revert(path, buf, which)
  if vim.bo[buf].modified then
    bridge().notify(('%s has unsaved edits: write or discard them first'):format(path), 'warn')
    return
  end
  local before = baseline[path]
  if not before then -- the server stopped meanwhile: nothing to compare with any more
    bridge().notify(('%s is no longer watched'):format(path), 'warn')
    return
  end
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local hs = hunks.compute(before, hunks.text(lines))
  local old = hunks.lines(before)
  if which == 'all' then
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, old)
  else
    local i = hunks.at(hs, vim.api.nvim_win_get_cursor(0)[1], #lines)
    if not i then
      bridge().notify('no change under the cursor (]c goes to the next one)', 'warn')
      return
    end
    hunks.drop(buf, hs[i], old)
  end
  writing[path] = true
  local ok, err = pcall(vim.api.nvim_buf_call, buf, function()
    vim.cmd('silent write')
  end)
  writing[path] = nil
  if not ok then
    bridge().notify(('could not write %s: %s'):format(path, err), 'error')
  end
end

local ACTIONS = {
  drop_hunk = { 'put the earlier text of this change back (and write)', 'one' },
  drop_all = { 'put the earlier text back everywhere (and write)', 'all' },
  keep_all = { 'accept these changes (they become the new baseline)', 'accept' },
}

--- Map the review keys on the user's own buffer, restoring what they shadowed when `old_buf`
--- (the "before" side) goes away.
local function map_keys(path, buf, old_buf)
  local keymaps = require('gemini_companion.config').defaults.diff.keymaps
  local ok, diff = pcall(require, 'gemini_companion.diff')
  keymaps = ok and diff.keymaps() or keymaps
  local saved = {}
  for action, spec in pairs(ACTIONS) do
    local lhs = keymaps[action]
    if type(lhs) == 'string' and lhs ~= '' then
      local before = vim.fn.maparg(lhs, 'n', false, true)
      saved[lhs] = before.buffer == 1 and before or false
      vim.keymap.set('n', lhs, function()
        if spec[2] == 'accept' then
          M.remember(path)
          pcall(vim.cmd, 'tabclose')
        else
          revert(path, buf, spec[2])
        end
      end, { buffer = buf, desc = 'Gemini changes: ' .. spec[1] })
    end
  end
  vim.api.nvim_create_autocmd('BufWipeout', {
    buffer = old_buf,
    once = true,
    callback = function()
      if not vim.api.nvim_buf_is_valid(buf) then
        return
      end
      for lhs, mapping in pairs(saved) do
        pcall(vim.keymap.del, 'n', lhs, { buffer = buf })
        if mapping then
          vim.api.nvim_buf_call(buf, function() -- mapset() maps in the current buffer
            vim.fn.mapset('n', false, mapping)
          end)
        end
      end
    end,
  })
end

--- Show what changed in `path` since its baseline: the text before beside the file's buffer.
function M.show(path)
  local view = require('gemini_companion.diff.view')
  local before = baseline[path]
  if not before then
    bridge().notify(('%s is not watched (see :help gemini-companion-changes)'):format(view.shown(path)), 'warn')
    return false
  end
  local buf = vim.fn.bufadd(path)
  vim.fn.bufload(buf)
  if vim.bo[buf].modified then
    bridge().notify(('%s has unsaved edits: write or discard them first'):format(view.shown(path)), 'warn')
    return false
  end
  local autoread = vim.bo[buf].autoread
  vim.bo[buf].autoread = true -- the buffer may still hold the text from before the change
  pcall(vim.cmd.checktime, buf)
  vim.bo[buf].autoread = autoread
  vim.cmd('tabnew')
  local left = vim.api.nvim_get_current_win()
  vim.bo[vim.api.nvim_get_current_buf()].bufhidden = 'wipe'
  local ft = vim.filetype.match({ filename = path })
  local old_buf = view.original_buffer(path .. ' (before the change)', hunks.lines(before), ft)
  vim.api.nvim_win_set_buf(left, old_buf)
  local right = vim.api.nvim_open_win(buf, true, { split = 'right', win = left })
  view.diff_windows({ left, right }, true)
  map_keys(path, buf, old_buf)
  vim.cmd('normal! gg')
  if vim.fn.diff_hlID(1, 1) == 0 and vim.fn.diff_filler(1) == 0 then
    pcall(vim.cmd, 'normal! ]c')
  end
  return true
end

--- Mark now: every watched file's text on disk becomes its baseline ("since my last prompt").
function M.mark()
  for path in pairs(baseline) do
    M.remember(path)
  end
  bridge().notify(('changes are now counted from here (%d files watched)'):format(vim.tbl_count(baseline)))
end

--- :GeminiChanges [file]: that file's change, else all of them in the quickfix list and the
--- first one shown. With `bang`: M.mark().
function M.command(arg, bang)
  if bang then
    return M.mark()
  end
  if arg and arg ~= '' then
    return M.show(vim.fs.normalize(vim.fn.fnamemodify(arg, ':p')))
  end
  local changed = M.changed()
  if #changed == 0 then
    bridge().notify(('no file changed on disk without a review (%d watched)'):format(vim.tbl_count(baseline)))
    return false
  end
  local items = vim.tbl_map(function(c)
    local first = c.hunks[1] and math.max(1, c.hunks[1][3]) or 1
    return { filename = c.path, lnum = first, text = ('+%d −%d changed without a review'):format(c.added, c.removed) }
  end, changed)
  vim.fn.setqflist({}, ' ', { title = 'Gemini: changed without a review', items = items })
  return M.show(changed[1].path)
end

return M
