-- The split layout (`review.layout` 'vertical', the default, or 'horizontal'): the file on disk,
-- read-only, beside the editable proposal, the two in Neovim's diff mode. One of the layouts a
-- review is shown in (review/layouts/unified.lua is the other), chosen as it opens.
local diffmode = require('gemini_companion.diffmode')
local windows = require('gemini_companion.review.windows')

local M = {}

--- Its buffer beside the proposal: the file on disk (`disk_lines` nil: a big review's, filled
--- later by review/fill.lua).
---@param d GeminiCompanionReview
function M.create(d, disk_lines, ft, exists)
  local name = d.key .. (exists and ' (on disk)' or ' (does not exist yet)')
  d.original = diffmode.readonly_side(name, disk_lines, ft, d.disk_ff)
end

--- The two windows, the proposal's last; diff mode at once unless the review still fills
--- (M.render comes once it is full).
---@param d GeminiCompanionReview
function M.show(d, settings)
  local left = windows.first(assert(d.original), settings)
  d.wins = { left, windows.beside(left, d.proposed, settings) }
  d.had_hor = vim.o.scrollopt:find('hor') ~= nil
  if not d.filling then
    M.render(d)
  end
end

--- Show the changes: Neovim's diff mode compares the two buffers, again after every change.
---@param d GeminiCompanionReview
function M.render(d)
  windows.diff_mode(d)
end

--- The file changed on disk during the review: the on-disk side shows its new `lines`.
---@param d GeminiCompanionReview
function M.refresh(d, lines, exists)
  local buf = d.original
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    return
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].fileformat = d.disk_ff or 'unix'
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  local name = d.key .. (exists and ' (on disk)' or ' (deleted on disk)')
  if vim.api.nvim_buf_get_name(buf) ~= name then
    diffmode.unique_name(buf, name)
  end
end

--- Its buffer goes with the review.
---@param d GeminiCompanionReview
function M.teardown(d)
  if d.original and vim.api.nvim_buf_is_valid(d.original) then
    pcall(vim.api.nvim_buf_delete, d.original, { force = true })
  end
end

return M
