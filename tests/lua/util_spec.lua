-- builtin/util.lua: character columns ↔ LSP position units.
local t = ...
local util = require('gemini_companion.builtin.util')

-- 'a' 1 byte, 'é' 2 bytes / 1 UTF-16 unit, '😀' 4 bytes / 2 UTF-16 units (a surrogate pair).
local TEXT = 'aé😀b'

t.test('to_units counts the characters before a column in each encoding', function()
  t.eq(
    { util.to_units(TEXT, 1, 'utf-16'), util.to_units(TEXT, 3, 'utf-16'), util.to_units(TEXT, 4, 'utf-16') },
    { 0, 2, 4 }
  )
  t.eq({ util.to_units(TEXT, 3, 'utf-8'), util.to_units(TEXT, 4, 'utf-8') }, { 3, 7 })
  t.eq(util.to_units(TEXT, 4, 'utf-32'), 3)
end)

t.test('to_units past the end of the line counts the whole line', function()
  t.eq(util.to_units(TEXT, 99, 'utf-16'), 5)
  t.eq(util.to_units('', 5, 'utf-16'), 0)
end)

t.test('from_units inverts to_units for every column', function()
  for _, enc in ipairs({ 'utf-8', 'utf-16', 'utf-32' }) do
    for col = 1, 5 do
      t.eq({ enc, col, util.from_units(TEXT, util.to_units(TEXT, col, enc), enc) }, { enc, col, col })
    end
  end
end)

t.test('from_units inside a surrogate pair lands after that character', function()
  t.eq(util.from_units(TEXT, 3, 'utf-16'), 4)
end)

t.test('char_col turns a 0-based byte column into a 1-based character column', function()
  t.eq(
    { util.char_col(TEXT, 0), util.char_col(TEXT, 1), util.char_col(TEXT, 3), util.char_col(TEXT, 7) },
    { 1, 2, 3, 4 }
  )
  t.eq(util.char_col(TEXT, 999), 5) -- clamped to the end of the line
end)

t.test('read_file_async gives what read_file gives, and refuses what it refuses', function()
  util.configure({ max_file_bytes = 1024 * 1024, restrict_to_workspace = false })
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, 'p')
  local function async(path)
    local got
    util.read_file_async(path, function(text, why)
      got = { text or false, why }
    end)
    t.wait_for(function()
      return got
    end)
    return got
  end
  local bytes = {}
  for i = 0, 200000 do
    bytes[#bytes + 1] = string.char(i % 256) -- NUL, CR, LF and the rest; past one read's 64 KiB margin
  end
  for name, text in pairs({ empty = '', bytes = table.concat(bytes) }) do
    local path = vim.fs.joinpath(dir, name)
    local f = assert(io.open(path, 'wb'))
    f:write(text)
    f:close()
    local got = async(path)
    t.eq({ got[1] == text, got[2], util.read_file(path) == text }, { true, nil, true }, name)
  end
  local fifo = vim.fs.joinpath(dir, 'fifo')
  vim.fn.system({ 'mkfifo', fifo })
  local refused = async(fifo)
  t.eq({ refused[1], refused[2]:match('is not a regular file') ~= nil }, { false, true })
  vim.fn.delete(dir, 'rf')
end)
