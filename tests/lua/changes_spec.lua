-- changes/init.lua and changes/snapshot.lua: the baseline is bounded, only real changes are
-- listed, and the workspace list's rules and byte budget hold.
local t = ...
local changes = require('gemini_companion.changes')
local snapshot = require('gemini_companion.changes.snapshot')

local dir = vim.fn.tempname()
vim.fn.mkdir(dir, 'p')
local function file(name, text)
  local path = dir .. '/' .. name
  vim.fn.mkdir(vim.fs.dirname(path), 'p')
  local f = assert(io.open(path, 'wb'))
  f:write(text)
  f:close()
  return path
end

local function caps(max_bytes)
  changes.caps = function()
    return { max_bytes = max_bytes, max_file_bytes = 1024, max_files = 100 }
  end
end

local function scanned()
  local out
  changes.scan(function(changed)
    out = changed
  end)
  vim.wait(5000, function()
    return out ~= nil
  end)
  return vim.tbl_map(function(c)
    return { vim.fs.basename(c.path), c.added, c.removed, c.note }
  end, out)
end

--- Snapshot the workspace `ws`, which stays Neovim's current directory: the number of files taken,
--- and the directory to go back to.
local function snapshot_in(ws)
  local cwd = vim.fn.getcwd()
  vim.cmd.cd(ws)
  local taken
  changes.snapshot(false, function(n)
    taken = n
  end)
  vim.wait(5000, function()
    return taken ~= nil
  end)
  return taken, cwd
end

t.test('files past max_bytes of remembered text are listed by size and time, not diffed', function()
  changes.stop()
  caps(10)
  local a, b = file('a', 'aaaaaa\n'), file('b', 'bbbbbb\n') -- 7 bytes each
  changes.remember(a)
  changes.remember(b)
  file('a', 'AAAAAA\n')
  file('b', 'BBBBBBB\n')
  t.eq(scanned(), {
    { 'a', 1, 1, 'changed without a review' },
    { 'b', 0, 0, 'changed (not snapshotted: over changes.max_bytes)' },
  })
end)

t.test('a file written back to its baseline is no change; a deleted one is', function()
  changes.stop()
  caps(1024)
  local a, b = file('a', 'one\n'), file('b', 'two\nthree\n')
  changes.remember(a)
  changes.remember(b)
  file('a', 'x\n')
  file('a', 'one\n')
  os.remove(b)
  t.eq(scanned(), { { 'b', 0, 2, 'deleted without a review' } })
end)

t.test('an empty file deleted, and a file kept by size and time deleted, are listed', function()
  changes.stop()
  caps(4)
  local a, b = file('a', ''), file('b', 'bbbbbb\n')
  changes.remember(a)
  changes.remember(b)
  os.remove(a)
  os.remove(b)
  t.eq(scanned(), {
    { 'a', 0, 0, 'deleted without a review' },
    { 'b', 0, 0, 'deleted (not snapshotted: over changes.max_bytes)' },
  })
end)

t.test('a walk skips hidden, VCS and dependency folders', function()
  t.eq(
    vim.tbl_map(snapshot.enters, { 'src', '.git', '.venv', 'node_modules', '__pycache__', 'lib' }),
    { true, false, false, false, false, true }
  )
end)

t.test("git's NUL-separated list becomes absolute paths, at most max", function()
  t.eq({ snapshot.from_git('a.txt\0sub/b c.lua\0', '/w', 10) }, { { '/w/a.txt', '/w/sub/b c.lua' }, 0 })
  t.eq({ snapshot.from_git('a\0b\0c\0', '/w', 2) }, { { '/w/a', '/w/b' }, 1 })
end)

t.test('the byte budget: per file, then in all', function()
  local c = { max_bytes = 100, max_file_bytes = 60 }
  t.eq({ snapshot.admit(60, 40, c) }, { true })
  t.eq({ snapshot.admit(61, 0, c) }, { false, 'large' })
  t.eq({ snapshot.admit(50, 60, c) }, { false, 'cap' })
end)

t.test('binary: a NUL in the first 8000 bytes', function()
  t.eq({ snapshot.binary('text\n'), snapshot.binary('a\0b'), snapshot.binary(('x'):rep(8000) .. '\0') }, {
    false,
    true,
    false,
  })
end)

t.test('a slow job runs in slices and finishes', function()
  local slices, done = 0, false
  local first = snapshot.run(function()
    for _ = 1, 5 do
      slices = slices + 1
      coroutine.yield('slice')
    end
  end, function(ok)
    done = ok
  end)
  t.eq(first, false)
  vim.wait(2000, function()
    return done
  end)
  t.eq({ slices, done }, { 5, true })
end)

t.test('a new file in a snapshotted workspace (no git) is listed; hidden folders are not', function()
  changes.stop()
  caps(1024)
  local ws = dir .. '/ws'
  file('ws/old.txt', 'old\n')
  local taken, cwd = snapshot_in(ws)
  file('ws/new.txt', 'a\nb\n')
  file('ws/.cache/x', 'x\n')
  file('ws/old.txt', 'OLD\n')
  local got = scanned()
  vim.cmd.cd(cwd)
  t.eq({ taken, got }, {
    1,
    { { 'new.txt', 2, 0, 'new, without a review' }, { 'old.txt', 1, 1, 'changed without a review' } },
  })
end)

