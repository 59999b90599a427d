-- Reviewing proposed edits as a Vim user does (was tests/integration/test_review.py): habits
-- (`:w`/`:x`/`ZZ` accept, `:q` rejects without E37, one short line each, relative paths and `%`),
-- new folders, only an explicit write accepts, and the user's edits outlive the session. The host
-- is stubbed (host_stub.lua): what reaches Python is the ReviewDecided event.
local t = ...
local H = require('host_stub')

local function project(ws)
  H.write_file(ws .. '/a.py', 'one\ntwo\n')
  H.write_file(ws .. '/b.py', 'bee\n')
  return ws .. '/a.py', ws .. '/b.py'
end

local function view_closed()
  H.view_closed(t)
end

-- issue 14.3: new folders --------------------------------------------------------------------------

H.test(t, 'a new file in new folders is reviewed and nothing is created', function(ws)
  local target = ws .. '/src/new/x.py'
  local buf = H.open(target, 'x = 1\n')
  t.eq(vim.api.nvim_buf_get_name(buf), target .. ' (new file)')
  local original = require('gemini_companion.review').pending()[1].original_buf
  t.eq(vim.api.nvim_buf_get_lines(original, 0, -1, false), { '' }) -- diffed against empty text
  vim.cmd('write')
  t.eq(H.result(t), { status = 'accepted', content = 'x = 1\n', path = target })
  t.eq(vim.fn.isdirectory(ws .. '/src'), 0) -- Gemini CLI creates the folders, never we
end)

-- issue 14.6: review habits ------------------------------------------------------------------------

for _, keys in ipairs({ ':w<CR>', ':x<CR>', 'ZZ', ':wq<CR>', ':update<CR>' }) do
  for _, edited in ipairs({ false, true }) do
    local name = ('%s accepts with one short line (%s)'):format(keys, edited and 'edited' or 'unedited')
    H.test(t, name, function(ws)
      local target = project(ws)
      local buf = H.open(target, 'one\nTWO\n')
      if edited then
        H.edit_proposal(buf, 'zero')
      end
      local seen = H.said()
      H.type(keys)
      t.eq(H.result(t), { status = 'accepted', content = (edited and 'zero\n' or '') .. 'one\nTWO\n', path = target })
      view_closed()
      t.eq(H.messages(seen), { 'gemini-companion: accepted the edit to a.py' })
      t.eq(H.read_file(target), 'one\ntwo\n')
    end)
  end
end

for _, how in ipairs({ 'quit', 'close', 'tabclose' }) do
  H.test(t, ':' .. how .. ' on an edited proposal rejects without E37', function(ws)
    local target = project(ws)
    local buf = H.open(target, 'one\nTWO\n')
    H.edit_proposal(buf, 'zero')
    local seen = H.said()
    vim.cmd(how) -- raised E37 ("No write since last change") before
    t.eq(H.result(t), { status = 'rejected', path = target })
    view_closed()
    t.eq(vim.api.nvim_buf_is_valid(buf), false)
    t.wait_for(function() -- its autocmd group too
      return vim.fn.exists('#gemini_companion_diff_' .. buf) == 0
    end, 'its autocmd group gone')
    t.eq(H.messages(seen), { 'gemini-companion: rejected the edit to a.py' })
  end)
end

