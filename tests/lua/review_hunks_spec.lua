-- text/hunks.lua and review/keys.lua: a review's hunks, and what keeping or dropping them leaves in
-- the proposal (as buffers.buffer_text would send it on accept).
local t = ...
local hunks = require('gemini_companion.text.hunks')
local keys = require('gemini_companion.review.keys')
local buffers = require('gemini_companion.review.buffers')
local disk = require('gemini_companion.review.disk')
local lines_of = require('gemini_companion.text.lines')

--- A review as review/init.lua makes one, without windows other than the current one.
local function review(disk_text, proposal)
  local lines, eol, dos = lines_of.split(proposal)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  local d = { key = '/x', proposed = buf }
  disk.set(d, disk_text, disk_text ~= '')
  vim.bo[buf].eol = eol
  vim.bo[buf].fileformat = d.disk_ff or lines_of.fileformat(proposal, dos) or 'unix'
  vim.api.nvim_win_set_buf(0, buf)
  return d
end

local function text(d)
  return buffers.buffer_text(d)
end

local function at_line(d, row, action)
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  keys.run(action, d)
end

t.test('hunks are vim.diff indices, empty for equal texts', function()
  t.eq(hunks.compute('a\nb\nc\n', 'a\nB\nc\nd\n'), { { 2, 1, 2, 1 }, { 3, 0, 4, 1 } })
  t.eq(hunks.compute('a\n', 'a\n'), {})
  t.eq(hunks.text({ '' }), '')
  t.eq(hunks.lines('a\nb\n'), { 'a', 'b' })
end)

t.test('a deletion is at the line below it, or above it at the end', function()
  local hs = hunks.compute('a\nb\nc\n', 'a\nc\n') -- b deleted after line 1
  t.eq({ hunks.rows(hs[1], 2) }, { 2, 2 })
  hs = hunks.compute('a\nb\n', 'a\n')
  t.eq({ hunks.rows(hs[1], 1) }, { 1, 1 })
  t.eq(hunks.at(hs, 1, 1), 1)
end)

t.test('next and previous hunks from a row', function()
  local hs = hunks.compute('1\n2\n3\n4\n5\n6\n', '1\nX\n3\n4\nY\n6\n')
  t.eq({ hunks.next(hs, 1, 6, 1), hunks.next(hs, 2, 6, 1), hunks.next(hs, 5, 6, 1) }, { 1, 2, nil })
  t.eq({ hunks.next(hs, 6, 6, -1), hunks.next(hs, 5, 6, -1), hunks.next(hs, 2, 6, -1) }, { 2, 1, nil })
  t.eq({ hunks.counts(hs) }, { 2, 2 })
end)

t.test("packed hunks (a big review's) read as the list: at, next, counts, each hunk", function()
  local list = hunks.compute('1\n2\n3\n4\n5\n6\n', '1\nX\n3\n5\n6\nZ\n')
  local flat = {}
  for _, h in ipairs(list) do
    vim.list_extend(flat, h)
  end
  local hs = hunks.packed(flat)
  t.eq({ hunks.count(hs), hunks.count(list), hunks.count(hunks.packed({})) }, { 3, 3, 0 })
  t.eq({ hs[1], hs[2], hs[3], hs[4], hs[0], hs.n }, { list[1], list[2], list[3] })
  for row = 1, 6 do
    t.eq({ hunks.at(hs, row, 6), hunks.next(hs, row, 6, 1), hunks.next(hs, row, 6, -1) }, {
      hunks.at(list, row, 6),
      hunks.next(list, row, 6, 1),
      hunks.next(list, row, 6, -1),
    })
  end
  t.eq({ hunks.counts(hs) }, { hunks.counts(list) })
end)

