-- Closing a review (see review/init.lua): its windows, its buffers, its texts (a big review's are
-- tens of MB), and the user back where they were.
local fill = require('gemini_companion.review.fill')
local windows = require('gemini_companion.review.windows')

local M = {}

--- Close review `d` now.
---@param d GeminiCompanionReview
function M.now(d)
  local was_ours = windows.close(d)
  if vim.api.nvim_buf_is_valid(d.proposed) then
    pcall(vim.api.nvim_buf_delete, d.proposed, { force = true })
  end
  d.layout.teardown(d)
  pcall(vim.api.nvim_del_augroup_by_name, 'gemini_companion_diff_' .. d.proposed)
  -- Both texts go now (a big review's are tens of MB each), whoever still holds the record.
  d.disk_text, d.old_text, d.content, d.hunks, d.hunks_tick, d.marking = nil, nil, nil, {}, nil, nil
  if d.big then
    fill.collect()
  end
  windows.give_back(d, was_ours)
end

--- Tear `d` down once the current command is done; a big review's (wiping two 1 M-line buffers,
--- ~15 ms) in a turn of the event loop of its own (a timer: clients waiting are answered first).
--- `after()`, if given, runs once it is torn down.
function M.soon(d, after)
  local later = d.big and function(f)
    vim.defer_fn(f, 0)
  end or vim.schedule
  later(function()
    M.now(d)
    if after then
      after()
    end
  end)
end

return M
