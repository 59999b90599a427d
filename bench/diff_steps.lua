-- The steps openDiff's Lua side (diff.open in lua/gemini_companion/review/init.lua and review/buffers.lua, windows.lua) takes for a
-- 50 000-line file, timed one by one: `make bench` shows diff.open is nearly all of an openDiff,
-- this shows which step inside it. A copy of those steps, kept in step with diff.lua by hand.
-- Run: dev/nvim --headless -c 'luafile bench/diff_steps.lua' -c 'qa!'
-- (DIFFOPT=... to try another 'diffopt'; LAYOUT=unified for the unified layout's steps).
vim.o.diffopt = vim.env.DIFFOPT or vim.o.diffopt
-- As the server does at start (bridge.configure_tools), before any tool reads a file.
require('gemini_companion.builtin.util').configure({ max_file_bytes = 16 * 1024 * 1024, restrict_to_workspace = false })
local dir = vim.fn.tempname()
vim.fn.mkdir(dir, 'p')
local path = dir .. '/large.py'
local disk, proposal = {}, {}
for i = 0, 49999 do
  disk[#disk + 1] = ('value_%d = %d'):format(i, i)
  proposal[#proposal + 1] = ('value_%d = %d'):format(i, i % 97 == 0 and i * 2 or i)
end
vim.fn.writefile(disk, path)
local content = table.concat(proposal, '\n') .. '\n'

local hrtime = vim.uv.hrtime
local report = {}
local function step(name, fn)
  local t0 = hrtime()
  local result = fn()
  report[#report + 1] = ('%-44s %7.1f ms'):format(name, (hrtime() - t0) / 1e6)
  return result
end

local text = step('read the file (util.read_file)', function()
  return require('gemini_companion.builtin.util').read_file(path)
end)
local old_lines = step('split the file into lines', function()
  return vim.split(text, '\n', { plain = true })
end)
local new_lines = step('split the proposal into lines', function()
  return vim.split(content, '\n', { plain = true })
end)
local ft = step('vim.filetype.match', function()
  return vim.filetype.match({ filename = path })
end)
local hunks = require('gemini_companion.text.hunks')
local old_text = step('the on-disk text the hunks are diffed against (hunks.text)', function()
  return hunks.text(old_lines)
end)
if vim.env.LAYOUT == 'unified' then
  -- review/layouts/unified.lua: the proposal alone, its hunks from vim.diff, removed lines as virtual lines.
  local proposed = vim.api.nvim_create_buf(false, false)
  vim.bo[proposed].buftype = 'acwrite'
  step('set_lines: proposal', function()
    vim.api.nvim_buf_set_lines(proposed, 0, -1, false, new_lines)
  end)
  step('filetype: proposal', function()
    vim.bo[proposed].filetype = ft
  end)
  step('tabnew', function()
    vim.cmd('tabnew')
    vim.api.nvim_win_set_buf(0, proposed)
  end)
  local d = { key = path, proposed = proposed, old_text = old_text }
  step('hunks (keys.seed: vim.diff)', function()
    require('gemini_companion.review.keys').seed(d, new_lines)
  end)
  step('draw them (unified.redraw)', function()
    require('gemini_companion.review.layouts.unified').redraw(d, old_lines)
  end)
  step('focus the first change', function()
    vim.api.nvim_win_set_cursor(0, { hunks.rows(d.hunks[1], #new_lines), 0 })
  end)
else
  local original = vim.api.nvim_create_buf(false, true)
  step('set_lines: original', function()
    vim.api.nvim_buf_set_lines(original, 0, -1, false, old_lines)
  end)
  step('filetype: original', function()
    vim.bo[original].filetype = ft
  end)
  local proposed = vim.api.nvim_create_buf(false, false)
  vim.bo[proposed].buftype = 'acwrite'
  step('set_lines: proposal', function()
    vim.api.nvim_buf_set_lines(proposed, 0, -1, false, new_lines)
  end)
  step('filetype: proposal', function()
    vim.bo[proposed].filetype = ft
  end)
  step('tabnew + windows', function()
    vim.cmd('tabnew')
    vim.api.nvim_win_set_buf(0, original)
    vim.api.nvim_open_win(proposed, true, { split = 'right', win = 0 })
  end)
  local wins = vim.api.nvim_tabpage_list_wins(0)
  -- review/windows.lua's diff_window: what :diffthis does, without diff folds for a file this large.
  step("'diff' on in both windows (Neovim's diff)", function()
    for _, w in ipairs(wins) do
      vim.wo[w].scrollbind = true
      vim.wo[w].cursorbind = true
      vim.wo[w].wrap = false
      vim.wo[w].diff = true
    end
    return vim.fn.diff_hlID(1, 1) -- the diff is computed here at the latest
  end)
  step('normal! gg]c (focus the first change)', function()
    vim.cmd('normal! gg')
    pcall(vim.cmd, 'normal! ]c')
  end)
  if vim.env.FOLDS then -- what Neovim's diff folds would add (review/windows.lua skips them past FOLD_MAX_LINES)
    step('diff folds (foldmethod=diff) and their first redraw', function()
      for _, w in ipairs(wins) do
        vim.wo[w].foldmethod = 'diff'
      end
      vim.cmd('redraw')
    end)
  end
end
step('redraw', function()
  vim.cmd('redraw')
end)
print(('layout=%s diffopt=%s\n%s\n'):format(vim.env.LAYOUT or 'vertical', vim.o.diffopt, table.concat(report, '\n')))
vim.fn.delete(dir, 'rf')
