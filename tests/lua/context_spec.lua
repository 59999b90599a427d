-- context.lua: it works from the settings Python sends (config.py's, with context.py's cap).
local t = ...
local to_host = require('gemini_companion.to_host')
local context = require('gemini_companion.context')

local sent = nil
to_host.send_context = function(snapshot) -- no host here: keep what would be sent
  sent = snapshot
end

local function start(overrides)
  local settings = { enabled = true, debounce_ms = 0, selection_demotion_ms = 5000, max_files = 10 }
  settings.max_selection_chars = 16384
  context.start(vim.tbl_extend('force', settings, overrides or {}))
end

t.test('a selection is cut at the max_selection_chars Python sends', function()
  local path = vim.fn.getcwd() .. '/selection.txt'
  vim.fn.writefile({ 'abcdefghij' }, path)
  vim.cmd.edit(vim.fn.fnameescape(path))
  start({ max_selection_chars = 4 })
  vim.cmd('normal! 0v$')
  t.eq(context.snapshot().openFiles[1].selectedText, 'abcd')
  context.stop()
end)

t.test('a selection of many lines is read only as far as the cap, in every Visual mode', function()
  local path = vim.fn.getcwd() .. '/many.txt'
  local lines = {}
  for i = 1, 20000 do
    lines[i] = ('%05d abcdefgh'):format(i)
  end
  vim.fn.writefile(lines, path)
  vim.cmd.edit(vim.fn.fnameescape(path))
  start({ max_selection_chars = 40 })
  local read = 0 -- how many lines the selection made Neovim read
  local get_lines = vim.api.nvim_buf_get_lines
  local getregion = vim.fn.getregion
  vim.api.nvim_buf_get_lines = function(buf, first, last, strict)
    local got = get_lines(buf, first, last, strict)
    read = read + #got
    return got
  end
  vim.fn.getregion = function(a, b, opts)
    local got = getregion(a, b, opts)
    read = read + #got
    return got
  end
  local ok, err = pcall(function()
    for _, keys in ipairs({ 'ggVG', 'gg3|vG', 'gg3|\22G4|' }) do
      vim.cmd('normal! ' .. keys)
      -- What the whole selection, read and then cut, gave: the same text.
      local whole = getregion(vim.fn.getpos('v'), vim.fn.getpos('.'), { type = vim.fn.mode() })
      local want = vim.fn.strcharpart(table.concat(whole, '\n'), 0, 40)
      read = 0
      t.eq(context.snapshot().openFiles[1].selectedText, want)
      t.eq(read < 1000, true) -- not the 20 000 lines selected
      vim.cmd('normal! \27')
    end
  end)
  vim.api.nvim_buf_get_lines, vim.fn.getregion = get_lines, getregion
  context.stop()
  assert(ok, err)
end)

t.test('the files listed follow max_files from the settings', function()
  start({ max_files = 2 })
  for i = 1, 3 do
    local path = ('%s/file%d.txt'):format(vim.fn.getcwd(), i)
    vim.fn.writefile({ 'x' }, path)
    vim.cmd.edit(vim.fn.fnameescape(path))
  end
  t.wait_for(function()
    return sent ~= nil
  end, 'the first update')
  t.eq(#context.snapshot().openFiles, 2)
  context.stop()
end)
