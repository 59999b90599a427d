-- A review never takes what is the user's (was tests/integration/test_review_guards.py): what they
-- saved while it was open, their file's line ends, their own diff windows and options, their edits
-- to a proposal the same session replaces. The host is stubbed (host_stub.lua).
local t = ...
local H = require('host_stub')

local function lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

-- saved while the review was open -----------------------------------------------------------------

for _, accept in ipairs({ ':w<CR>', ':wq<CR>', ':GeminiAccept<CR>' }) do
  H.test(t, 'accept (' .. accept .. ') is refused once the file changed on disk, and shows it', function(ws)
    local target = ws .. '/c.txt'
    H.write_file(target, 'one\ntwo\nthree\nfour\nfive\n')
    vim.cmd('edit c.txt')
    local buf = H.open(target, 'ONE\ntwo\nthree\nfour\nfive\n')
    H.go_to(buf)
    H.type('Gosix<Esc>') -- the user's edit to the proposal
    t.eq(lines(buf)[6], 'six')
    vim.cmd('tabprevious')
    vim.cmd("call setline(3, 'three by me') | write") -- the user's own save, review open
    vim.cmd('tabnext')
    H.go_to(buf)
    local seen = H.said()
    H.type(accept)
    t.eq(H.messages(seen), {
      'gemini-companion: not accepted: c.txt changed on disk since the proposal opened; the review now'
        .. ' compares with the new text and your proposal is kept: check it and accept again',
    })
    local original = require('gemini_companion.review').pending()[1].original_buf
    t.eq(lines(original), { 'one', 'two', 'three by me', 'four', 'five' })
    t.eq(vim.api.nvim_get_current_buf(), buf) -- still open (`:wq` did not close it)
    t.eq(lines(buf), { 'ONE', 'two', 'three', 'four', 'five', 'six' })
    t.eq(H.decisions(), {})
    -- The hunks follow the new text: the user takes their own line back with `do`.
    H.type('3Gdo')
    t.eq(lines(buf)[3], 'three by me')
    H.type(accept)
    t.eq(H.result(t), { status = 'accepted', content = 'ONE\ntwo\nthree by me\nfour\nfive\nsix\n', path = target })
  end)
end

-- by name, with an on-disk window closed ----------------------------------------------------------

H.test(t, 'accept and reject by name after an on-disk window was closed', function(ws)
  local a, b = ws .. '/a.txt', ws .. '/b.txt'
  H.write_file(a, 'one\n')
  H.write_file(b, 'bee\n')
  H.open(a, 'ONE\n')
  vim.cmd('wincmd h | quit') -- make room: the on-disk side of a.txt goes
  H.open(b, 'BEE\n', { client = 'other-client' })
  local seen = H.said()
  vim.cmd('GeminiAccept nothing.txt') -- looks at every review: raised E5108 before
  t.eq(H.messages(seen), {
    'gemini-companion: no proposed edit to accept for nothing.txt (:GeminiReviews lists them)',
  })
  vim.cmd('GeminiReject b.txt')
  t.eq(H.result(t), { status = 'rejected', path = b })
  vim.cmd('GeminiAccept a.txt')
  t.eq(H.result(t), { status = 'accepted', content = 'ONE\n', path = a })
end)

-- line ends ---------------------------------------------------------------------------------------

