-- Shared helpers for the built-in tools: finding the buffer a call means, and converting
-- positions. Tools speak 1-based lines and 1-based columns counted in characters.
local M = {}

--- The `bufnr` argument of every tool that takes one. Buffer numbers are positive C ints, so
--- anything larger is refused by the schema, before Lua would turn it into nonsense.
M.BUFNR = { type = 'integer', minimum = 0, maximum = 2147483647, description = 'Buffer number (0 = current)' }

-- Files the tools loaded into hidden buffers, oldest first. They stay loaded so a language
-- server is warm for the next question, but at most MAX_LOADED of them: past that the oldest
-- one nobody uses (not listed, not shown, not modified, no signs such as breakpoints) is wiped.
M.MAX_LOADED = 20
local loaded = {}

local function in_use(buf)
  return vim.bo[buf].modified or vim.fn.bufwinid(buf) ~= -1 or #vim.fn.sign_getplaced(buf, { group = '*' })[1].signs > 0
end

local function remember_loaded(buf)
  local keep = {} -- a buffer the user listed (:buffer, :edit) is theirs now, no longer ours
  for _, b in ipairs(loaded) do
    if vim.api.nvim_buf_is_valid(b) and not vim.bo[b].buflisted then
      table.insert(keep, b)
    end
  end
  table.insert(keep, buf)
  local excess = #keep - M.MAX_LOADED
  loaded = {}
  for _, b in ipairs(keep) do
    if excess > 0 and b ~= buf and not in_use(b) then
      excess = excess - 1
      pcall(vim.api.nvim_buf_delete, b, {})
    else
      table.insert(loaded, b)
    end
  end
end

-- The validated `max_file_bytes`, `tools.restrict_to_workspace` and `workspace_roots` (config.py
-- owns them and their defaults), set by the server at every start ahead of any tool call on the
-- same channel (bridge.configure_tools), so no tool runs without them.
M.limits = nil ---@type {max_file_bytes: integer, restrict_to_workspace: boolean, workspace_roots: string[]}|nil

function M.configure(limits)
  M.limits = limits
end

local function limits()
  return M.limits or error('the server has not configured the tools yet (:GeminiStart)', 0)
end

-- Pseudo-file systems: files there are no documents, and reading one can hang Neovim (a pipe
-- behind /proc/self/fd/N) or never end (/dev/zero, /proc/self/pagemap claims 0 bytes).
local PSEUDO = { '/proc', '/sys', '/dev' }

