-- :GeminiChanges as the user drives it (was tests/integration/test_review_changes.py and
-- test_review_changes_keys.py): files changed on disk without a review (an agent's auto-edit or
-- shell command), listed in the quickfix list, shown as diffs with keys that put the earlier text
-- back through an undoable write. The host is stubbed (host_stub.lua): an agent session connecting
-- is ON_STATE's client count, as lifecycle.py pushes it.
local t = ...
local H = require('host_stub')

local tabs = H.tabs

local function lines(buf)
  return vim.api.nvim_buf_get_lines(buf or 0, 0, -1, false)
end

local function git(ws, ...)
  local done = vim.system({ 'git', '-c', 'user.name=u', '-c', 'user.email=u@example.com', ... }, { cwd = ws }):wait()
  assert(done.code == 0, done.stderr)
end

--- An agent session connects, and the workspace snapshot holds `files` files.
local function snapshot_taken(files)
  H.clients(1)
  local watched = ('%d file%s watched'):format(files, files ~= 1 and 's' or '')
  local said = ('gemini-companion: no file changed on disk without a review (%s)'):format(watched)
  -- As long as t.wait_for: under a second full run alongside, the snapshot's slices come late.
  local ok = vim.wait(20000, function()
    return #H.changes_listed(t) == 0 and H.last_message() == said
  end, 5)
  assert(ok, 'waited for ' .. said .. ', last said: ' .. tostring(H.last_message()))
end

local function noticed(said)
  t.wait_for(function()
    return vim.tbl_contains(H.messages(), said)
  end, said)
end

H.test(t, 'changes without a review are shown and reverted hunk by hunk', function(ws)
  local target = ws .. '/w.txt'
  H.write_file(target, 'one\ntwo\nthree\n')
  vim.cmd('edit w.txt')
  vim.cmd('nnoremap <buffer> do <Cmd>let g:mine = 1<CR>') -- the user's own mapping
  vim.cmd('tabnew')
  H.write_file(target, 'ONE\ntwo\nTHREE\n') -- the agent's shell command
  noticed('gemini-companion: w.txt changed on disk without a review (:GeminiChanges shows it)')
  vim.cmd('GeminiChanges')
  t.eq(
    vim.tbl_map(function(i)
      return { vim.fn.fnamemodify(vim.fn.bufname(i.bufnr), ':.'), i.lnum, i.text }
    end, vim.fn.getqflist()),
    { { 'w.txt', 1, '+2 −2 changed without a review' } }
  )
  t.eq(vim.api.nvim_buf_get_name(0), target)
  t.eq(lines(), { 'ONE', 'two', 'THREE' }) -- the file as it is now
  t.eq(vim.api.nvim_win_get_cursor(0)[1], 1)
  H.type('do')
  t.wait_for(function()
    return H.read_file(target) == 'one\ntwo\nTHREE\n'
  end, 'first change reverted on disk')
  H.type('u') -- an ordinary change: undo brings the agent's text back
  t.eq(lines(), { 'ONE', 'two', 'THREE' })
  H.type('<C-r>')
  t.eq(lines(), { 'one', 'two', 'THREE' })
  H.type('dO')
  t.wait_for(function()
    return H.read_file(target) == 'one\ntwo\nthree\n'
  end, 'all reverted')
  vim.cmd('wincmd h | tabclose') -- from the "before" side
  local user_map = vim.api.nvim_buf_call(vim.fn.bufnr('w.txt'), function()
    return vim.fn.maparg('do', 'n')
  end)
  t.eq(user_map, '<Cmd>let g:mine = 1<CR>') -- the user's own mapping is back
  vim.cmd('GeminiChanges')
  t.eq(H.last_message(), 'gemini-companion: no file changed on disk without a review (1 file watched)')
end)

H.test(t, 'a buffer with unsaved edits is never touched', function(ws)
  local target = ws .. '/w.txt'
  H.write_file(target, 'one\n')
  vim.cmd('edit w.txt')
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'mine' })
  H.write_file(target, 'agent\n')
  local before = tabs()
  vim.cmd('GeminiChanges w.txt')
  assert(H.last_message():find('w.txt has unsaved edits: write or discard them first', 1, true), H.last_message())
  t.eq({ lines(), H.read_file(target), tabs() }, { { 'mine' }, 'agent\n', before })
end)

