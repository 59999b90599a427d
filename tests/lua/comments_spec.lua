-- Review comments (issue 28; was tests/integration/test_comments.py): a comment on a line or lines
-- of a proposal, of a :GeminiChanges view, or of a review in :GeminiReviews, shown beside them,
-- listed by :GeminiComments and :GeminiReviews, and sent to the agent as one prompt with
-- `path:line` anchors and the lines they are about, delivered as :GeminiSend delivers (one
-- bracketed paste through the one sanitizer). A rejection with comments asks once whether they go
-- with it. The host is stubbed (host_stub.lua); the agent is the stand-in in a real terminal
-- (tests/fixtures/agent_standin), which records every byte typed into it.
-- (tests/integration/test_comments.py's calc.py is calc.txt here: setting the python filetype in
-- `nvim --clean` probes the Python provider, ~3 s, which is not the comments' concern.)
local t = ...
local H = require('host_stub')

local START, END = '\27[200~', '\27[201~'

--- The virtual text of the comments `buf` shows, as the user sees it beside the lines.
local function shown(buf)
  local ns = require('gemini_companion.comments').ns
  return vim.tbl_map(function(m)
    return m[4].virt_text[1][1]
  end, vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true }))
end

--- :GeminiComments' quickfix list: { lnum, text } each.
local function listed()
  vim.cmd('GeminiComments')
  return vim.tbl_map(function(i)
    return { i.lnum, i.text }
  end, vim.fn.getqflist())
end

--- The stand-in agent running in the agent terminal (`:Gemini`), the user back in their code:
--- the folder it records what it was typed in.
local function running_agent()
  local record = vim.fn.tempname()
  local agent = t.root .. '/tests/fixtures/agent_standin/agent.py'
  vim.g.gemini_companion = { terminal = { cmd = { 'python3', agent, record } } }
  vim.cmd('Gemini')
  t.wait_for(function()
    return H.read_file(record .. '/env.json') ~= nil
  end, 'the agent started')
  H.type('<C-\\><C-n><C-w>p') -- the user leaves Terminal mode, back to their code
  return record
end

--- The agent received exactly `prompt`, as one bracketed paste.
local function received(record, prompt)
  local expected = START .. prompt .. END
  local ok = vim.wait(20000, function()
    return H.read_file(record .. '/input') == expected
  end, 5)
  assert(
    ok,
    ('the agent received %q, not %q'):format(tostring(H.read_file(record .. '/input')), expected)
      .. vim.inspect(H.messages())
  )
end

--- Type `keys`, then answer the one-key question they ask with `key` (typed ahead: notify.yes
--- reads it once the decision asks, before the typed keys are done).
local function answered(keys, key)
  H.type(keys .. key)
end

--- The proposal of `text` for `target`, its window current.
local function proposal(target, text)
  local buf = H.open(target, text)
  H.go_to(buf)
  return buf
end

H.test(t, 'comments on two hunks reach the agent as one prompt', function(ws)
  local record = running_agent()
  local target = ws .. '/calc.txt'
  H.write_file(target, 'a = 1\nb = 2\nc = 3\nd = 4\n')
  local proposed = proposal(target, 'a = 10\nb = 2\nc = 3\nd = 40\n')
  -- As typed: the comment key (<LocalLeader>c; LocalLeader unset: backslash), the text, Enter.
  H.type('1G\\cwhy ten?<CR>')
  H.type('4GV\\ckeep four<CR>')
  t.eq(shown(proposed), { '  » why ten?', '  » keep four' })
  t.eq(listed(), { { 1, 'why ten?' }, { 4, 'keep four' } })
  vim.cmd('GeminiCommentsSend')
  received(
    record,
    'Review comments on your changes:\n\ncalc.txt:1\n> a = 10\nwhy ten?\n\ncalc.txt:4\n> d = 40\nkeep four\n'
  )
  t.eq(shown(proposed), { '  ✓ why ten?', '  ✓ keep four' }) -- marked sent
  local seen = H.said()
  vim.cmd('GeminiComments')
  t.eq(H.messages(seen), { 'gemini-companion: no open review comment (add one with the comment key in a review)' })
end)

H.test(t, 'rejecting a review with comments sends them as the next prompt', function(ws)
  -- Gemini's diffRejected carries no reason: the comments reach the agent's prompt instead.
  local record = running_agent()
  local target = ws .. '/calc.txt'
  H.write_file(target, 'a = 1\n')
  proposal(target, 'a = 2\n')
  H.type('\\cnot two<CR>')
  answered(':q<CR>', 'y') -- rejects the proposal, and asks about the comment
  t.eq(H.result(t), { status = 'rejected', path = target })
  received(record, 'Review comments on your changes:\n\ncalc.txt:1\n> a = 2\nnot two\n')
  t.wait_for(function()
    return vim.tbl_contains(H.messages(), 'gemini-companion: rejected the edit to calc.txt (1 comment sent with it)')
  end, 'the rejection said')
  t.eq(H.read_file(target), 'a = 1\n')
end)

