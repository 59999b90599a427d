-- review/changes.lua: the baseline of watched files is bounded, and only real changes are listed.
local t = ...
require('gemini_companion.builtin.util').configure({ max_file_bytes = 1024 * 1024, restrict_to_workspace = false })
local changes = require('gemini_companion.review.changes')

local dir = vim.fn.tempname()
vim.fn.mkdir(dir, 'p')
local function file(name, text)
  local path = dir .. '/' .. name
  local f = assert(io.open(path, 'wb'))
  f:write(text)
  f:close()
  return path
end

t.test('files past MAX_BYTES of remembered text are not watched', function()
  changes.stop()
  changes.MAX_BYTES = 10
  local a, b = file('a', 'aaaaaa\n'), file('b', 'bbbbbb\n') -- 7 bytes each
  changes.remember(a)
  changes.remember(b)
  file('a', 'AAAAAA\n')
  file('b', 'BBBBBB\n')
  t.eq(
    vim.tbl_map(function(c)
      return { vim.fs.basename(c.path), c.added, c.removed }
    end, changes.changed()),
    { { 'a', 1, 1 } }
  )
end)

t.test('a file written back to its baseline is no change; a deleted one is', function()
  changes.stop()
  changes.MAX_BYTES = 1024
  local a, b = file('a', 'one\n'), file('b', 'two\nthree\n')
  changes.remember(a)
  changes.remember(b)
  file('a', 'x\n')
  file('a', 'one\n')
  os.remove(b)
  t.eq(
    vim.tbl_map(function(c)
      return { vim.fs.basename(c.path), c.added, c.removed }
    end, changes.changed()),
    { { 'b', 0, 2 } }
  )
end)
