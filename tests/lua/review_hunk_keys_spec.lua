-- Per-hunk decisions in a proposal, the User events they fire, the list of pending reviews, and how a
-- review is drawn (was tests/integration/test_review_hunks.py): typed as a user types them, asserted
-- as what the client would receive (the ReviewDecided event) and what is on disk. The host is
-- stubbed (host_stub.lua).
local t = ...
local H = require('host_stub')

local function focus_proposal(path)
  local buf = H.proposed_buf(path)
  t.wait_for(function()
    return vim.api.nvim_get_current_buf() == buf
  end, 'focus on the proposal')
  return buf
end

local hunk_keys = {
  { 'drop first', 'one\ntwo\nthree\nfour\n', 'one\nTWO\nthree\nFOUR\nfive\n', 'do', 'one\ntwo\nthree\nFOUR\nfive\n' },
  { 'keep then drop', 'one\ntwo\nthree\nfour\n', 'one\nTWO\nthree\nFOUR\nfive\n', 'dpdo', 'one\nTWO\nthree\nfour\n' },
  { 'jump', 'one\ntwo\nthree\n', 'one\nTWO\nthree\nfour\n', ']cdo[cdp', 'one\nTWO\nthree\n' },
  { 'new file', nil, 'x = 1\ny = 2\n', 'dO', '' },
  { 'deleted to empty', 'one\ntwo\n', '', 'do', 'one\ntwo\n' },
  { 'crlf', 'one\r\ntwo\r\n', 'one\r\nTWO\r\nthree\r\n', 'dodo', 'one\r\ntwo\r\n' },
  { 'no eol', 'one\ntwo', 'ONE\ntwo\nthree\n', 'dO', 'one\ntwo' },
  { 'all', 'one\ntwo\n', 'ONE\nTWO\n', 'dPdO', 'one\ntwo\n' },
}
for _, case in ipairs(hunk_keys) do
  local id, on_disk, proposal, keys, expected = case[1], case[2], case[3], case[4], case[5]
  H.test(t, 'hunk keys decide exactly what accept sends: ' .. id, function(ws)
    local target = ws .. '/c.txt'
    if on_disk then
      H.write_file(target, on_disk)
    end
    H.open(target, proposal)
    focus_proposal(target)
    H.type(keys .. ':w<CR>')
    t.eq(H.result(t), { status = 'accepted', content = expected, path = target })
    t.eq(H.read_file(target), on_disk) -- Gemini CLI writes, never we
  end)
end

H.test(t, 'hunk keys are configurable and go with the review', function(ws)
  local target = ws .. '/c.txt'
  H.write_file(target, 'one\ntwo\n')
  H.open(target, 'ONE\ntwo\n')
  local buf = focus_proposal(target)
  local maps = vim.tbl_map(function(m)
    return m.lhs
  end, vim.api.nvim_buf_get_keymap(buf, 'n'))
  table.sort(maps)
  local expected = { 'ZZ', 'gx', 'dP', 'dO', ']c', '[c', '\\c' } -- (and the comment key, <LocalLeader>c)
  table.sort(expected)
  t.eq(maps, expected)
  H.type('gx:w<CR>')
  t.eq(H.result(t), { status = 'accepted', content = 'one\ntwo\n', path = target })
  t.wait_for(function() -- its keys went with it
    return #H.pending() == 0 and not vim.api.nvim_buf_is_valid(buf)
  end, 'review closed, its buffer gone')
end, { settings = { review = { keymaps = { drop_hunk = 'gx', keep_hunk = false } } } })

H.test(t, 'each decision fires a User event naming the client', function(ws)
  local target = ws .. '/c.txt'
  H.write_file(target, 'one\ntwo\nthree\n')
  local seen = {}
  vim.api.nvim_create_autocmd('User', {
    pattern = 'GeminiReview*',
    callback = function(ev)
      local d = ev.data
      local detail = d.hunk and d.hunk.new_start or d.content or vim.NIL
      table.insert(seen, { ev.match, vim.fn.fnamemodify(d.path, ':t'), d.client, detail })
    end,
  })
  local client = 'nvim-gemini-test-ts-client'
  H.open(target, 'ONE\ntwo\nTHREE\n', { client = client })
  focus_proposal(target)
  H.type('dpdo:w<CR>')
  t.eq(H.result(t), { status = 'accepted', content = 'ONE\ntwo\nthree\n', path = target })
  H.open(target, 'x\n', { client = client })
  focus_proposal(target)
  vim.cmd('GeminiReject')
  t.eq(H.result(t), { status = 'rejected', path = target })
  t.wait_for(function()
    return #seen == 6
  end, 'six events')
  t.eq(seen, {
    { 'GeminiReviewOpened', 'c.txt', client, vim.NIL },
    { 'GeminiReviewHunkKept', 'c.txt', client, 1 },
    { 'GeminiReviewHunkDropped', 'c.txt', client, 3 },
    { 'GeminiReviewAccepted', 'c.txt', client, 'ONE\ntwo\nthree\n' },
    { 'GeminiReviewOpened', 'c.txt', client, vim.NIL },
    { 'GeminiReviewRejected', 'c.txt', client, vim.NIL },
  })
end)