t.test('a workspace past max_files is said once, and only its first files are watched', function()
  changes.stop()
  local ws = dir .. '/many'
  file('many/1.txt', 'one\n')
  file('many/2.txt', 'two\n')
  changes.caps = function()
    return { max_bytes = 1024, max_file_bytes = 1024, max_files = 1 }
  end
  local said, notify = {}, vim.notify
  vim.notify = function(msg)
    table.insert(said, msg)
  end
  local taken, cwd = snapshot_in(ws)
  vim.cmd.cd(cwd)
  vim.notify = notify
  t.eq({ taken, said }, {
    1,
    {
      'gemini-companion: 1 file of the workspace past changes.max_files (1) is not watched',
    },
  })
end)

t.test('a remembered text is kept as the review compares it, whether or not it was already so', function()
  caps(1024)
  local hunks = require('gemini_companion.text.hunks')
  local lines_of = require('gemini_companion.text.lines')
  local path = file('form.txt', '')
  for _, text in ipairs({ 'a\n', '\n', '\n\n', 'a\r\nb\r\n', 'a', '', 'a\nb', 'a\rb\n' }) do
    changes.remember(path, text, true)
    t.eq({ text, changes.before_text(path) }, { text, hunks.text((lines_of.split(text))) })
  end
  changes.stop()
end)

t.test('an accepted text past max_file_bytes is not kept: the change is listed without a diff', function()
  caps(1024)
  local path = file('huge.txt', '')
  changes.remember(path, ('x'):rep(2000) .. '\n', true)
  t.eq(changes.before_text(path), nil)
  changes.remember(path, 'small\n', true)
  t.eq(changes.before_text(path), 'small\n')
  changes.stop()
end)

t.test("git's filter drivers: the repository's turned off, the user's own kept, '=' refused", function()
  local listed = table.concat({
    'global\0filter.lfs.process\ngit-lfs filter-process\0',
    'local\0filter.pwn.clean\nsh -c id\0',
    'worktree\0filter.a.b.process\nx\0',
    'local\0filter..smudge\0', -- (a key with no value)
    'local\0filter.orphan\ny\0', -- (no driver: no subsection)
  })
  t.eq(snapshot.drivers(listed), { pwn = true, ['a.b'] = true, [''] = true })
  local off = snapshot.filters_off({ pwn = true })
  t.eq(off, {
    '-c',
    'filter.pwn.clean=',
    '-c',
    'filter.pwn.smudge=',
    '-c',
    'filter.pwn.process=',
    '-c',
    'filter.pwn.required=false',
  })
  t.eq(
    { snapshot.filters_off({ pwn = true, ['a=b'] = true }) },
    { nil, 'its filter driver "a=b" cannot be turned off' }
  )
end)

t.test('a revert replaces the name: a file sharing the inode (hard link) keeps its text; the mode stays', function()
  local outside, path = file('outside.txt', "the user's own\n"), dir .. '/linked.txt'
  vim.uv.fs_link(outside, path)
  vim.uv.fs_chmod(outside, tonumber('640', 8))
  t.eq(snapshot.replace(path, 'put back\n'), true)
  local stat = vim.uv.fs_lstat(path)
  t.eq({ vim.fn.readfile(outside), vim.fn.readfile(path), stat.nlink, bit.band(stat.mode, 511) }, {
    { "the user's own" },
    { 'put back' },
    1,
    tonumber('640', 8),
  })
  t.eq(vim.fn.glob(dir .. '/.linked.txt.*', true, true), {}) -- no temporary file left
end)

t.test("the bytes written are :write's: line ends, last line end, encoding, BOM", function()
  local view = require('gemini_companion.changes.view')
  local buf = vim.api.nvim_create_buf(true, false)
  local function bytes(opts, lines)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines or { 'a', 'é' })
    for k, v in pairs(opts) do
      vim.bo[buf][k] = v
    end
    local data = view.file_bytes(buf)
    local path = vim.fn.tempname()
    vim.api.nvim_buf_call(buf, function()
      vim.cmd('silent noautocmd keepalt write! ' .. path)
    end)
    return { data, table.concat(vim.fn.readfile(path, 'b'), '\n') == data and 'as :write' or 'differs' }
  end
  t.eq(bytes({ fileformat = 'unix' }), { 'a\né\n', 'as :write' })
  t.eq(bytes({ fileformat = 'dos' }), { 'a\r\né\r\n', 'as :write' })
  t.eq(bytes({ fileformat = 'unix', endofline = false, fixendofline = false }), { 'a\né', 'as :write' })
  t.eq(bytes({ fixendofline = true, fileencoding = 'latin1' }), { 'a\n\233\n', 'as :write' })
  t.eq(bytes({ fileencoding = 'utf-8', bomb = true }), { '\239\187\191a\né\n', 'as :write' })
  t.eq(bytes({ bomb = false }, { '' }), { '\n', 'as :write' })
  t.eq(bytes({}, {}), { '', 'as :write' })
  vim.api.nvim_buf_delete(buf, { force = true })
end)