H.test(t, 'an accepted review is no change without a review', function(ws)
  local target, other = ws .. '/w.txt', ws .. '/b.txt'
  H.write_file(target, 'one\n')
  H.write_file(other, 'bee\n')
  H.clients(1) -- Gemini CLI's IdeClient
  vim.cmd('edit b.txt | edit w.txt')
  H.open(target, 'ONE\n')
  vim.cmd('write')
  t.eq(H.result(t).status, 'accepted')
  H.write_file(target, 'ONE\n') -- Gemini CLI writes what was accepted
  H.write_file(other, 'BEE\n') -- and a change without a review, noticed after it
  noticed('gemini-companion: b.txt changed on disk without a review (:GeminiChanges shows it)')
  for _, m in ipairs(H.messages()) do
    assert(not m:find('w.txt changed on disk', 1, true), m)
  end
  t.eq(H.changes_listed(t), { { 'b.txt', 1, '+1 −1 changed without a review' } }) -- not w.txt
end)

H.test(t, 'bang counts changes from now on', function(ws)
  local target = ws .. '/w.txt'
  H.write_file(target, 'one\n')
  vim.cmd('edit w.txt')
  H.write_file(target, 'before my prompt\n')
  H.write_file(ws .. '/early.txt', 'made before my prompt\n') -- never loaded
  vim.cmd('GeminiChanges!') -- the workspace too is taken as it is now
  local marked = 'gemini-companion: changes are now counted from here (2 files watched)'
  t.wait_for(function()
    return H.last_message() == marked
  end, marked)
  t.eq(H.changes_listed(t), {})
  t.eq(H.last_message(), 'gemini-companion: no file changed on disk without a review (2 files watched)')
  H.write_file(target, 'after it\n')
  H.write_file(ws .. '/late.txt', 'made after it\n')
  t.eq(H.changes_listed(t), {
    { 'late.txt', 1, '+1 −0 new, without a review' },
    { 'w.txt', 1, '+1 −1 changed without a review' },
  })
end)

for _, with_git in ipairs({ true, false }) do
  local id = with_git and 'git' or 'no-git'
  H.test(t, 'new and never-loaded files changed by an agent are listed and reverted: ' .. id, function(ws)
    H.write_file(ws .. '/old.txt', 'one\ntwo\nthree\n') -- never loaded in a buffer
    H.write_file(ws .. '/gone.txt', 'keep me\n')
    local hidden = with_git and '/.git/x.log' or '/.cache/x.log'
    if with_git then
      git(ws, 'init', '-q')
      H.write_file(ws .. '/.gitignore', '*.log\n')
      H.write_file(ws .. '/ignored.log', 'noise\n')
    else
      H.write_file(ws .. hidden, 'noise\n')
    end
    snapshot_taken(with_git and 3 or 2) -- (git: .gitignore too)
    H.write_file(ws .. '/old.txt', 'one\nTWO\nthree\n') -- the agent's write_file, or its shell
    H.write_file(ws .. '/new.txt', 'a\nb\n')
    os.remove(ws .. '/gone.txt')
    H.write_file(ws .. hidden, 'more noise\n')
    if with_git then
      H.write_file(ws .. '/ignored.log', 'more noise\n')
    end
    t.eq(H.changes_listed(t), {
      { 'gone.txt', 1, '+0 −1 deleted without a review' },
      { 'new.txt', 1, '+2 −0 new, without a review' },
      { 'old.txt', 2, '+1 −1 changed without a review' },
    })
    vim.cmd('GeminiChanges old.txt')
    t.eq(lines(), { 'one', 'TWO', 'three' })
    t.eq(vim.api.nvim_win_get_cursor(0)[1], 2)
    H.type('do')
    t.wait_for(function()
      return H.read_file(ws .. '/old.txt') == 'one\ntwo\nthree\n'
    end, 'the earlier text written')
    H.type('u') -- an ordinary change: undo brings the agent's text back
    t.eq(lines(), { 'one', 'TWO', 'three' })
    vim.cmd('GeminiChanges gone.txt') -- restored only by the user's explicit action
    t.eq(H.read_file(ws .. '/gone.txt'), nil)
    H.type('dO')
    t.wait_for(function()
      return H.read_file(ws .. '/gone.txt') == 'keep me\n'
    end, 'restored')
    vim.cmd('GeminiChanges new.txt')
    t.eq(lines(), { 'a', 'b' })
    H.type('dOy') -- a new file, all of it dropped: deleted once confirmed
    t.wait_for(function()
      return H.read_file(ws .. '/new.txt') == nil
    end, 'the new file deleted')
    t.eq(H.last_message(), 'gemini-companion: deleted new.txt')
    vim.cmd('tabonly')
    vim.cmd('write') -- old.txt as undone: the agent's text, written by the user
    t.eq(H.changes_listed(t), {})
  end)
end

