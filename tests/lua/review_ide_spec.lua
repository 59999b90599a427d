-- Gemini CLI's reviews as the editor keeps them (was part of tests/integration/test_gemini_ide.py,
-- which keeps the IdeClient flows end to end): every way of closing rejects exactly once, gemini's
-- closeDiff (its answer in its own prompt) returns the current text or keeps an edited proposal,
-- the user's buffers after the CLI writes, short proposals' exact text, the User autocmds. The host
-- is stubbed (host_stub.lua): H.open is openDiff, H.close_review is closeDiff, what reaches Python
-- is the ReviewDecided event.
local t = ...
local H = require('host_stub')

local tabs = H.tabs

local function view_closed()
  H.view_closed(t)
end

--- Let what was scheduled run (a teardown's deferral, a second decision that must not come).
local function let_it_run()
  vim.wait(300) -- proves nothing happened within a window: as the e2e test's sleep did
end

local closings = {
  quit = function()
    vim.cmd('quit')
  end,
  bdelete = function(buf)
    vim.cmd('bdelete! ' .. buf)
  end,
  tabclose = function()
    vim.cmd('tabclose')
  end,
  bwipeout = function(buf)
    vim.cmd('bwipeout! ' .. buf)
  end,
  GeminiReject = function()
    vim.cmd('GeminiReject')
  end,
  close_left_then_q = function(_, target)
    -- Closing the on-disk side alone keeps the review open; quitting the proposal ends it.
    vim.cmd('wincmd h | quit')
    let_it_run()
    t.eq(H.pending(), { target })
    vim.cmd('quit')
  end,
}
for _, how in ipairs({ 'quit', 'bdelete', 'tabclose', 'bwipeout', 'GeminiReject', 'close_left_then_q' }) do
  H.test(t, 'closing the review (' .. how .. ') rejects exactly once', function(ws)
    local target = H.project(ws)
    local buf = H.open(target, 'changed\n')
    closings[how](buf, target)
    t.eq(H.result(t), { status = 'rejected', path = target })
    view_closed()
    let_it_run()
    t.eq(H.undecided(), true) -- no second result
    t.eq(#H.decisions(), 1)
    t.eq(tabs(), 1)
  end)
end

H.test(t, "gemini's closeDiff (an answer in the CLI) closes the view and returns the current text", function(ws)
  local _, target = H.project(ws)
  local buf = H.open(target, 'proposed\n')
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, { 'edited in neovim' })
  t.eq(H.close_review(target), { found = true, content = 'edited in neovim\n' })
  H.write_file(target, 'edited in neovim\n') -- what gemini does after a yes in its own prompt
  view_closed()
  t.wait_for(function()
    return not vim.api.nvim_buf_is_valid(buf)
  end, 'the view gone')
  t.eq(H.orphaned(), {})
  t.eq(H.decisions(), {}) -- the CLI answered itself: no decision from the editor
end)

H.test(t, "a review the user edited outlives gemini's closeDiff, without writing", function(ws)
  -- Issue 25 item 11: gemini closes the view the same way after a "No" in its prompt or a Ctrl+C;
  -- the edited review vanished without a word. Now the edits stay, as when a session ends.
  local _, target = H.project(ws)
  local buf = H.open(target, 'proposed\n')
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, { 'my own line' })
  t.eq(H.close_review(target).found, true)
  t.wait_for(function()
    return #H.orphaned() == 1
  end, 'kept')
  t.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), { 'my own line' })
  local said = table.concat(H.messages(), '\n')
  t.eq(said:find('without writing it, so your edited proposal for b.py stays open', 1, true) ~= nil, true)
  t.eq(H.read_file(target), 'def foo():\n    return 1\n')
end)

H.test(t, 'a modified user buffer is never clobbered after the CLI writes', function(ws)
  local target = H.project(ws)
  vim.cmd.edit(vim.fn.fnameescape(target))
  local user_buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(user_buf, 0, 1, false, { 'my unsaved change' })
  local buf = H.open(target, 'from gemini\n')
  local original = require('gemini_companion.review').pending()[1].original_buf
  t.eq(vim.api.nvim_buf_get_lines(original, 0, 1, false), { 'line 1' }) -- the disk, not the unsaved buffer
  H.go_to(buf)
  vim.cmd('write')
  t.eq(H.result(t).status, 'accepted')
  H.write_file(target, 'from gemini\n') -- what the CLI does next
  t.wait_for(function()
    return table.concat(H.messages(), '\n'):find('unsaved changes', 1, true) ~= nil
  end, 'warning')
  t.eq(vim.api.nvim_buf_get_lines(user_buf, 0, 1, false), { 'my unsaved change' })
  t.eq(vim.bo[user_buf].modified, true)
end)

H.test(t, 'an unmodified buffer reloads after the CLI writes', function(ws)
  local _, target = H.project(ws)
  vim.cmd.edit(vim.fn.fnameescape(target))
  local user_buf = vim.api.nvim_get_current_buf()
  H.open(target, 'new text\n')
  vim.cmd('write')
  t.eq(H.result(t).status, 'accepted')
  H.write_file(target, 'new text\n')
  t.wait_for(function()
    return vim.deep_equal(vim.api.nvim_buf_get_lines(user_buf, 0, -1, false), { 'new text' })
  end, 'reload')
end)

-- J: a proposal of one empty line used to come back as "" (its newline lost)
for _, case in ipairs({ { '\\n', '\n', '\n' }, { '\\r\\n', '\r\n', '\n' }, { 'empty', '', '' }, { 'x', 'x', 'x\n' } }) do
  local name, content, expected = case[1], case[2], case[3]
  H.test(t, 'a short proposal keeps its exact text: ' .. name, function(ws)
    local target = H.project(ws)
    H.open(target, content)
    -- 'fixeol' adds the newline, as :w would; the line ends are the file's (a.py: LF).
    t.eq(H.close_review(target), { found = true, content = expected })
  end)
end

H.test(t, 'User autocmds follow the reviews, and focus=false leaves the user in the terminal', function(ws)
  H.write_file(ws .. '/a.py', 'a\n')
  local target = ws .. '/a.py'
  local seen = {}
  vim.api.nvim_create_autocmd('User', {
    pattern = { 'GeminiReviewOpened', 'GeminiReviewAccepted', 'GeminiReviewRejected' },
    callback = function(ev)
      table.insert(seen, { ev.match, ev.data.path, ev.data.proposed_buf })
    end,
  })
  vim.cmd('terminal')
  local term_win = vim.api.nvim_get_current_win()
  local buf = H.open(target, 'b\n')
  t.eq(vim.api.nvim_get_current_win(), term_win) -- focus stayed in the terminal
  vim.api.nvim_buf_call(buf, function()
    vim.cmd('write')
  end)
  t.eq(H.result(t).status, 'accepted')
  H.open(target, 'c\n')
  vim.cmd('GeminiRejectAll')
  t.eq(H.result(t).status, 'rejected')
  t.eq(
    vim.tbl_map(function(e)
      return e[1]
    end, seen),
    { 'GeminiReviewOpened', 'GeminiReviewAccepted', 'GeminiReviewOpened', 'GeminiReviewRejected' }
  )
  for _, e in ipairs(seen) do
    t.eq(e[2], target)
  end
  t.eq(seen[1][3], buf)
end, { settings = { review = { focus = false } } })
