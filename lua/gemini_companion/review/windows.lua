-- A review's windows (see review/init.lua): made without entering them, in a tab of their own or
-- beside the user's, in diff mode as `:diffthis` would set it (without its folds on large files),
-- and closed again, the user back where they were. Diff mode itself is diffmode.lua's (shared with
-- :GeminiChanges' view).
local diffmode = require('gemini_companion.diffmode')

local M = {}

--- A review's first window, showing `buf`, made without entering it: the keys the user
--- types stay theirs. A tab of its own (settings.new_tab, or when the user's tab has a diff of its
--- own: a third buffer in diff mode would break their `:diffget`, E101), else a split in the
--- current tab.
function M.first(buf, settings)
  local left
  if settings.new_tab or diffmode.any(vim.api.nvim_tabpage_list_wins(0)) then
    -- `:tab sbuffer` of the review's own buffer, not `:tabnew`: the empty buffer `:tabnew` makes
    -- would end the user's Insert's undo step (typed on, their text takes two `u` to undo).
    vim.api.nvim_win_call(0, function()
      vim.cmd('tab sbuffer ' .. buf)
      left = vim.api.nvim_get_current_win()
    end)
  else
    left = vim.api.nvim_open_win(buf, false, { split = M.direction(settings), win = -1 })
  end
  return left
end

--- Where a second window goes: right of the first, or below it (`review.layout = 'horizontal'`).
function M.direction(settings)
  return settings.layout ~= 'horizontal' and 'right' or 'below'
end

--- A window showing `buf` beside `first`, made without entering it; going to its tab lands in it.
function M.beside(first, buf, settings)
  local win = vim.api.nvim_open_win(buf, false, { split = M.direction(settings), win = first })
  local tab = vim.api.nvim_win_get_tabpage(win)
  if tab ~= vim.api.nvim_get_current_tabpage() then
    vim.api.nvim_tabpage_set_win(tab, win)
  end
  return win
end

--- Diff mode in the review's windows (Neovim compares the two buffers as it is set).
function M.diff_mode(d)
  diffmode.set(d.wins, vim.api.nvim_buf_line_count(d.proposed) <= diffmode.FOLD_MAX_LINES)
end

--- Close review `d`'s windows (the last window of Neovim shows an empty buffer instead).
--- Returns whether the user was in one of them.
function M.close(d)
  local was_ours = vim.tbl_contains(d.wins, vim.api.nvim_get_current_win())
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
  return was_ours
end

--- After review `d`'s windows closed: 'scrollopt' as it was, and the user back in the window
--- they were in (`was_ours`: they were in the review), in Terminal mode if they were.
function M.give_back(d, was_ours)
  if d.had_hor and not vim.o.scrollopt:find('hor') then
    vim.opt.scrollopt:append('hor') -- Neovim drops it when the last diff window of a tab goes
  end
  diffmode.scrollopt_back()
  if not (was_ours and vim.api.nvim_win_is_valid(d.prev_win)) then
    return
  end
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

return M