H.test(t, 'past the byte cap files are tracked by size and time', function(ws)
  H.write_file(ws .. '/a.txt', 'aaaaaa\n') -- 7 bytes: kept
  H.write_file(ws .. '/b.txt', 'bbbbbb\n') -- 7 more: past max_bytes, size and time only
  H.write_file(ws .. '/c.txt', 'cccccccccc\n') -- past max_file_bytes
  snapshot_taken(3)
  for _, name in ipairs({ 'a', 'b', 'c' }) do
    H.write_file(ws .. '/' .. name .. '.txt', name:upper():rep(6) .. '\n')
  end
  t.eq(H.changes_listed(t), {
    { 'a.txt', 1, '+1 −1 changed without a review' },
    { 'b.txt', 1, 'changed (not snapshotted: over changes.max_bytes)' },
    { 'c.txt', 1, 'changed (not snapshotted: over changes.max_file_bytes)' },
  })
  vim.cmd('GeminiChanges b.txt')
  t.eq(
    H.last_message(),
    'gemini-companion: b.txt: not snapshotted: over changes.max_bytes (see :help gemini-companion-changes)'
  )
end, { settings = { changes = { max_bytes = 10, max_file_bytes = 8 } } })

H.test(t, 'a changed file with unsaved edits is never touched', function(ws)
  H.write_file(ws .. '/w.txt', 'one\n')
  snapshot_taken(1)
  vim.cmd('edit w.txt')
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'mine' })
  H.write_file(ws .. '/w.txt', 'agent\n')
  local before = tabs()
  t.eq(H.changes_listed(t), { { 'w.txt', 1, '+1 −1 changed without a review' } })
  assert(H.last_message():find('w.txt has unsaved edits: write or discard them first', 1, true), H.last_message())
  t.eq({ lines(), H.read_file(ws .. '/w.txt'), tabs() }, { { 'mine' }, 'agent\n', before })
end)

H.test(t, "review keys act only in a changes view and give the user's mappings back", function(ws)
  local target = ws .. '/w.txt'
  H.write_file(target, 'one\ntwo\n')
  vim.cmd('edit w.txt')
  vim.cmd('nnoremap <buffer> do <Cmd>let g:mine += 1<CR>') -- the user's own mapping
  vim.g.mine = 0
  H.write_file(target, 'ONE\ntwo\n') -- the agent's shell command
  vim.cmd('GeminiChanges w.txt') -- tab 2
  vim.cmd('GeminiChanges w.txt') -- tab 3: a second view of the same buffer
  vim.cmd('1tabnext') -- an ordinary window on the same buffer
  t.eq(lines(), { 'ONE', 'two' })
  H.type('do')
  t.eq(vim.g.mine, 1) -- the user's own `do` ran
  t.eq(H.read_file(target), 'ONE\ntwo\n') -- no review key acted outside a view
  vim.cmd('2tabnext | tabclose') -- the first view closes: the second keeps its keys
  vim.cmd('2tabnext | wincmd l')
  H.type('do')
  t.wait_for(function()
    return H.read_file(target) == 'one\ntwo\n'
  end, 'reverted from the second view')
  vim.cmd('tabclose')
  local user_maps = vim.api.nvim_buf_call(vim.fn.bufnr('w.txt'), function()
    return { vim.fn.maparg('do', 'n'), vim.fn.maparg('dO', 'n'), vim.fn.maparg('dP', 'n') }
  end)
  t.eq(user_maps, { '<Cmd>let g:mine += 1<CR>', '', '' }) -- exactly the user's own
  H.write_file(target, 'AGENT\n')
  vim.cmd('checktime')
  H.type('do')
  t.eq(vim.g.mine, 2) -- the user's own `do` ran again
  H.type('dO') -- Vim's own d + O: no file written
  t.eq(tabs(), 1)
  t.eq(H.read_file(target), 'AGENT\n')
end)

H.test(t, "the user's write to another file is the user's own", function(ws)
  git(ws, 'init', '-q')
  H.write_file(ws .. '/a.txt', 'one\ntwo\n')
  H.write_file(ws .. '/b.txt', 'old b\n')
  snapshot_taken(2)
  vim.cmd('edit a.txt')
  H.write_file(ws .. '/a.txt', 'one\nTWO\n') -- the agent, while the buffer holds the old text
  vim.cmd('write! b.txt') -- the user's own writes, from a.txt's buffer
  vim.cmd('write a.bak.txt')
  t.eq(H.read_file(ws .. '/b.txt'), 'one\ntwo\n')
  t.eq(H.changes_listed(t), { { 'a.txt', 2, '+1 −1 changed without a review' } })
end)

