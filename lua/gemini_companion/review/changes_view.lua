-- :GeminiChanges' view of one file: the text before (read-only) beside the file's own buffer,
-- with the review keys on that buffer to put earlier text back through an undoable write
-- (review/changes.lua keeps the baselines and finds the changes).
local hunks = require('gemini_companion.diff.hunks')

local M = {}

local function changes()
  return require('gemini_companion.review.changes')
end

local function bridge()
  return require('gemini_companion.bridge')
end

--- A file new since the snapshot, all of it dropped: delete it once the user answers yes (a
--- deletion cannot be undone with `u`; anything else leaves it as it is).
local function remove(path, buf)
  local shown = require('gemini_companion.diff.view').shown(path)
  local prompt = ('Delete %s (created without a review)? [y/N] '):format(shown)
  vim.ui.input({ prompt = prompt }, function(answer)
    if not (answer or ''):match('^[yY]') then
      return
    elseif vim.fn.delete(path) ~= 0 then
      return bridge().notify(('could not delete %s'):format(shown), 'error')
    end
    changes().deleted(path)
    pcall(vim.cmd, 'tabclose')
    pcall(vim.api.nvim_buf_delete, buf, {})
    bridge().notify(('deleted %s'):format(shown))
  end)
end

--- Put the earlier text back into `buf` for hunk `h` (all of them: nil), then write the file.
local function revert(path, buf, which)
  if vim.bo[buf].modified then
    bridge().notify(('%s has unsaved edits: write or discard them first'):format(path), 'warn')
    return
  end
  local before = changes().before_text(path)
  if not before then -- the server stopped meanwhile: nothing to compare with any more
    bridge().notify(('%s is no longer watched'):format(path), 'warn')
    return
  end
  if before == '' and which == 'all' and not changes().known(path) then
    return remove(path, buf)
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
  changes().writing[path] = true
  local ok, err = pcall(vim.api.nvim_buf_call, buf, function()
    vim.cmd('silent write')
  end)
  changes().writing[path] = nil
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
          changes().remember(path)
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
  local before, why = changes().before(path)
  if not before then
    bridge().notify(('%s: %s (see :help gemini-companion-changes)'):format(view.shown(path), why), 'warn')
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

return M
