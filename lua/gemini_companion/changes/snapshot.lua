-- The workspace as :GeminiChanges compares it: which files are in it, and which of their texts
-- are kept. The pure parts (the file list's rules, the byte budget) are apart from the slow ones
-- (listing, reading), so specs can check them fast.
--
-- In a git workspace with a commit, git itself says what differs from the commit at the snapshot
-- (M.dirty): only those files' texts are kept, and any file count works. Otherwise the list comes
-- from `git ls-files -co --exclude-standard` (a repository with no commit yet), else from a walk
-- that skips hidden, VCS and dependency folders, both within changes.max_files. Work runs in
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

-- Git, with nothing of the repository's run (docs/GIT.md): a repository is often someone else's (an
-- archive, a copied tree) and its configuration names programs git runs on its own.

-- Always: no pager, hook, fsmonitor program, external diff or transport (a partial clone's fetch of
-- a missing object would run ssh or the remote's upload-pack), and the index is not locked for a
-- refresh. core.preloadIndex off: git checks a big index's files with a thread per core, and on a
-- 2-core machine that starved Neovim's own loop (a second client waited up to 85 ms at 50 000
-- files; 3-11 ms with it off, git no slower: measured).
local GIT = {
  'git',
  '--no-pager',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'core.preloadIndex=false',
}
local GIT_ENV = {
  GIT_OPTIONAL_LOCKS = '0',
  GIT_TERMINAL_PROMPT = '0',
  GIT_ALLOW_PROTOCOL = 'none', -- names no protocol: every transport is refused
  GIT_NO_LAZY_FETCH = '1', -- (git 2.44 on; before it, the line above refuses the fetch)
  GIT_PAGER = 'cat',
}

--- Inside M.run: `git <args>` in `root` with GIT and GIT_ENV ({ code, stdout, stderr }; code -1:
--- no git on the PATH).
local function run_git(root, args)
  local env = vim.fn.environ()
  env.GIT_EXTERNAL_DIFF = nil
  env = vim.tbl_extend('force', env, GIT_ENV)
  local cmd = vim.list_extend(vim.list_extend(vim.list_extend({}, GIT), { '-C', root }), args)
  return M.await(function(resume)
    local ok = pcall(vim.system, cmd, { env = env, clear_env = true }, resume)
    if not ok then
      resume({ code = -1 })
    end
  end)
end

--- Parse `git config -z --show-scope --get-regexp '^filter\.'`: the filter drivers defined
--- anywhere but the user's own configuration (system, global), as { name = true }.
function M.drivers(output)
  local names, fields = {}, vim.split(output, '\0', { plain = true })
  for i = 1, #fields - 1, 2 do -- scope, then "key\nvalue" (or "key" alone)
    local name = fields[i + 1]:match('^[^\n]*'):match('^filter%.(.*)%.[^.]*$')
    if name and fields[i] ~= 'system' and fields[i] ~= 'global' then
      names[name] = true
    end
  end
  return names
end

--- `-c` arguments that turn each driver of `names` off (git's convert.c runs no filter for an
--- empty command), or nil and why not: a name with '=' in it would be cut there by `-c`.
function M.filters_off(names)
  local args = {}
  for name in vim.spairs(names) do
    if name:find('=', 1, true) then
      return nil, ('its filter driver "%s" cannot be turned off'):format(name)
    end
    for _, key in ipairs({ 'clean=', 'smudge=', 'process=', 'required=false' }) do
      vim.list_extend(args, { '-c', ('filter.%s.%s'):format(name, key) })
    end
  end
  return args
end

--- Inside M.run: `git -C root <args>`'s result ({ code, stdout }; code -1: no git on the PATH;
--- code -2 and `refused`: git cannot be run safely here, and why). Every git run goes through
--- here: the repository's filter drivers (which git diff runs to hash a work-tree file whose stat
--- data does not match the index) are listed first — reading configuration runs nothing — and
--- turned off for the command, which runs only if each one can be.
function M.git(root, args)
  local listed = run_git(root, { 'config', '-z', '--show-scope', '--get-regexp', '^filter\\.' })
  if listed.code == -1 then
    return listed
  elseif listed.code ~= 0 and listed.code ~= 1 then -- (1: no filter driver)
    local why = vim.split(vim.trim(listed.stderr or ''), '\n')[1]
    return { code = -2, refused = 'its git configuration cannot be read: ' .. (why or '?') }
  end
  local off, why = M.filters_off(M.drivers(listed.stdout or ''))
  if not off then
    return { code = -2, refused = why }
  end
  return run_git(root, vim.list_extend(off, args))
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