H.test(t, 'a file the snapshot never listed is not watched and never emptied', function(ws)
  git(ws, 'init', '-q')
  H.write_file(ws .. '/.gitignore', '*.env\n')
  H.write_file(ws .. '/secret.env', 'KEY=1\n')
  snapshot_taken(1)
  H.write_file(ws .. '/new.txt', 'a\n')
  vim.cmd('GeminiChanges secret.env')
  local said = 'gemini-companion: secret.env: not watched (ignored by git, hidden, past changes.max_files'
    .. ' or outside the workspace) (see :help gemini-companion-changes)'
  t.wait_for(function()
    return H.last_message() == said
  end, said)
  t.eq(tabs(), 1)
  t.eq(H.read_file(ws .. '/secret.env'), 'KEY=1\n')
  vim.cmd('GeminiChanges new.txt') -- new in the workspace: shown, no listing needed first
  t.wait_for(function()
    return vim.api.nvim_buf_get_name(0) == ws .. '/new.txt'
  end, 'new.txt shown')
  t.eq(tabs(), 2)
end)

H.test(t, 'bang forgets files deleted before the mark', function(ws)
  H.write_file(ws .. '/a.txt', 'one\n')
  H.write_file(ws .. '/gone.txt', 'bye\n')
  snapshot_taken(2)
  os.remove(ws .. '/gone.txt')
  vim.cmd('GeminiChanges!')
  local marked = 'gemini-companion: changes are now counted from here (1 file watched)'
  t.wait_for(function()
    return H.last_message() == marked
  end, marked)
  t.eq(H.changes_listed(t), {})
  H.write_file(ws .. '/gone.txt', 'back\n')
  t.eq(H.changes_listed(t), { { 'gone.txt', 1, '+1 −0 new, without a review' } })
end)

-- was test_review_changes_keys.py ------------------------------------------------------------------

for _, case in ipairs({ { 'y', true }, { 'n', false }, { '<Esc>', false } }) do
  local key, deleted = case[1], case[2]
  H.test(t, 'deleting a new file takes one key and swallows no command: ' .. key, function(ws)
    H.write_file(ws .. '/old.txt', 'one\n')
    snapshot_taken(1)
    H.write_file(ws .. '/new.txt', 'a\nb\n') -- the agent
    vim.cmd('GeminiChanges new.txt')
    t.wait_for(function()
      return vim.deep_equal(lines(), { 'a', 'b' })
    end, 'the new file shown')
    H.type('dO' .. key .. ':let g:next = 1<CR>') -- one key answers; the user's next command runs
    t.eq(vim.g.next, 1)
    vim.g.next = nil
    t.eq(H.read_file(ws .. '/new.txt') == nil, deleted)
  end)
end

H.test(t, 'the quickfix list is counted and walking it shows each pair in the same view', function(ws)
  local names = { 'a.txt', 'b.txt', 'c.txt' }
  for _, name in ipairs(names) do
    H.write_file(ws .. '/' .. name, name .. ' before\n')
  end
  snapshot_taken(3)
  for _, name in ipairs(names) do
    H.write_file(ws .. '/' .. name, name .. ' after\n') -- the agent
  end
  local function sides()
    return vim.tbl_map(function(win)
      local buf = vim.api.nvim_win_get_buf(win)
      return { vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':t'), lines(buf), vim.wo[win].diff }
    end, vim.api.nvim_tabpage_list_wins(0))
  end
  local function pair(name)
    return { { name .. ' (before the change)', { name .. ' before' }, true }, { name, { name .. ' after' }, true } }
  end
  local before_tabs = tabs()
  vim.cmd('GeminiChanges')
  noticed('gemini-companion: 3 files changed without a review: :copen lists them, :cnext shows the next')
  t.eq(sides(), pair('a.txt'))
  vim.cmd('cnext')
  t.eq(sides(), pair('b.txt'))
  vim.cmd('copen')
  H.type('3G<CR>') -- <CR> in the quickfix window
  t.wait_for(function()
    return vim.api.nvim_buf_get_name(0) == ws .. '/c.txt'
  end, 'c.txt shown')
  vim.cmd('cclose')
  t.eq(sides(), pair('c.txt'))
  vim.cmd('cfirst')
  t.eq(sides()[1], pair('a.txt')[1])
  t.eq(tabs(), before_tabs + 1)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    assert(not vim.api.nvim_buf_get_name(buf):find('%]$'), vim.api.nvim_buf_get_name(buf)) -- no "(before the change) [2]"
  end
  H.type('dO')
  t.wait_for(function()
    return H.read_file(ws .. '/a.txt') == 'a.txt before\n'
  end, 'a.txt reverted')
end)