H.test(t, 'writing a proposal to another file neither accepts nor writes', function(ws)
  local target = project(ws)
  H.open(target, 'one\nTWO\n')
  vim.cmd('write ' .. ws .. '/copy.py')
  t.eq(H.read_file(ws .. '/copy.py'), nil)
  t.eq(H.pending(), { target })
  local said = H.messages()
  assert(said[#said]:find('not written: a.py is a proposal', 1, true), said[#said])
  vim.cmd('write')
  t.eq(H.result(t), { status = 'accepted', content = 'one\nTWO\n', path = target })
end)

H.test(t, 'a proposal identical to the file says no changes', function(ws)
  local target = project(ws)
  H.open(target, 'one\ntwo\n')
  t.wait_for(function()
    return vim.tbl_contains(H.messages(), 'gemini-companion: a.py: no changes (the proposal is the same as the file)')
  end, 'no changes message')
  vim.cmd('GeminiReject')
  t.eq(H.result(t), { status = 'rejected', path = target })
  for _, m in ipairs(H.messages()) do
    assert(not (m:find('no changes') and m:find('b.py')), m)
  end
end)

local first_change = {
  { 'first line', 'ONE\ntwo\n', 1 },
  { 'second line', 'one\nTWO\n', 2 },
  { 'added at the end', 'one\ntwo\nthree\n', 3 },
  { 'deleted at the end', 'one\n', 1 },
  { 'first of two', 'ONE\ntwo\nthree\n', 1 },
}
for _, case in ipairs(first_change) do
  H.test(t, 'the cursor lands on the first change: ' .. case[1], function(ws)
    local target = project(ws)
    local buf = H.open(target, case[2])
    t.wait_for(function()
      return vim.api.nvim_get_current_buf() == buf
    end, 'focus on the proposal')
    t.eq(vim.api.nvim_win_get_cursor(0)[1], case[3])
    vim.cmd('GeminiReject')
    t.eq(H.result(t), { status = 'rejected', path = target })
  end)
end

H.test(t, 'the cursor lands on a change far into the file', function(ws)
  -- Past the 4 KiB blocks the two texts are compared in, and on a block's edge.
  local lines = {}
  for i = 1, 2000 do
    lines[i] = 'line ' .. i
  end
  local target = ws .. '/long.py'
  H.write_file(target, table.concat(lines, '\n') .. '\n')
  t.eq(#table.concat(vim.list_slice(lines, 1, 467), '\n') + 1, 4095) -- line 468 starts with the first block's last byte
  for _, changed in ipairs({ 1500, 468 }) do
    local proposal = vim.deepcopy(lines)
    proposal[changed] = 'CHANGED'
    proposal[1900] = 'ALSO CHANGED'
    local buf = H.open(target, table.concat(proposal, '\n') .. '\n')
    t.wait_for(function()
      return vim.api.nvim_get_current_buf() == buf
    end, 'focus on the proposal')
    t.eq(vim.api.nvim_win_get_cursor(0)[1], changed)
    vim.cmd('GeminiReject')
    t.eq(H.result(t), { status = 'rejected', path = target })
  end
end)

H.test(t, 'accept and reject take relative paths and %', function(ws)
  local a, b = project(ws)
  vim.fn.mkdir(ws .. '/sub')
  H.open(a, 'A\n')
  vim.cmd('GeminiReject %') -- % is the proposal buffer's name
  t.eq(H.result(t), { status = 'rejected', path = a })

  H.open(a, 'A\n')
  vim.cmd('wincmd h') -- % is the on-disk side's name
  vim.cmd('GeminiAccept %')
  t.eq(H.result(t), { status = 'accepted', content = 'A\n', path = a })

  H.open(a, 'A\n')
  vim.cmd('tabfirst') -- elsewhere, naming the file as the user would
  vim.cmd('GeminiAccept sub/../a.py')
  t.eq(H.result(t), { status = 'accepted', content = 'A\n', path = a })

  H.open(b, 'B\n')
  vim.cmd('tabfirst')
  vim.cmd('GeminiReject a.py') -- not under review: says so, touches nothing
  local said = table.concat(H.messages(), '\n')
  assert(said:find('no proposed edit to reject for a.py', 1, true), said)
  vim.cmd('GeminiReject ./b.py')
  t.eq(H.result(t), { status = 'rejected', path = b })
end)

-- issue 15.6: only an explicit write accepts -------------------------------------------------------

--- What an auto-save plugin does (okuuva/auto-save.nvim without its debounce: the worst case).
local function auto_save()
  vim.api.nvim_create_autocmd({ 'TextChanged', 'TextChangedI', 'InsertLeave', 'BufLeave' }, {
    group = vim.api.nvim_create_augroup('spec_auto_save', {}),
    callback = function(ev)
      if vim.bo[ev.buf].modified and vim.bo[ev.buf].modifiable then
        vim.api.nvim_buf_call(ev.buf, function()
          vim.cmd('silent! write')
        end)
      end
    end,
  })
end

H.test(t, ':wa, autowriteall and auto-save never accept', function(ws)
  auto_save()
  H.write_file(ws .. '/a.py', 'one\n')
  H.write_file(ws .. '/b.py', 'bee\n')
  local target = ws .. '/a.py'
  local buf = H.open(target, 'ONE\n')
  H.edit_proposal(buf, 'typed') -- the auto-save autocmds ran on every change
  t.eq(H.pending(), { target })
  vim.cmd('tabfirst | edit b.py')
  vim.api.nvim_buf_set_lines(0, 0, 1, false, { 'bee edited' })
  vim.cmd('wall')
  t.eq(H.read_file(ws .. '/b.py'), 'bee edited\n') -- :wa wrote the user's file…
  H.go_to(buf)
  vim.cmd('wall') -- …and not the proposal, even from inside it
  vim.o.autowriteall = true
  H.type('Atoo<Esc>')
  t.eq(vim.api.nvim_buf_get_lines(buf, 0, 1, false), { 'typedtoo' })
  vim.cmd('quit') -- with 'autowriteall' this used to write (accept) first
  t.eq(H.result(t), { status = 'rejected', path = target })
  t.eq(H.undecided(), true)
  vim.o.autowriteall = false
  vim.api.nvim_del_augroup_by_name('spec_auto_save')
end)

for _, command in ipairs({ 'wqall', 'xall' }) do
  H.test(t, ':' .. command .. ' never accepts', function(ws)
    local target = project(ws)
    local buf = H.open(target, 'ONE\n')
    H.edit_proposal(buf, 'typed')
    -- An unnamed buffer with text keeps Neovim open (E141) after it wrote what it could.
    vim.api.nvim_buf_set_lines(vim.api.nvim_create_buf(true, false), 0, -1, false, { 'x' })
    t.raises(function()
      vim.cmd(command)
    end, 'E141')
    t.eq(H.pending(), { target })
    vim.cmd('GeminiReject')
    t.eq(H.result(t), { status = 'rejected', path = target })
  end)
end

-- issue 15.9: the user's edits outlive the session -------------------------------------------------

H.test(t, 'an edited proposal outlives its session as an orphan', function(ws)
  local a, b = project(ws)
  local buf = H.open(a, 'one\nTWO\n')
  H.open(b, 'BEE\n')
  H.edit_proposal(buf, 'mine')
  local seen = H.said()
  H.release_review(a) -- the session ended: reviews.py releases each of its reviews
  H.release_review(b)
  t.eq(H.pending(), {})
  t.eq(H.orphaned(), { a })
  t.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), { 'mine', 'one', 'TWO' })
  t.eq(vim.api.nvim_buf_get_name(buf), a .. ' (orphaned proposal)')
  local notes = H.messages(seen)
  t.eq(#notes, 2)
  assert(
    (notes[1] .. notes[2]):find('closed the review of b.py: the session that proposed it ended', 1, true),
    vim.inspect(notes)
  )
  local orphan_note = notes[1]:find('a.py', 1, true) and notes[1] or notes[2]
  assert(orphan_note:find('stays open in buffer ' .. buf, 1, true), orphan_note)
  assert(orphan_note:find(':w {file} saves a copy', 1, true), orphan_note)

  H.go_to(buf)
  t.raises(function()
    vim.cmd('write') -- nothing can accept it, and the file is not written
  end, 'E382')
  t.eq(H.read_file(a), 'one\ntwo\n')
  vim.cmd('write ' .. ws .. '/saved.py') -- a copy where the user says
  t.eq(H.read_file(ws .. '/saved.py'), 'mine\none\nTWO\n')
  vim.cmd('GeminiReviews') -- the list of reviews (:GeminiReviews) names it orphaned
  t.eq(vim.list_slice(vim.split(vim.api.nvim_get_current_line(), '%s+', { trimempty = true }), 1, 5), {
    'a.py',
    '(orphaned:',
    'its',
    'session',
    'ended)',
  })
  t.eq(vim.api.nvim_buf_line_count(0), 1)
  vim.cmd('close')

  -- A new proposal for the same file opens beside it, with its own (writable) name.
  local new_buf = H.open(a, 'new\n')
  t.eq(vim.api.nvim_buf_get_name(new_buf), a .. ' (proposed)')
  t.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), { 'mine', 'one', 'TWO' })
  vim.cmd('write')
  t.eq(H.result(t), { status = 'accepted', content = 'new\n', path = a })
  H.go_to(buf)
  vim.cmd('quit') -- no E37: the orphan is discarded
  t.wait_for(function()
    return #H.orphaned() == 0
  end, 'orphan discarded')
  local said = H.messages()
  assert(said[#said]:find('discarded your edited proposal for a.py', 1, true), said[#said])
end)

H.test(t, 'stopping the server keeps an edited proposal', function(ws)
  local a = project(ws)
  local buf = H.open(a, 'one\nTWO\n')
  H.edit_proposal(buf, 'mine')
  H.server_stopped() -- :GeminiStop: the host says so (ON_STATE)
  t.eq(H.orphaned(), { a })
  t.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), { 'mine', 'one', 'TWO' })
  local said = table.concat(H.messages(), '\n')
  assert(said:find('stays open in buffer ' .. buf, 1, true), said)
end)

H.test(t, 'undo in a fresh proposal does not empty it', function(ws)
  local a = project(ws)
  local buf = H.open(a, 'one\nTWO\n')
  vim.cmd('normal! u') -- went back to an empty buffer before
  t.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), { 'one', 'TWO' })
  vim.cmd('write')
  t.eq(H.result(t), { status = 'accepted', content = 'one\nTWO\n', path = a })
end)

-- After an accept the buffers reload once the agent wrote the file (review/disk.lua): ticks of its
-- check that queued while Neovim ran no scheduled work (here a wait for fast events only, as while
-- Neovim is busy) must not error on the timer the first of them closed.
H.test(t, 'the reload after an accept survives its checks queuing up', function(ws)
  local path = ws .. '/queued.txt'
  H.write_file(path, 'before\n')
  vim.v.errmsg = ''
  require('gemini_companion.review.disk').reload_when_written(path)
  vim.uv.sleep(20) -- a later mtime
  H.write_file(path, 'after, as the agent wrote it\n')
  vim.wait(450, function()
    return false
  end, 10, true) -- fast events only: the timer ticks, its scheduled checks wait in the queue
  vim.wait(100)
  t.eq(vim.v.errmsg, '')
end)