--- Inside M.run: the commit `root`'s HEAD names, or nil (no git, no repository, no commit yet) and
--- why git cannot be run safely there, if that is why.
function M.head(root)
  local git = M.git(root, { 'rev-parse', '--verify', '-q', 'HEAD' })
  if git.code == 0 and vim.trim(git.stdout or '') ~= '' then
    return vim.trim(git.stdout)
  end
  return nil, git.refused
end

--- Inside M.run: what differs in `root` from commit `base`, as git sees it: { [path] = 'M'|'D'|
--- 'A'|'T'|'?' } ('?': untracked and not ignored), or nil (and why git cannot be run safely, if
--- that is why). Git compares every file itself, outside the editor: no text is kept and no file
--- count caps it.
function M.dirty(root, base)
  local out = {}
  local diff = M.git(root, {
    'diff',
    '--no-ext-diff',
    '--no-textconv',
    '--ignore-submodules=all', -- (else git runs `git status` in each submodule, under its own config)
    '--no-renames',
    '--relative',
    '--name-status',
    '-z',
    base,
  })
  if diff.code ~= 0 then
    return nil, diff.refused
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
    return nil, untracked.refused
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
--- a symbolic link (`link`: where it points) nor opens anything but a regular file with one name
--- (`special`: its type; `names`: how many hard links it has): an agent that swaps a watched file
--- for a FIFO must not hang the editor, nor one that swaps it for a link to ~/.bashrc — symbolic,
--- or a hard link, whose real path is in the workspace — have its text shown, compared or written
--- back there.
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
  elseif stat.nlink > 1 then
    entry.why, entry.names = 'names', stat.nlink
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
  local same = opened
    and opened.type == 'file'
    and opened.ino == stat.ino
    and opened.dev == stat.dev
    and opened.nlink == 1
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

local O_CREAT, O_EXCL, O_WRONLY = vim.uv.constants.O_CREAT, vim.uv.constants.O_EXCL, vim.uv.constants.O_WRONLY
local O_NOFOLLOW = vim.uv.constants.O_NOFOLLOW or 0

--- Put `data` at `path` as a new file: written to a temporary file of the same folder (a random
--- name, created only if no file has it, never through a link), then renamed over `path` — never
--- into the file `path` names now, which another name (a hard link) may share, nor through a
--- symbolic link: whatever the agent made of `path` since it was checked, only its name is
--- replaced. Keeps the mode (and owner, where allowed) of the file it replaces. Returns true, or
--- nil and why not.
function M.replace(path, data)
  local old = vim.uv.fs_lstat(path)
  local mode = old and old.type == 'file' and bit.band(old.mode, 4095) or 438 -- (0666, less umask)
  local random = vim.uv.random(8):gsub('.', function(byte)
    return ('%02x'):format(byte:byte())
  end)
  local tmp = ('%s/.%s.%s~'):format(vim.fs.dirname(path), vim.fs.basename(path), random)
  local fd, err = vim.uv.fs_open(tmp, bit.bor(O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW), mode)
  if not fd then
    return nil, err
  end
  if old and old.type == 'file' then
    vim.uv.fs_fchown(fd, old.uid, old.gid) -- (only root may give a file away: else it stays ours)
    vim.uv.fs_fchmod(fd, mode)
  end
  local ok, why = vim.uv.fs_write(fd, data, 0)
  if ok and ok ~= #data then
    ok, why = nil, 'short write'
  end
  if ok then
    ok, why = vim.uv.fs_fsync(fd) -- (renamed only once it is all on disk: never half a file)
  end
  vim.uv.fs_close(fd)
  if ok then
    ok, why = vim.uv.fs_rename(tmp, path)
  end
  if not ok then
    vim.uv.fs_unlink(tmp)
    return nil, why
  end
  return true
end

return M