H.test(t, 'one list of every pending review to jump, accept or reject', function(ws)
  H.write_file(ws .. '/a.py', 'one\ntwo\n')
  H.write_file(ws .. '/b.py', 'bee\n')
  local statusline = require('gemini_companion').statusline
  local a = H.open(ws .. '/a.py', 'one\nTWO\nthree\n') -- from Gemini CLI's IdeClient
  H.open(ws .. '/b.py', '', { client = 'nvim-gemini-test-ts-client' })
  -- The client count is the host's (ON_STATE, as lifecycle.py pushes it once both connected).
  require('gemini_companion.bridge').on_state({ state = 'running', workspace_path = ws, client_count = 2 })
  t.wait_for(function()
    return statusline() == 'Gemini ● 2 · 2 reviews'
  end, 'status line')
  vim.cmd('GeminiReviews')
  local listed = vim.tbl_map(function(line)
    return (line:gsub('%d+s$', '<age>'))
  end, vim.api.nvim_buf_get_lines(0, 0, -1, false))
  t.eq(listed, {
    'a.py  Gemini CLI                  +2 −1  <age>',
    'b.py  nvim-gemini-test-ts-client  +0 −1  <age>',
  })
  H.type('jr') -- reject b.py from the list
  t.eq(H.result(t), { status = 'rejected', path = ws .. '/b.py' })
  t.wait_for(function()
    return vim.api.nvim_buf_line_count(0) == 1
  end, 'the list without b.py')
  H.type('<CR>') -- go to a.py's review
  t.wait_for(function()
    return vim.api.nvim_get_current_buf() == a
  end, "in a.py's proposal")
  vim.cmd('GeminiReviews')
  H.type('a')
  t.eq(H.result(t), { status = 'accepted', content = 'one\nTWO\nthree\n', path = ws .. '/a.py' })
  t.wait_for(function()
    return statusline() == 'Gemini ● 2'
  end, 'nothing pending')
  t.eq({ H.read_file(ws .. '/a.py'), H.read_file(ws .. '/b.py') }, { 'one\ntwo\n', 'bee\n' })
end)

for _, case in ipairs({ { 'small', 3 }, { 'over FOLD_MAX_LINES', 20001 } }) do
  local id, count = case[1], case[2]
  H.test(t, 'a review is a diff with folds unless very large: ' .. id, function(ws)
    local target = ws .. '/big.txt'
    local lines = {}
    for i = 0, count - 1 do
      lines[#lines + 1] = ('line %d\n'):format(i)
    end
    local on_disk = table.concat(lines)
    H.write_file(target, on_disk)
    H.open(target, (on_disk:gsub('line 1\n', 'LINE 1\n', 1)) .. 'added\n')
    focus_proposal(target)
    local fold = count < 20000 and 'diff' or 'manual'
    local windows = vim.tbl_map(function(w)
      return { vim.wo[w].diff, vim.wo[w].scrollbind, vim.wo[w].foldmethod }
    end, vim.api.nvim_tabpage_list_wins(0))
    t.eq(windows, { { true, true, fold }, { true, true, fold } })
    t.eq(vim.api.nvim_win_get_cursor(0)[1], 2) -- on the first change
    H.type('do:w<CR>')
    t.eq(H.result(t), { status = 'accepted', content = on_disk .. 'added\n', path = target })
  end)
end

H.test(t, 'the unified layout shows removed lines inline with the same keys', function(ws)
  local target = ws .. '/c.txt'
  H.write_file(target, 'a\nb\nc\nd\n')
  local function shown()
    local d = require('gemini_companion.review').reviews()[1]
    return require('gemini_companion.review.layouts.unified').shown(d)
  end
  local buf = H.open(target, 'A\nb\nd\ne\n')
  focus_proposal(target)
  t.eq(#vim.api.nvim_tabpage_list_wins(0), 1) -- one editable buffer
  t.eq(vim.api.nvim_buf_get_lines(0, 0, -1, false), { 'A', 'b', 'd', 'e' })
  t.eq(vim.api.nvim_win_get_cursor(0)[1], 1)
  t.eq(shown(), {
    { 1, 'removed above', 'a' },
    { 1, 'added', 1 },
    { 2, 'removed below', 'c' },
    { 4, 'added', 4 },
  })
  H.type('do') -- a comes back; the drawing follows
  t.wait_for(function()
    return vim.deep_equal(shown(), { { 2, 'removed below', 'c' }, { 4, 'added', 4 } })
  end, 'redrawn')
  H.type('do') -- the cursor moved on to the next change: c comes back too
  t.wait_for(function()
    return vim.deep_equal(shown(), { { 5, 'added', 5 } })
  end, 'redrawn')
  H.type(':w<CR>')
  t.eq(H.result(t), { status = 'accepted', content = 'a\nb\nc\nd\ne\n', path = target })
  t.wait_for(function()
    return not vim.api.nvim_buf_is_valid(buf)
  end, 'closed')

  H.open(target, '') -- deleted to empty, then rejected with :q
  focus_proposal(target)
  t.eq(shown(), {
    { 1, 'removed above', 'a' },
    { 1, 'removed above', 'b' },
    { 1, 'removed above', 'c' },
    { 1, 'removed above', 'd' },
  })
  vim.cmd('quit')
  t.eq(H.result(t), { status = 'rejected', path = target })
  t.eq(H.read_file(target), 'a\nb\nc\nd\n')
end, { settings = { review = { layout = 'unified' } } })