local function pseudo_root(path)
  for _, root in ipairs(PSEUDO) do
    if path == root or path:sub(1, #root + 1) == root .. '/' then
      return root
    end
  end
end

local function within(path, root)
  root = root:gsub('/+$', '')
  return path == root or path:sub(1, #root + 1) == root .. '/' or root == ''
end

--- `path` with symlinks resolved; for a path that does not exist (yet), its nearest existing
--- folder resolved and the rest appended, so a linked folder cannot hide where it would be written.
local function resolved(path)
  local real = vim.uv.fs_realpath(path)
  if real then
    return real
  end
  local parent = vim.fs.dirname(path)
  if parent == path then
    return path
  end
  return vim.fs.joinpath(resolved(parent), vim.fs.basename(path))
end

--- Error unless `path` (absolute, normalized) is inside a workspace root, with
--- `tools.restrict_to_workspace` on. Symlinks are resolved, so a link cannot lead out.
function M.check_allowed(path)
  if not limits().restrict_to_workspace then
    return
  end
  local real = resolved(path)
  local roots = { vim.fn.getcwd(-1, -1) }
  vim.list_extend(roots, limits().workspace_roots or {})
  for _, root in ipairs(roots) do
    local full = vim.fs.normalize(vim.fn.fnamemodify(root, ':p'))
    if within(real, vim.uv.fs_realpath(full) or full) then
      return
    end
  end
  error(
    ('%s is outside the workspace (%s); tools.restrict_to_workspace is on'):format(path, table.concat(roots, ', ')),
    0
  )
end

--- Error readably unless `path` is a regular file (as Neovim sees it: symlinks and
--- /proc/self/... resolved here, not in the server's process), outside /proc, /sys and /dev, and
--- at most `max_file_bytes` long.
function M.check_file(path)
  if pseudo_root(path) then
    error(('%s is in %s: not a file the tools read'):format(path, pseudo_root(path)), 0)
  end
  local real = vim.uv.fs_realpath(path)
  local stat = real and vim.uv.fs_stat(real)
  if not stat then
    error(('no such file: %s'):format(path), 0)
  elseif pseudo_root(real) then
    error(('%s leads into %s: not a file the tools read'):format(path, pseudo_root(real)), 0)
  elseif stat.type ~= 'file' then
    -- Reading a FIFO or a device would block Neovim itself; a directory is no document.
    error(('%s is not a regular file (%s)'):format(path, stat.type), 0)
  elseif stat.size > limits().max_file_bytes then
    error(M.too_large(path, stat.size), 0)
  end
end

-- A URL (term://, scp://, http://...): :edit hands it to that scheme's BufReadCmd, and term://
-- runs a command. A client's path is a file's, never one of these.
local SCHEME = '^%a[%w+.-]*:'

--- The file a client names, checked once for every tool of both protocols (read_buffer, the
--- review's openDiff, Claude's openFile, saveDocument, ...): a plain file path, never a URL, made
--- absolute (relative to Neovim's directory), refused in /proc, /sys and /dev and, with
--- tools.restrict_to_workspace, outside the workspace. An existing path must be a regular file no
--- larger than max_file_bytes (check_file). Returns the path with symlinks resolved (what to open,
--- read or compare) and whether it exists.
---@param path any
---@return string resolved
---@return boolean exists
function M.client_path(path)
  if type(path) ~= 'string' or path == '' or path:find('%z') then
    error(('not a file path: %s'):format(vim.inspect(path)), 0)
  elseif path:match(SCHEME) then
    error(('%s is a URL, not a file path'):format(path), 0)
  end
  local full = vim.fs.normalize(vim.fn.fnamemodify(path, ':p'))
  if pseudo_root(full) then
    error(('%s is in %s: not a file the tools read'):format(path, pseudo_root(full)), 0)
  end
  M.check_allowed(full)
  if vim.uv.fs_lstat(full) then -- a dangling link too: check_file refuses it
    M.check_file(full)
    return vim.uv.fs_realpath(full) or full, true
  end
  return resolved(full), false
end

--- The file a buffer shows, for the workspace check: a review's buffer stands for the file it
--- reviews; nil for a buffer with no name; false for one that is no file of the user's (a
--- terminal, a help page, any other 'buftype').
local function buffer_file(buf)
  local review = vim.b[buf].gemini_diff
  if type(review) == 'table' and review.path then
    return review.path
  end
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' then
    return nil
  end
  return vim.bo[buf].buftype == '' and name or false
end

function M.too_large(path, size)
  return ('%s is too large (%s bytes; max_file_bytes = %d)'):format(
    path,
    size and tostring(size) or 'more than ' .. limits().max_file_bytes,
    limits().max_file_bytes
  )
end

local O_RDONLY, O_NONBLOCK, O_NOCTTY = vim.uv.constants.O_RDONLY, vim.uv.constants.O_NONBLOCK, vim.uv.constants.O_NOCTTY

--- `path` opened for reading after check_file, through one non-blocking descriptor checked again
--- with fstat (a file swapped for a FIFO meanwhile cannot block Neovim): fd and its size, or an
--- error.
local function open_checked(path)
  M.check_file(path)
  local fd, err = vim.uv.fs_open(path, bit.bor(O_RDONLY, O_NONBLOCK, O_NOCTTY), 0)
  if not fd then
    error(('cannot read %s: %s'):format(path, err), 0)
  end
  local stat = vim.uv.fs_fstat(fd)
  if not stat or stat.type ~= 'file' then
    vim.uv.fs_close(fd)
    error(('%s is not a regular file'):format(path), 0)
  end
  return fd, stat.size
end

--- How much to read next, `size` bytes in: as much as the file holds (and one byte more, to see
--- its end), not the whole limit: luv allocates what is asked for (a 22 MB file read in ~45 ms
--- with a 256 MiB limit). Never more than max_file_bytes, whatever the size claims (a growing
--- file, a lying one): nil once past it.
local function next_read(size, claimed)
  local limit = limits().max_file_bytes
  if size > limit then
    return nil
  end
  return math.min(limit + 1 - size, math.max(claimed - size, 0) + 65536)
end

--- The bytes of the file at `path` (see open_checked and next_read).
function M.read_file(path)
  local fd, claimed = open_checked(path)
  local chunks, size = {}, 0
  local ok, problem = pcall(function()
    while true do
      local want = next_read(size, claimed)
      if not want then
        error(M.too_large(path), 0)
      end
      local data, read_err = vim.uv.fs_read(fd, want, size)
      if not data then
        error(('cannot read %s: %s'):format(path, read_err), 0)
      elseif data == '' then
        return
      end
      table.insert(chunks, data)
      size = size + #data
    end
  end)
  vim.uv.fs_close(fd)
  if not ok then
    error(problem, 0)
  end
  return #chunks == 1 and chunks[1] or table.concat(chunks)
end

--- M.read_file, read in libuv's thread pool (a 22 MB file blocked Neovim 16-75 ms):
--- `done(text)` or `done(nil, error)`, on the main loop.
function M.read_file_async(path, done)
  local ok, fd, claimed = pcall(open_checked, path)
  if not ok then
    return done(nil, fd)
  end
  local chunks, size = {}, 0
  local function finish(err)
    vim.uv.fs_close(fd)
    if err then
      done(nil, err)
    else
      done(#chunks == 1 and chunks[1] or table.concat(chunks))
    end
  end
  local function more()
    local want = next_read(size, claimed)
    if not want then
      return finish(M.too_large(path))
    end
    vim.uv.fs_read(fd, want, size, function(read_err, data)
      vim.schedule(function()
        if not data then
          return finish(('cannot read %s: %s'):format(path, read_err))
        elseif data == '' then
          return finish()
        end
        table.insert(chunks, data)
        size = size + #data
        more()
      end)
    end)
  end
  more()
end

--- Text split into lines, as readfile() does: a final newline ends the last line.
function M.split_lines(text)
  local lines = vim.split(text, '\n', { plain = true })
  if lines[#lines] == '' then
    lines[#lines] = nil
  end
  return lines
end

--- The lines of the file at `path` (read_file).
function M.read_lines(path)
  return M.split_lines(M.read_file(path))
end

-- The events in which a plugin reads a file its own way, by its name: the gzip plugin decompresses
-- *.gz (a 300 KB one into 300 MB), zip.vim and tar.vim run unzip and tar on archives, netrw
-- fetches URLs, ShaDa parses *.shada.
local READ_EVENTS = { 'BufReadCmd', 'FileReadCmd', 'BufReadPre', 'FileReadPre', 'BufReadPost', 'FileReadPost' }

--- The autocommand groups whose BufReadPost runs on a file a client names, in the order they were
--- defined: filetype detection, and each group whose read autocommands are all for every file
--- (pattern *: editorconfig, gitsigns, a plugin manager's lazy loading), which the user's :edit
--- of any file runs too. A group with a read autocommand for particular names (gzip's *.gz,
--- zip's *.zip, netrw's file://*) never runs on a client's path; nor do autocommands in no group.
local function every_file_groups()
  local order, by_name = {}, {}
  for _, au in ipairs(vim.api.nvim_get_autocmds({ event = READ_EVENTS })) do
    local name = au.group_name
    if name then
      if not by_name[name] then
        by_name[name] = { post = false, by_file_name = false }
        table.insert(order, name)
      end
      local group = by_name[name]
      group.post = group.post or au.event == 'BufReadPost'
      group.by_file_name = group.by_file_name or (au.pattern ~= '*' and name ~= 'filetypedetect')
    end
  end
  return vim.tbl_filter(function(name)
    return by_name[name].post and not by_name[name].by_file_name
  end, order)
end

--- The buffer of the file at `path` (absolute; checked by the caller), loaded, and whether it was
--- made here (else it existed: loaded, or a listed buffer not loaded yet). Neovim reads the file
--- itself, without the read autocommands keyed to its name (see READ_EVENTS: a client names it, so
--- a .gz or an archive stays the bytes on disk), then the text is held to max_file_bytes (it grows
--- in Neovim: Latin-1 becomes UTF-8, a file may grow after check_file), then every_file_groups
--- run their BufReadPost, so it gets its filetype, syntax and language servers as usual. On error
--- the buffer is left as it was: a buffer made here is wiped.
function M.load_file(path)
  local new = vim.fn.bufexists(path) == 0
  local buf = vim.fn.bufadd(path)
  if vim.api.nvim_buf_is_loaded(buf) then
    return buf, new
  end
  vim.cmd(('noautocmd call bufload(%d)'):format(buf))
  local size = vim.api.nvim_buf_get_offset(buf, vim.api.nvim_buf_line_count(buf))
  if size > limits().max_file_bytes then
    pcall(vim.api.nvim_buf_delete, buf, { force = true, unload = not new })
    error(
      ('%s is too large once loaded (%d bytes in Neovim; max_file_bytes = %d)'):format(
        path,
        size,
        limits().max_file_bytes
      ),
      0
    )
  end
  for _, group in ipairs(every_file_groups()) do
    -- As after :edit, a failing autocommand is the user's to see, and the file stays loaded.
    local ok, err = pcall(vim.api.nvim_exec_autocmds, 'BufReadPost', { group = group, buffer = buf, modeline = false })
    if not ok then
      vim.notify(('%s: BufReadPost of %s: %s'):format(path, group, err), vim.log.levels.WARN)
    end
  end
  return buf, new
end

--- The buffer of the file at `path` (absolute and normalized), loaded (load_file) but not shown;
--- a buffer made for it here is unlisted and counts towards MAX_LOADED. Errors readably for a file
--- that is missing, not a regular file or too large (check_file, load_file).
function M.load_hidden(path)
  M.check_allowed(path)
  M.check_file(path)
  local buf, new = M.load_file(path)
  if new then
    vim.bo[buf].buflisted = false
    remember_loaded(buf)
  end
  return buf
end

--- The buffer for `args.bufnr` (0 = current) or `args.path`; with `load`, a file that is not
--- open yet is loaded into a hidden buffer (then the second result is true). Errors readably.
function M.buffer(args, load)
  if args.bufnr ~= nil and args.bufnr ~= vim.NIL then
    local buf = args.bufnr == 0 and vim.api.nvim_get_current_buf() or args.bufnr
    if not vim.api.nvim_buf_is_valid(buf) then
      error(('no buffer %d'):format(args.bufnr), 0)
    end
    if limits().restrict_to_workspace then
      -- By number as by path: a review's "(on disk)" side of a file outside is that file.
      local file = buffer_file(buf)
      if file == false then
        error(('buffer %d is not a file in the workspace; tools.restrict_to_workspace is on'):format(buf), 0)
      elseif file then
        M.check_allowed(vim.fs.normalize(file))
      end
    end
    return buf
  end
  if args.path ~= nil and args.path ~= vim.NIL then
    local path = vim.fs.normalize(vim.fn.fnamemodify(args.path, ':p'))
    if args.path:match(SCHEME) then
      error(('%s is a URL, not a file path'):format(args.path), 0)
    end
    M.check_allowed(path)
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_get_name(b) == path then
        return b
      end
    end
    if not load then
      return nil, path
    end
    return M.load_hidden(path), true
  end
  return vim.api.nvim_get_current_buf()
end

function M.name(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  return name ~= '' and name or nil
end

--- Text of line `lnum` (1-based) of a buffer, or of a file on disk when no buffer has it.
function M.line_text(buf, path, lnum, cache)
  if buf and vim.api.nvim_buf_is_loaded(buf) then
    return vim.api.nvim_buf_get_lines(buf, lnum - 1, lnum, false)[1] or ''
  end
  cache = cache or {}
  if path and cache[path] == nil then
    local ok, lines = pcall(M.read_lines, path)
    cache[path] = ok and lines or false
  end
  local lines = path and cache[path]
  return lines and lines[lnum] or ''
end

-- Units one character takes in the given encoding.
local function units(cp, enc)
  if enc == 'utf-8' then
    return cp < 0x80 and 1 or cp < 0x800 and 2 or cp < 0x10000 and 3 or 4
  elseif enc == 'utf-16' then
    return cp >= 0x10000 and 2 or 1
  end
  return 1
end

local function codepoints(text)
  local cps = {}
  for _, ch in ipairs(vim.fn.str2list(text)) do
    table.insert(cps, ch)
  end
  return cps
end

--- 1-based character column → position units of `enc` (0-based), as LSP wants it.
function M.to_units(text, col, enc)
  local n = 0
  for i, cp in ipairs(codepoints(text)) do
    if i >= col then
      break
    end
    n = n + units(cp, enc)
  end
  return n
end

--- LSP position units (0-based) → 1-based character column.
function M.from_units(text, unit, enc)
  local n, col = 0, 1
  for _, cp in ipairs(codepoints(text)) do
    if n >= unit then
      break
    end
    n = n + units(cp, enc)
    col = col + 1
  end
  return col
end

--- A byte column (0-based, as Neovim reports) → 1-based character column.
function M.char_col(text, byte)
  return vim.fn.charidx(text, math.min(byte, #text)) + 1
end

return M
