-- Diff mode as reviews (review/) and :GeminiChanges' view (changes/view.lua) both show it: the
-- read-only side's buffer, and diff mode in windows as `:diffthis` would set it (without its folds
-- on large files). The one room both use, so neither borrows from the other.
local M = {}

-- Diff mode needs "hor" in the global 'scrollopt' (:diffthis adds it too); we take back only
-- the "hor" we added, once no diff is left anywhere.
local added_hor = false

--- Whether any of `wins` is in diff mode.
function M.any(wins)
  return vim.iter(wins):any(function(win)
    return vim.wo[win].diff
  end)
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

--- Diff mode in `wins`, with diff folds if `folds`.
function M.set(wins, folds)
  for _, win in ipairs(wins) do
    diff_window(win, folds)
  end
end

--- Once no diff is left anywhere: 'scrollopt' without the "hor" we added.
function M.scrollopt_back()
  if added_hor and not M.any(vim.api.nvim_list_wins()) then
    vim.opt.scrollopt:remove('hor')
    added_hor = false
  end
end

--- Name `buf` `name`, or `name [2]`, `[3]`… if a buffer has it already (an unnamed proposal
--- could not be written: E32). Returns the name given.
function M.unique_name(buf, name)
  local candidate = name
  for n = 2, 1000 do
    if pcall(vim.api.nvim_buf_set_name, buf, candidate) then
      return candidate
    end
    candidate = ('%s [%d]'):format(name, n)
  end
end

--- The read-only side (the file on disk, or the text before a change); `lines` nil: left empty
--- (review/fill.lua fills it, then the filetype is set).
function M.readonly_side(name, lines, ft, ff)
  local buf = vim.api.nvim_create_buf(false, true)
  if lines then
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  end
  M.unique_name(buf, name)
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

return M
