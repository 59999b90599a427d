-- The workspace as :GeminiChanges compares it: which files are in it, and which of their texts
-- are kept. The pure parts (the file list's rules, the byte budget) are apart from the slow ones
-- (listing, reading), so specs can check them fast.
--
-- In a git workspace with a commit, git itself says what differs from the commit at the snapshot
-- (M.dirty): only those files' texts are kept, and any file count works. Otherwise the list comes
-- from `git ls-files -co --exclude-standard` (a repository with no commit yet), else from a walk
-- that skips hidden, VCS and dependency folders, both within diff.changes.max_files. Work runs in
-- time slices (slices.lua), so a large workspace never holds the editor for longer than one slice
-- (plus one file's read, bounded by the per-file cap).
local slices = require('gemini_companion.slices')

local M = {}

-- Folders a walk (no git) never enters: they hold dependencies, builds or caches, not what an
-- agent writes for you. Hidden folders (.git, .venv, …) are skipped too.
M.SKIPPED_DIRS = {
  node_modules = true,
  __pycache__ = true,
  target = true,
  dist = true,
  build = true,
  vendor = true,
  venv = true,
}

--- A walk enters folder `name`.
function M.enters(name)
  return name:sub(1, 1) ~= '.' and not M.SKIPPED_DIRS[name]
end

--- Whether a file of `size` bytes gets its text kept, given `used` bytes kept so far:
--- true, or false and why not ('large': over the per-file cap, 'cap': over the total).
function M.admit(size, used, caps)
  if size > caps.max_file_bytes then
    return false, 'large'
  elseif used + size > caps.max_bytes then
    return false, 'cap'
  end
  return true
end

--- Git's rule: a NUL byte in the first 8000 bytes makes a file binary.
function M.binary(data)
  return data:sub(1, 8000):find('\0', 1, true) ~= nil
end

-- Work in time slices (slices.lua): listing and reading run inside M.run.
M.run, M.pause, M.await = slices.run, slices.pause, slices.await

-- Listing and reading (inside M.run) --------------------------------------------------------

--- Inside M.run: `git -C root <args>`'s result ({ code, stdout }; code -1: no git on the PATH).
--- core.fsmonitor off: a hook command configured for the repository is not ours to run.
--- core.preloadIndex off: git checks a big index's files with a thread per core, and on a 2-core
--- machine that starved Neovim's own loop (a second client waited up to 85 ms at 50 000 files;
--- 3-11 ms with it off, git no slower: measured).
function M.git(root, args)
  return M.await(function(resume)
    local cmd =
      vim.list_extend({ 'git', '-c', 'core.fsmonitor=false', '-c', 'core.preloadIndex=false', '-C', root }, args)
    local ok = pcall(vim.system, cmd, {}, resume)
    if not ok then
      resume({ code = -1 })
    end
  end)
end

--- Files of the workspace `root`: absolute paths, at most `max`, and how many more there are
--- (not listed, so not watched: said at :GeminiChanges).
function M.list(root, max)
  local git = M.git(root, { 'ls-files', '-co', '--exclude-standard', '-z' })
  if git.code == 0 then
    return M.from_git(git.stdout or '', root, max)
  end
  local out, more = {}, 0
  for rel, type in
    vim.fs.dir(root, {
      depth = math.huge,
      skip = function(dir)
        return M.enters(vim.fs.basename(dir))
      end,
    })
  do
    if type == 'file' then
      if #out >= max then
        more = more + 1
      else
        out[#out + 1] = root .. '/' .. rel
      end
    end
    M.pause()
  end
  return out, more
end

--- Paths (absolute) from `git ls-files -z` output run in `root`, at most `max` of them, and how
--- many more there were.
function M.from_git(output, root, max)
  local out, more = {}, 0
  for rel in output:gmatch('[^%z]+') do
    if #out >= max then
      more = more + 1
    else
      out[#out + 1] = root .. '/' .. rel
    end
  end
  return out, more
end

--- Inside M.run: the commit `root`'s HEAD names, or nil (no git, no repository, no commit yet).
function M.head(root)
  local git = M.git(root, { 'rev-parse', '--verify', '-q', 'HEAD' })
  return git.code == 0 and vim.trim(git.stdout or '') ~= '' and vim.trim(git.stdout) or nil
end

--- Inside M.run: what differs in `root` from commit `base`, as git sees it: { [path] = 'M'|'D'|
--- 'A'|'T'|'?' } ('?': untracked and not ignored). Git compares every file itself, outside the
--- editor: no text is kept and no file count caps it.
function M.dirty(root, base)
  local out = {}
  local diff = M.git(root, { 'diff', '--no-ext-diff', '--no-renames', '--relative', '--name-status', '-z', base })
  if diff.code ~= 0 then
    return nil
  end
  local status
  for field in (diff.stdout or ''):gmatch('[^%z]+') do
    if status then
      out[root .. '/' .. field], status = status:sub(1, 1), nil
      M.pause()
    else
      status = field
    end
  end
  local untracked = M.git(root, { 'ls-files', '-o', '--exclude-standard', '-z' })
  if untracked.code ~= 0 then
    return nil
  end
  for rel in (untracked.stdout or ''):gmatch('[^%z]+') do
    out[root .. '/' .. rel] = out[root .. '/' .. rel] or '?'
    M.pause()
  end
  return out
end

--- Inside M.run: the text `path` (absolute, inside `root`) had at commit `base` (nil: none).
function M.at_commit(root, base, path)
  local git = M.git(root, { 'show', '--no-textconv', base .. ':./' .. path:sub(#root + 2) })
  return git.code == 0 and git.stdout or nil
end

local O_RDONLY, O_NONBLOCK = vim.uv.constants.O_RDONLY, vim.uv.constants.O_NONBLOCK

--- One file's state: { size, mtime } and, when admitted, its raw `data` (nil: why). Never follows
--- a symbolic link (`link`: where it points) nor opens anything but a regular file (`special`:
--- its type): an agent that swaps a watched file for a FIFO must not hang the editor, nor one
--- that swaps it for a link to ~/.bashrc have its text shown, compared or written back there.
function M.read(path, used, caps)
  local stat = vim.uv.fs_lstat(path)
  if not stat or stat.type == 'directory' then
    return nil
  end
  local entry = { size = stat.size, mtime = stat.mtime.sec * 1e9 + stat.mtime.nsec }
  if stat.type == 'link' then
    entry.why, entry.link = 'link', vim.uv.fs_readlink(path) or '?'
    return entry
  elseif stat.type ~= 'file' then
    entry.why, entry.special = 'special', stat.type
    return entry
  end
  local ok, why = M.admit(stat.size, used, caps)
  if not ok then
    entry.why = why
    return entry
  end
  -- Swapped for a FIFO or a link since the lstat: the open does not block (as builtin/util.lua's
  -- read_file), and fstat tells it is not the file lstat saw.
  local fd = vim.uv.fs_open(path, bit.bor(O_RDONLY, O_NONBLOCK), 0)
  local opened = fd and vim.uv.fs_fstat(fd)
  local same = opened and opened.type == 'file' and opened.ino == stat.ino and opened.dev == stat.dev
  local data = same and vim.uv.fs_read(fd, stat.size + 1, 0)
  if fd then
    vim.uv.fs_close(fd)
  end
  if not data or #data > stat.size then -- unreadable, or growing while we read: look again later
    entry.why = data and 'cap' or 'unreadable'
  elseif M.binary(data) then
    entry.why = 'binary'
  else
    entry.data = data
  end
  return entry
end

--- The same file as `entry` records it (size and modification time unchanged).
function M.same(entry, path)
  local stat = vim.uv.fs_lstat(path)
  return stat ~= nil
    and entry.mtime ~= nil
    and stat.size == entry.size
    and stat.mtime.sec * 1e9 + stat.mtime.nsec == entry.mtime
end

return M