local line_ends = {
  { 'kept', 'one\r\ntwo\r\n', 'one\ntwo\nthree\n', '', 'one\r\ntwo\r\nthree\r\n' },
  { 'dO', 'one\r\ntwo\r\n', 'one\ntwo\nthree\n', 'dO', 'one\r\ntwo\r\n' },
  { 'user takes LF', 'one\r\ntwo\r\n', 'one\ntwo\n', ':set ff=unix<CR>', 'one\ntwo\n' },
  { 'drop at end', 'one\r\ntwo\r\n', 'one\ntwo\nthree\n', ':set ff=unix<CR>Gdo', 'one\r\ntwo\r\n' },
  { 'LF kept', 'one\ntwo\n', 'one\r\nTWO\r\n', '', 'one\nTWO\n' },
}
for _, case in ipairs(line_ends) do
  local id, on_disk, proposal, keys, expected = unpack(case)
  H.test(t, "line ends stay the file's unless the user says: " .. id, function(ws)
    local target = ws .. '/c.txt'
    H.write_file(target, on_disk)
    local crlf = on_disk:find('\r') ~= nil
    local said = proposal:gsub('\r', '') == on_disk:gsub('\r', '') and 'differs only in' or 'also changes'
    local seen = H.said()
    local buf = H.open(target, proposal)
    t.wait_for(function()
      return vim.api.nvim_get_current_buf() == buf
    end, 'focus on the proposal')
    local ends = crlf and { 'CRLF', 'LF' } or { 'LF', 'CRLF' }
    local take = crlf and 'unix' or 'dos'
    t.eq(H.messages(seen), {
      ('gemini-companion: c.txt: the proposal %s line ends (%s; the file has %s),'):format(said, ends[2], ends[1])
        .. (' kept as the file has them (:set ff=%s in the proposal takes %s)'):format(take, ends[2]),
    })
    H.type(keys .. ':wa<CR>') -- changing 'fileformat' does not make :wa accept
    t.eq(H.pending(), { target })
    H.type(':w<CR>')
    t.eq(H.result(t), { status = 'accepted', content = expected, path = target })
  end)
end

-- :saveas, the user's own diff windows, 'scrollopt' -------------------------------------------------

for _, rename in ipairs({ 'saveas copy.txt', 'file copy.txt | write' }) do
  H.test(t, ':' .. rename .. ' in a proposal neither accepts nor writes', function(ws)
    local target = ws .. '/c.txt'
    H.write_file(target, 'one\n')
    local buf = H.open(target, 'ONE\n')
    local name = vim.api.nvim_buf_get_name(buf)
    vim.cmd(rename)
    local said = H.messages()
    t.eq(said[#said], 'gemini-companion: not written: c.txt is a proposal, :w (without a file name) accepts it')
    t.eq(H.read_file(ws .. '/copy.txt'), nil)
    t.wait_for(function()
      return vim.api.nvim_buf_get_name(buf) == name
    end, "the proposal's own name back")
    t.eq(H.pending(), { target })
    vim.cmd('write')
    t.eq(H.result(t), { status = 'accepted', content = 'ONE\n', path = target })
  end)
end

for _, close in ipairs({ ':w<CR>', ':tabclose<CR>' }) do
  for _, user_hor in ipairs({ false, true }) do
    local name = ("'scrollopt' is as the user had it after a review (%s, %s)"):format(
      close,
      user_hor and 'user has hor' or 'default'
    )
    H.test(t, name, function(ws)
      local target = ws .. '/c.txt'
      H.write_file(target, 'one\n')
      vim.o.scrollopt = 'ver,jump' -- Neovim's default, whatever the case before set
      if user_hor then
        vim.cmd('set scrollopt+=hor')
      end
      local before = vim.o.scrollopt
      H.open(target, 'ONE\n')
      assert(vim.o.scrollopt:find('hor'), vim.o.scrollopt) -- while it is open, as :diffthis sets it
      H.type(close)
      H.result(t)
      t.wait_for(function() -- the view's teardown takes a turn of the event loop
        return #H.pending() == 0 and #vim.api.nvim_list_tabpages() == 1 and vim.o.scrollopt == before
      end, "review closed, 'scrollopt' as before")
    end)
  end
end

-- a newer proposal from the same session -----------------------------------------------------------

H.test(t, "a newer proposal keeps the user's edits to the old one", function(ws)
  local target = ws .. '/a.py'
  H.write_file(target, 'one\n')
  local old = H.open(target, 'ONE\n')
  H.edit_proposal(old, 'mine')
  local seen = H.said()
  -- reviews.py answers the first one (rejected, replaced) and opens the newer one.
  local new = H.open(target, 'Uno\n')
  assert(new ~= old)
  t.eq(lines(new), { 'Uno' })
  t.eq(lines(old), { 'mine', 'ONE' }) -- the user's edits are kept
  t.eq(H.orphaned(), { target })
  t.eq(
    H.messages(seen)[1],
    'gemini-companion: a newer proposal for a.py arrived, so your edited proposal for a.py stays'
      .. (' open in buffer %d: nothing can accept it any more (:w {file} saves a copy,'):format(old)
      .. ' :q discards it)'
  )
end)