H.test(t, 'rejecting without sending keeps the comments for later', function(ws)
  local record = running_agent()
  local target = ws .. '/calc.txt'
  H.write_file(target, 'a = 1\n')
  proposal(target, 'a = 2\n')
  H.type('\\cnot two<CR>')
  answered(':q<CR>', 'n')
  local said = 'gemini-companion: rejected the edit to calc.txt (1 comment kept: :GeminiCommentsSend sends them)'
  t.wait_for(function()
    return vim.tbl_contains(H.messages(), said)
  end, 'kept')
  t.eq(H.read_file(record .. '/input') or '', '') -- nothing typed into the agent (no file: it has not opened it yet)
  t.eq(listed(), { { 1, 'not two' } }) -- still listed, at the proposal's line
  vim.cmd('edit calc.txt') -- about the rejected text: never drawn in the file
  t.eq(shown(0), {})
  vim.cmd('GeminiCommentsSend')
  received(record, 'Review comments on your changes:\n\ncalc.txt:1\n> a = 2\nnot two\n')
end)

H.test(t, 'a comment on an accepted proposal stays on the file', function(ws)
  local target = ws .. '/calc.txt'
  H.write_file(target, 'a = 1\n')
  proposal(target, 'x = 0\na = 2\n')
  H.type('2G\\cwhy two?<CR>')
  H.type(':w<CR>') -- accepts: the file now holds these lines
  t.eq(H.result(t), { status = 'accepted', content = 'x = 0\na = 2\n', path = target })
  H.view_closed(t)
  H.write_file(target, 'x = 0\na = 2\n') -- as the agent writes it
  vim.cmd('edit calc.txt')
  t.eq(shown(0), { '  » why two?' })
  H.type('ggOnew first line<Esc>') -- the comment moves with the line it is on
  t.eq(listed(), { { 3, 'why two?' } })
end)

H.test(t, 'a comment in a changes view reaches the agent and outlives the view', function(ws)
  local record = running_agent()
  local target = ws .. '/w.txt'
  H.write_file(target, 'one\ntwo\nthree\n')
  vim.cmd('edit w.txt')
  vim.cmd('tabnew')
  H.write_file(target, 'ONE\ntwo\nTHREE\n') -- the agent's shell command
  local said = 'gemini-companion: w.txt changed on disk without a review (:GeminiChanges shows it)'
  t.wait_for(function()
    return vim.tbl_contains(H.messages(), said)
  end, 'the change noticed')
  vim.cmd('GeminiChanges w.txt')
  t.eq(vim.api.nvim_buf_get_name(0), target)
  H.type('3G\\cshout less<CR>')
  local buf = vim.api.nvim_get_current_buf()
  t.eq(shown(buf), { '  » shout less' })
  vim.cmd('wincmd h | tabclose') -- the view closes; the file's buffer goes too
  vim.cmd('bwipeout ' .. buf)
  vim.cmd('GeminiChanges w.txt') -- and the view opens again
  t.eq(shown(0), { '  » shout less' })
  H.type('3G\\c<C-u>shout much less<CR>') -- the key on a commented line edits it
  vim.cmd('GeminiCommentsSend')
  received(record, 'Review comments on your changes:\n\nw.txt:3\n> THREE\nshout much less\n')
  vim.cmd('GeminiCommentsSend!') -- clears the sent ones
  t.eq(shown(0), {})
end)

H.test(t, 'the review list shows, takes and sends comments', function(ws)
  local record = running_agent()
  local target = ws .. '/calc.txt'
  H.write_file(target, 'a = 1\nb = 2\n')
  local proposed = H.open(target, 'a = 1\nb = 3\n')
  vim.cmd('GeminiReviews')
  H.type('cthree?<CR>') -- on the review: a comment on its first change
  local parts = { 'calc.txt', '1 comment', 'Open comments (1):', '  calc.txt:2  » three?' }
  t.wait_for(function()
    local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
    return vim.iter(parts):all(function(part)
      return text:find(part, 1, true) ~= nil
    end)
  end, 'listed')
  t.eq(vim.api.nvim_buf_get_lines(0, 0, 1, false)[1]:match('1 comment$'), '1 comment')
  H.type('3G<CR>') -- the comment's line: to the comment
  t.eq({ vim.api.nvim_get_current_buf(), vim.api.nvim_win_get_cursor(0)[1] }, { proposed, 2 })
  vim.cmd('GeminiReviews')
  H.type('s')
  received(record, 'Review comments on your changes:\n\ncalc.txt:2\n> b = 3\nthree?\n')
end)
