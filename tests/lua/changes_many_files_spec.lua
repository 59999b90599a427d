-- :GeminiChanges in a git workspace past changes.max_files (was
-- tests/integration/test_review_changes.py; a file of its own: writing 25 000 files takes a while).
local t = ...
local H = require('host_stub')

H.test(t, 'in a git workspace past max_files no change is missed', function(ws)
  -- Issue 29: past max_files (20 000 by default) the snapshot used to miss changes silently (at
  -- 50 000 files, 6 of 10); with a commit, git says what differs from it, whatever the count. 25 000
  -- files are past the default cap and take half the time to write. The user's own uncommitted
  -- work at the snapshot is the baseline, not a change.
  for folder = 0, 249 do
    for i = 0, 99 do
      H.write_file(('%s/d%03d/f%02d.py'):format(ws, folder, i), ('x = %d\n'):format(folder * 100 + i))
    end
  end
  local function git(...)
    local done = vim.system({ 'git', '-c', 'user.name=u', '-c', 'user.email=u@example.com', ... }, { cwd = ws }):wait()
    assert(done.code == 0, done.stderr)
  end
  git('init', '-q')
  git('add', '-A')
  git('commit', '-qm', '25k files')
  H.write_file(ws .. '/d000/f00.py', 'mine = 1\n') -- the user's, before the agent came
  H.clients(1) -- an agent session connects: the workspace is snapshotted
  local said = 'gemini-companion: no file changed on disk without a review'
    .. ' (git compares every file with its commit; 1 file watched)'
  local ok = vim.wait(20000, function()
    return #H.changes_listed(t) == 0 and H.last_message() == said
  end, 20)
  assert(ok, 'waited for ' .. said .. ', last said: ' .. tostring(H.last_message()))
  local touched = {}
  for folder = 0, 249, 25 do -- 10, all over
    touched[#touched + 1] = ('d%03d/f%02d.py'):format(folder, folder % 100)
  end
  for _, name in ipairs(touched) do
    H.write_file(ws .. '/' .. name, H.read_file(ws .. '/' .. name) .. 'y = 1\n')
  end
  H.write_file(ws .. '/d249/new.py', 'z = 1\n')
  local listed = H.changes_listed(t)
  local expected = vim.list_extend(vim.deepcopy(touched), { 'd249/new.py' })
  t.eq(
    vim.tbl_map(function(row)
      return row[1]
    end, listed),
    expected
  )
  for i = 1, #listed - 1 do
    t.eq(listed[i][3], '+1 −0 changed without a review')
  end
  vim.cmd('GeminiChanges ' .. touched[#touched]) -- shown as a diff against the commit's text
  t.eq(vim.api.nvim_buf_get_lines(0, 0, -1, false), { 'x = 22525', 'y = 1' })
  H.type('dO')
  t.wait_for(function()
    return H.read_file(ws .. '/' .. touched[#touched]) == 'x = 22525\n'
  end, "the commit's text back")
end)