t.test('dropping one hunk puts the on-disk lines back, the others stay', function()
  local d = review('one\ntwo\nthree\nfour\n', 'one\nTWO\nthree\nFOUR\nfive\n')
  at_line(d, 2, 'drop_hunk')
  t.eq(text(d), 'one\ntwo\nthree\nFOUR\nfive\n')
  t.eq(vim.api.nvim_win_get_cursor(0)[1], 4) -- on to the next change
  at_line(d, 4, 'keep_hunk')
  t.eq(text(d), 'one\ntwo\nthree\nFOUR\nfive\n')
  t.eq(#vim.api.nvim_buf_get_extmarks(d.proposed, -1, 0, -1, { details = true }), 1) -- the ✓
end)

t.test('dropping a deletion and an addition', function()
  local d = review('a\nb\nc\n', 'a\nc\nd\n')
  at_line(d, 2, 'drop_hunk') -- b was deleted above c
  t.eq(text(d), 'a\nb\nc\nd\n')
  at_line(d, 4, 'drop_hunk')
  t.eq(text(d), 'a\nb\nc\n')
end)

t.test('a new file: dropping everything leaves it empty', function()
  local d = review('', 'x = 1\ny = 2\n')
  at_line(d, 1, 'drop_all')
  t.eq(text(d), '')
end)

t.test('deleted to empty: dropping brings the file back, newline and all', function()
  local d = review('one\ntwo\n', '')
  at_line(d, 1, 'drop_hunk')
  t.eq(vim.api.nvim_buf_get_lines(d.proposed, 0, -1, false), { 'one', 'two' })
  t.eq(text(d), 'one\ntwo\n')
end)

t.test('CRLF: a dropped hunk is written with the proposal CRLF line ends', function()
  local d = review('one\r\ntwo\r\n', 'one\r\nTWO\r\n')
  t.eq(#keys.current(d), 1)
  at_line(d, 2, 'drop_hunk')
  t.eq(text(d), 'one\r\ntwo\r\n')
end)

t.test("line ends are the file's; dropping all or the last hunk brings the file's back", function()
  local d = review('one\r\ntwo\r\n', 'one\ntwo\nthree\n')
  t.eq(text(d), 'one\r\ntwo\r\nthree\r\n')
  vim.bo[d.proposed].fileformat = 'unix' -- the user takes the proposal's LF
  at_line(d, 1, 'drop_all')
  t.eq(text(d), 'one\r\ntwo\r\n')
  d = review('one\r\ntwo\r\n', 'ONE\ntwo\nthree\n')
  vim.bo[d.proposed].fileformat = 'unix'
  at_line(d, 3, 'drop_hunk')
  t.eq(text(d), 'ONE\r\ntwo\r\n')
  t.eq(vim.bo[d.proposed].modified, false)
end)

t.test('no EOL on disk: dropping the last hunk ends the text as the file does', function()
  local d = review('one\ntwo', 'one\nTWO\nthree\n')
  at_line(d, 2, 'drop_all')
  t.eq(text(d), 'one\ntwo')
  d = review('one\ntwo\n', 'one\nTWO')
  at_line(d, 2, 'drop_hunk')
  t.eq(text(d), 'one\ntwo\n')
end)

t.test('events carry the hunk, the path and the client', function()
  local d = review('a\n', 'b\n')
  d.client = 'gemini-cli'
  local seen = {}
  vim.api.nvim_create_autocmd('User', {
    pattern = { 'GeminiReviewHunkKept', 'GeminiReviewHunkDropped' },
    callback = function(ev)
      table.insert(seen, { ev.match, ev.data.client, ev.data.hunk or ev.data.count })
    end,
  })
  at_line(d, 1, 'keep_hunk')
  at_line(d, 1, 'drop_all')
  t.eq(seen, {
    { 'GeminiReviewHunkKept', 'gemini-cli', { old_start = 1, old_count = 1, new_start = 1, new_count = 1 } },
    { 'GeminiReviewHunkDropped', 'gemini-cli', 1 },
  })
end)

t.test('no change under the cursor: says so and changes nothing', function()
  local d = review('a\nb\nc\n', 'a\nB\nc\n')
  local said
  require('gemini_companion.notify').say = function(msg)
    said = msg
  end
  at_line(d, 3, 'drop_hunk')
  t.eq(said, 'no change under the cursor (]c goes to the next one)')
  t.eq(text(d), 'a\nB\nc\n')
  at_line(d, 3, 'prev_hunk')
  t.eq(vim.api.nvim_win_get_cursor(0)[1], 2)
end)

t.test('the list shows file, client, +/- and age, aligned', function()
  local list = require('gemini_companion.review.list')
  local a = review('one\ntwo\n', 'one\nTWO\nthree\n')
  a.key, a.client, a.opened_at = vim.fn.getcwd() .. '/a.py', 'gemini', 1000
  local b = review('x\n', '')
  b.key, b.orphan, b.opened_at = '/elsewhere/b.py', true, 1000
  t.eq(list.lines({ a, b }, 1125), {
    'a.py             gemini                         +2 −1  2m',
    '/elsewhere/b.py  (orphaned: its session ended)  +0 −1  2m',
  })
end)

t.test('a count jumps that many changes, as far as there are', function()
  local d = review('1\n2\n3\n4\n5\n6\n7\n', 'X\n2\nY\n4\nZ\n6\n7\n')
  keys.attach(d, require('gemini_companion.config').defaults.review.keymaps, function() end)
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  vim.cmd('normal 2]c') -- the mapping, with a count, as a user types it
  t.eq(vim.api.nvim_win_get_cursor(0)[1], 5)
  vim.cmd('normal 9[c')
  t.eq(vim.api.nvim_win_get_cursor(0)[1], 1)
end)

t.test("the hunks follow 'diffopt' (its algorithm)", function()
  local old, new, saved = 'a\nb\nc\na\nb\n', 'a\nb\na\nb\nc\n', vim.o.diffopt
  vim.o.diffopt = 'internal,filler'
  t.eq(hunks.compute(old, new), { { 3, 1, 2, 0 }, { 5, 0, 5, 1 } })
  vim.o.diffopt = 'internal,filler,algorithm:patience'
  t.eq(hunks.compute(old, new), { { 2, 0, 3, 2 }, { 4, 2, 5, 0 } })
  vim.o.diffopt = saved
end)

t.test('split: a CR is a line end only before a newline; a lone or final CR is text', function()
  t.eq({ lines_of.split('\r') }, { { '\r' }, false, false })
  t.eq({ lines_of.split('a\r\nb\r') }, { { 'a', 'b\r' }, false, true })
  t.eq({ lines_of.split('a\r\nb\r\n') }, { { 'a', 'b' }, true, true })
  t.eq({ lines_of.split('a\nb') }, { { 'a', 'b' }, false, false })
end)
