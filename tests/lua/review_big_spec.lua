-- Big reviews (issue 29; was tests/integration/test_review_big.py): a 200 000-line proposal opens
-- at once and fills in slices, so Neovim's event loop runs meanwhile (it answers keys and other
-- clients); it cannot be accepted until it is shown whole; then it shows the right hunks and `:w`
-- sends exactly its text. (How long anything blocks is a bench figure, bench/growth_reviews.py,
-- never asserted here.) The host is stubbed (host_stub.lua): what reaches Python is the
-- ReviewDecided event.
local t = ...
local H = require('host_stub')

local LINES = 200000

local function review()
  return require('gemini_companion.review').reviews()[1]
end

--- The review as a second client would see it between two turns of the event loop.
local function state()
  local r = review()
  if not r then
    return nil
  end
  return { filling = r.filling or false, lines = vim.api.nvim_buf_line_count(r.proposed) }
end

--- The hunks the review's keys act on.
local function current_hunks()
  local hs, out = require('gemini_companion.review.keys').current(review()), {}
  for i = 1, require('gemini_companion.text.hunks').count(hs) do
    out[i] = hs[i]
  end
  return out
end

--- The rows the proposal marks (review/layouts/unified.lua's own record of what it drew), or nil.
local function shown()
  local s = require('gemini_companion.review.layouts.unified').shown(review())
  return #s > 0 and s or nil
end

--- How many hunks the review has for its text as it is now (nil until they are found again).
local function fresh()
  local r = review()
  return r.hunks_tick == vim.api.nvim_buf_get_changedtick(r.proposed)
      and require('gemini_companion.text.hunks').count(r.hunks)
    or nil
end

--- `value_i = i` for every line, and the proposal that doubles every 97th value.
local function big_texts(lines)
  local disk, proposal = {}, {}
  for i = 0, (lines or LINES) - 1 do
    disk[i + 1] = ('value_%d = %d\n'):format(i, i)
    proposal[i + 1] = ('value_%d = %d\n'):format(i, i % 97 == 0 and i * 2 or i)
  end
  return table.concat(disk), table.concat(proposal)
end

--- Wait until `fn()` gives a value, and return it.
local function until_given(fn, what)
  local got
  t.wait_for(function()
    got = fn()
    return got
  end, what)
  return got
end

--- Type `keys` that move the view. Neovim's main loop fires WinScrolled once a command moved a
--- window's view; a spec runs in `nvim -l`, before any main loop: it is fired as the loop would.
local function scroll(keys)
  H.type(keys)
  vim.fn.line('w0') -- the view follows the cursor
  vim.api.nvim_exec_autocmds('WinScrolled', { pattern = tostring(vim.api.nvim_get_current_win()), modeline = false })
end

local function rows(marks)
  return vim.tbl_map(function(m)
    return m[1]
  end, marks)
end

H.test(t, 'a 200k-line review fills in slices, shows its hunks and accepts exactly', function(ws)
  local target = ws .. '/big.py'
  local disk, proposal = big_texts()
  H.write_file(target, disk)
  local buf = H.open(target, proposal)
  -- Between turns of the event loop (where another client is answered) it is seen growing.
  local seen = {}
  t.wait_for(function()
    local now = state()
    table.insert(seen, now)
    return not now.filling
  end, 'filled')
  local filling = vim.tbl_map(
    function(s)
      return s.lines
    end,
    vim.tbl_filter(function(s)
      return s.filling
    end, seen)
  )
  local part_filled = vim.tbl_filter(function(n)
    return n > 1 and n < LINES
  end, filling)
  assert(#part_filled > 0, 'the review filled in one go: seen with ' .. vim.inspect(filling))
  t.eq(seen[#seen].lines, LINES)
  t.eq(vim.api.nvim_buf_get_lines(buf, 0, 3, false), { 'value_0 = 0', 'value_1 = 1', 'value_2 = 2' })
  t.eq(vim.api.nvim_buf_get_lines(buf, 97, 98, false), { 'value_97 = 194' })
  local hunks = current_hunks()
  t.eq(#hunks, math.floor((LINES - 1) / 97))
  local last = math.floor((LINES - 1) / 97) * 97 + 1
  t.eq({ hunks[1], hunks[#hunks] }, { { 98, 1, 98, 1 }, { last, 1, last, 1 } })
  t.wait_for(function()
    return vim.api.nvim_get_current_buf() == buf
  end, 'focus on the proposal')
  t.eq(vim.api.nvim_win_get_cursor(0), { 98, 0 }) -- on the first change
  t.eq({ vim.bo[buf].modifiable, vim.bo[buf].filetype }, { true, 'python' })
  -- Past diff mode's size: the proposal shows its hunks itself, found off the main loop.
  t.eq(vim.wo.diff, false)
  local drawn = until_given(shown, 'hunks drawn')
  t.eq({ drawn[1], drawn[2] }, { { 98, 'removed above', 'value_97 = 97' }, { 98, 'added', 98 } })
  -- Marked near what the window shows (unified.AROUND_VIEW lines around it), not all 2 061 hunks;
  -- at the end of the file once the view is there.
  local around = require('gemini_companion.review.layouts.unified').AROUND_VIEW
  local bottom = vim.fn.line('w$')
  assert(math.max(unpack(rows(drawn))) <= bottom + around, 'marked past the view')
  local near = 0
  for _ = 98, bottom + around, 97 do
    near = near + 1
  end
  t.eq(#drawn, 2 * near)
  scroll('G')
  local near_end = until_given(function()
    local s = shown()
    return s and math.min(unpack(rows(s))) > LINES - 2 * around and s
  end, 'the marks near the end')
  local removed_line = ('value_%d = %d'):format(last - 1, last - 1)
  t.eq(vim.list_slice(near_end, #near_end - 1), { { last, 'removed above', removed_line }, { last, 'added', last } })
  scroll('gg')
  until_given(function()
    local s = shown()
    return s and vim.deep_equal({ s[1], s[2] }, { drawn[1], drawn[2] }) and math.max(unpack(rows(s))) < 2 * around
  end, 'the marks near the top again')
  vim.cmd('split') -- a second window at the end: marked around both, each once
  scroll('G')
  local both = until_given(function()
    local s = shown()
    return s and s[1][1] < around and s[#s][1] == last and s
  end, 'the marks near both windows')
  local distinct = {}
  for _, m in ipairs(both) do
    distinct[table.concat(m, '|')] = true
  end
  t.eq(vim.tbl_count(distinct), #both)
  vim.cmd('close')
  -- An edit is compared again: putting the file's line back leaves one hunk fewer.
  vim.api.nvim_buf_set_lines(buf, 97, 98, false, { 'value_97 = 97' })
  t.wait_for(function()
    return fresh() == #hunks - 1
  end, 'compared again')
  local again = shown()
  t.eq({ again[1], again[2] }, { { 195, 'removed above', 'value_194 = 194' }, { 195, 'added', 195 } })
  -- The keys act on those hunks: ]c twice is on the third change, `do` puts the file's line back.
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  H.type(']c]c')
  t.eq(vim.api.nvim_win_get_cursor(0), { 292, 0 }) -- on the next change but one
  H.type('do')
  t.wait_for(function()
    return vim.api.nvim_buf_get_lines(buf, 291, 292, false)[1] == 'value_291 = 291'
  end, "the file's line back")
  t.wait_for(function()
    return fresh() == #hunks - 2
  end, 'compared again after do')
  vim.api.nvim_buf_set_lines(buf, 291, 292, false, { 'value_291 = 582' })
  vim.api.nvim_buf_set_lines(buf, 97, 98, false, { 'value_97 = 194' })
  local closed = review()
  vim.cmd('write')
  local result = H.result(t)
  t.eq({ result.status, result.content == proposal }, { 'accepted', true })
  t.eq(H.read_file(target) == disk, true) -- the plugin never writes the file
  -- Closed: the record keeps neither text (each is 4 MB here).
  t.wait_for(function()
    return closed.disk_text == nil and closed.old_text == nil
  end, 'the texts let go')
end)

H.test(t, 'a review still filling cannot be accepted, and closing it rejects', function(ws)
  local target = ws .. '/big.py'
  local disk, proposal = big_texts()
  H.write_file(target, disk)
  -- Slices of one line: it stays filling long enough to try.
  require('gemini_companion.review.fill').CHUNK_LINES = 1
  local buf = H.open(target, proposal)
  t.eq(state().filling, true)
  t.eq(vim.bo[buf].modifiable, false) -- nobody edits half of it
  local seen = H.said()
  H.go_to(buf)
  vim.cmd('silent! write')
  assert(table.concat(H.messages(seen), '\n'):find('still loading', 1, true), vim.inspect(H.messages(seen)))
  t.eq(state().filling, true) -- still open, not accepted
  t.eq(H.undecided(), true)
  vim.cmd('GeminiReject')
  t.eq(H.result(t), { status = 'rejected', path = target })
  t.wait_for(function()
    return state() == nil and not vim.api.nvim_buf_is_valid(buf)
  end, 'view closed')
end)

H.test(t, 'a big review of a CRLF file keeps its line ends', function(ws)
  -- The file of a big review is read off the main loop, after its buffers were made: they take
  -- its CRLF line ends once it is read, and the accepted text has them, as a small review's has.
  local target = ws .. '/big.py'
  local disk, proposal = big_texts(40000) -- ~1.3 MB together: a big review, in diff mode
  H.write_file(target, (disk:gsub('\n', '\r\n')))
  local buf = H.open(target, proposal) -- LF: the review keeps the file's line ends
  t.wait_for(function()
    return not state().filling
  end, 'filled')
  local original = review().original
  t.eq({ vim.bo[buf].fileformat, vim.bo[original].fileformat }, { 'dos', 'dos' })
  t.eq(vim.api.nvim_buf_get_lines(original, 97, 98, false), { 'value_97 = 97' }) -- no CR left in the lines
  t.wait_for(function()
    return vim.api.nvim_get_current_buf() == buf
  end, 'focus on the proposal')
  t.eq(vim.wo.diff, true)
  vim.cmd('write')
  local result = H.result(t)
  t.eq({ result.status, result.content == (proposal:gsub('\n', '\r\n')) }, { 'accepted', true })
end)
