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
