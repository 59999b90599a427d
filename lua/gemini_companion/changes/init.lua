-- :GeminiChanges — files that changed on disk without passing through a review (an agent in
-- auto-edit/YOLO mode, its shell commands) while the companion server runs.
--
-- The baseline: the on-disk text of every file loaded in a buffer (from the server's start, and
-- when a file is read into a buffer), and the whole workspace, snapshotted when the first agent
-- session connects and again at the user's mark (:GeminiChanges!), so new and never-loaded files
-- are noticed too. Texts are kept within changes.max_bytes / max_file_bytes (first come);
-- past them, and for binary files, only size and modification time, so memory stays bounded.
-- The user's own writes and accepted reviews move the baseline forward. The first MAX_WATCHES
-- loaded files also get a file-system watch (vim.uv fs_event, no polling): a change that leaves
-- the text different from the baseline is said once, until the baseline moves. :GeminiChanges
-- scans when asked: files whose size or time moved are read again, the workspace listed again.
-- The command, its quickfix list and the view of one change with its keys: changes/view.lua.
local notify = require('gemini_companion.notify')
local state = require('gemini_companion.state')
local hunks = require('gemini_companion.text.hunks')
local snapshot = require('gemini_companion.changes.snapshot')

local M = {}

M.MAX_WATCHES = 256

---@class GeminiChangesEntry
---@field text string|nil the text remembered (as hunks.text compares it); nil: not kept (`why`)
---@field why string|nil 'cap' (over max_bytes), 'large' (over max_file_bytes), 'binary', 'unreadable'
---@field size integer|nil
---@field mtime number|nil when the text was read (ns); nil: look at the text to know

---@type table<string, GeminiChangesEntry> path -> what it was
local baseline = {}
local total = 0 -- bytes of text kept
local roots = nil ---@type string[]|nil the workspace folders snapshotted (new files are noticed there)
local generation = 0 -- moves on stop(): a scan still running then gives up
local watches = {} ---@type table<string, uv.uv_fs_event_t>
local told = {} -- paths whose change was said already
local fresh = {} -- paths the last scan found new
local bases = {} ---@type table<string, string> workspace folder -> the commit git compares with
local from_commit = {} ---@type table<string, string> path -> its text at that commit (the last scan's changes)
local unwatched = 0 -- files past changes.max_files at the snapshot (no git to ask)
local refused = {} ---@type table<string, string> workspace folder -> why git cannot be run safely there

--- `path` (new since the snapshot) was deleted by the user.
function M.deleted(path)
  fresh[path] = nil
end

--- The caps (the `changes` settings; config.py owns the defaults).
function M.caps()
  local settings = require('gemini_companion.state').settings
  return (settings and settings.changes) or require('gemini_companion.config').defaults.changes
end

local function as_text(data)
  -- Already in that form (LF line ends, a final newline): as it is. Splitting an accepted 1M-line
  -- review again to join it back took 0.4-0.9 s of the editor's time.
  if #data > 1 and data:sub(-1) == '\n' and not data:find('\r', 1, true) then
    return data
  end
  return hunks.text((require('gemini_companion.text.lines').split(data)))
end

--- The file's text on disk now (nil: none, or not readable as text within max_file_bytes).
local function disk_text(path)
  local entry = snapshot.read(path, 0, M.caps())
  return entry and entry.data and as_text(entry.data)
end

--- Record `entry` (snapshot.read's, or an accepted review's text) for `path`, keeping its text
--- within max_file_bytes and max_bytes (an accepted 1 M-line review's 22 MB too).
local function record(path, entry)
  local old = baseline[path]
  total = total - (old and old.text and #old.text or 0)
  local text = entry.data and as_text(entry.data)
  if text and #text > M.caps().max_file_bytes then
    text, entry.why = nil, 'large'
  elseif text and total + #text > M.caps().max_bytes then
    text, entry.why = nil, 'cap'
  end
  baseline[path] =
    { text = text, why = not text and (entry.why or 'cap') or nil, size = entry.size, mtime = entry.mtime }
  total, told[path], fresh[path] = total + (text and #text or 0), nil, nil
end

local watch

--- Keep nothing for `path` any more (its text, its watch, what was said about it).
local function forget(path)
  local old = baseline[path]
  total = total - (old and old.text and #old.text or 0)
  baseline[path], told[path], fresh[path] = nil, nil, nil
  if watches[path] then
    watches[path]:close()
    watches[path] = nil
  end
end

--- A watched file changed on disk: say so once if its text now differs from the baseline.
local function check(path)
  local before = baseline[path] and baseline[path].text
  if before and not told[path] and (disk_text(path) or '') ~= before then
    told[path] = true
    local shown = require('gemini_companion.text.paths').shown(path)
    notify.say(('%s changed on disk without a review (:GeminiChanges shows it)'):format(shown))
  end
end

--- Watch `path` (within MAX_WATCHES); armed again after each event, since a file replaced by
--- rename (how many tools write) is a new file to watch.
watch = function(path)
  if watches[path] or vim.tbl_count(watches) >= M.MAX_WATCHES then
    return
  end
  local handle = vim.uv.new_fs_event()
  if not handle then
    return
  end
  watches[path] = handle
  local ok = handle:start(path, {}, function()
    if watches[path] ~= handle then
      return
    end
    watches[path] = nil
    handle:close()
    vim.defer_fn(function() -- once the writer is done (several events per write)
      if baseline[path] then
        watch(path)
        check(path)
      end
    end, 100)
  end)
  if not ok then
    watches[path] = nil
    handle:close()
  end
end

--- Remember `path`'s text on disk as the baseline (`text`: known already, e.g. what an accepted
--- review will write), within the caps; a file loaded in a buffer also gets a watch.
function M.remember(path, text, quiet)
  if text then
    record(path, { data = text })
  else
    local entry = snapshot.read(path, total - (baseline[path] and #(baseline[path].text or '') or 0), M.caps())
    if not entry then
      return
    end
    record(path, entry)
  end
  if not quiet and baseline[path].text then
    watch(path)
  end
end

--- The file an autocommand event (or `{ buf = buf }`) is about: for a write, the file written
--- (`:w other.txt` writes other.txt, from whatever buffer), else the buffer's.
local function file_of(ev)
  local written = ev.event == 'BufWritePost'
  local name = written and ev.match or vim.api.nvim_buf_get_name(ev.buf)
  name = name ~= '' and vim.fs.normalize(vim.fn.fnamemodify(name, ':p'))
  if name and (written or vim.bo[ev.buf].buftype == '') and vim.uv.fs_stat(name) then
    return name
  end
end

local function in_roots(path)
  return vim.iter(roots or {}):any(function(root)
    return vim.startswith(path, root .. '/')
  end)
end

--- Start watching (the server runs): the files loaded now, and each one read or written later.
function M.start()
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local path = vim.api.nvim_buf_is_loaded(buf) and file_of({ buf = buf })
    if path and not baseline[path] then
      M.remember(path)
    end
  end
  local group = vim.api.nvim_create_augroup('gemini_companion_changes', { clear = true })
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufWritePost' }, {
    group = group,
    callback = function(ev)
      local path = file_of(ev)
      -- A file read for the first time, or written by the user: that is the text to compare with.
      -- (A file that appeared in a snapshotted workspace is new: reading it changes nothing.)
      if not path then
        return
      elseif ev.event == 'BufWritePost' or (not baseline[path] and not in_roots(path)) then
        M.remember(path)
      elseif baseline[path] and baseline[path].text then -- snapshotted before: now worth a watch
        watch(path)
      end
    end,
  })
end

--- The server stopped: forget everything.
function M.stop()
  pcall(vim.api.nvim_del_augroup_by_name, 'gemini_companion_changes')
  for _, handle in pairs(watches) do
    handle:close()
  end
  baseline, total, watches, told, fresh, roots = {}, 0, {}, {}, {}, nil
  bases, from_commit, unwatched, refused = {}, {}, 0, {}
  M.snapping = false
  generation = generation + 1
end

--- The workspace folders (the server's roots, else the working directory).
local function workspace()
  local folders = state.server.workspace
  folders = (type(folders) == 'table' and #folders > 0) and folders or { vim.fn.getcwd(-1, -1) }
  return vim.tbl_map(vim.fs.normalize, folders)
end

--- Inside snapshot.run: give up (error) when the server stopped since `gen`.
local function alive(gen)
  snapshot.pause()
  if gen ~= generation then
    error('stopped', 0)
  end
end

--- Inside snapshot.run: keep `path`'s state on disk now (`again`: also when kept already).
local function take(path, again)
  if again or not baseline[path] then
    local entry = snapshot.read(path, total - (baseline[path] and #(baseline[path].text or '') or 0), M.caps())
    if entry then
      record(path, entry)
    end
  end
end

--- Inside snapshot.run: snapshot folder `root`. With git and a commit, the commit is the baseline
--- of every file git sees, and only the files that differ from it now have their text kept;
--- otherwise every file listed within max_files. Returns how many files it read.
local function snapshot_folder(root, again, gen)
  local base, why = snapshot.head(root)
  local dirty = base and snapshot.dirty(root, base)
  bases[root], refused[root] = dirty and base or nil, why
  if dirty then
    local count = 0
    for path in pairs(dirty) do
      alive(gen)
      take(path, again)
      count = count + 1
    end
    return count
  end
  local files, more = snapshot.list(root, M.caps().max_files)
  unwatched = unwatched + more
  for _, path in ipairs(files) do
    alive(gen)
    take(path, again)
  end
  return #files
end

--- Snapshot the workspace (in a git workspace: its commit and the files that differ from it; else
--- every file's size and time, texts within the caps), in slices; with `again`, the files
--- remembered already are read again too (the user's mark). `done(count)`.
function M.snapshot(again, done)
  local gen = generation
  return snapshot.run(function()
    local folders, count = workspace(), 0
    unwatched, from_commit = 0, {}
    for _, root in ipairs(folders) do
      count = count + snapshot_folder(root, again, gen)
    end
    if unwatched > 0 then
      local why = '%d file%s of the workspace past changes.max_files (%d) %s not watched'
      local many = unwatched > 1
      notify.say(why:format(unwatched, many and 's' or '', M.caps().max_files, many and 'are' or 'is'), 'warn')
    end
    if M.without_git() then
      notify.say(M.without_git() .. ': :GeminiChanges compares the files without it', 'warn')
    end
    if again then
      for _, path in ipairs(vim.tbl_keys(baseline)) do
        alive(gen)
        if not vim.uv.fs_stat(path) then -- gone at the mark: its deletion is no change since then
          forget(path)
        elseif not in_roots(path) then
          M.remember(path, nil, true)
        end
      end
    end
    roots = folders
    return count
  end, function(ok, count)
    if ok and done then
      done(count)
    elseif not ok and count ~= 'stopped' then
      notify.say('taking the snapshot failed: ' .. tostring(count), 'error')
    end
  end)
end

--- The number of agent sessions connected (from the server's state): the first one starts the
--- workspace snapshot, which then stays until the user marks a new point or the server stops.
function M.clients(count)
  if count > 0 and not roots and not M.snapping then
    M.snapping = true
    M.snapshot(false, function()
      M.snapping = false
    end)
  end
end

local WHY = {
  cap = 'not snapshotted: over changes.max_bytes',
  large = 'not snapshotted: over changes.max_file_bytes',
  binary = 'binary',
  unreadable = 'not readable',
  link = 'a symbolic link',
  special = 'not a regular file',
  names = 'a file with more than one name (hard links)',
}

--- What `now` (snapshot.read's) is when it is no file to show, read or write: the agent made it a
--- symbolic link, a FIFO, a socket, a device, or a second name of another file (a hard link: a
--- write in place would change that file too; Neovim writes so a file with several names) (nil: a
--- regular file with one name, or none).
local function not_a_file(now)
  if now and now.link then
    return 'now a symbolic link to ' .. now.link
  elseif now and now.special then
    return ('no longer a regular file (%s)'):format(now.special)
  elseif now and now.names then
    return ('now a hard link (the file has %d names)'):format(now.names)
  end
end

--- Why `path` must not be opened or written now (the message), or nil. A path outside the
--- workspace the changes are counted in, or one that resolves elsewhere, is never written.
function M.unsafe(path)
  local why = not_a_file(snapshot.read(path, 0, { max_file_bytes = -1, max_bytes = -1 }))
  if why then
    return why
  end
  -- A folder on the way swapped for a link leads out too: compare the real paths.
  local real = vim.uv.fs_realpath(path)
  local inside = vim.iter(roots or {}):any(function(root)
    return vim.startswith(real or '', (vim.uv.fs_realpath(root) or root) .. '/')
  end)
  if real and roots and not inside then
    return 'leads outside the workspace, to ' .. real
  end
end

local NOT_WATCHED = 'not watched (ignored by git, hidden, past changes.max_files or outside the workspace)'

--- How `path`, remembered as `entry`, differs on disk now: a change, or nil.
local function compare(path, entry)
  if snapshot.same(entry, path) then
    return nil
  end
  local now = snapshot.read(path, 0, M.caps())
  local function note(text)
    return { path = path, added = 0, removed = 0, hunks = {}, note = text }
  end
  local strange = not_a_file(now)
  if strange then
    return { path = path, added = 0, removed = 0, hunks = {}, note = strange, strange = true }
  elseif not entry.text then
    return note((now and 'changed (' or 'deleted (') .. WHY[entry.why] .. ')')
  elseif now and not now.data then
    return note('changed (now ' .. WHY[now.why] .. ')')
  end
  local after = now and as_text(now.data) or ''
  if now and after == entry.text then -- the same text: no need to read it next time
    entry.size, entry.mtime = now.size, now.mtime
    return nil
  end
  local hs = hunks.compute(entry.text, after)
  local added, removed = hunks.counts(hs)
  local what = now and 'changed without a review' or 'deleted without a review'
  return { path = path, added = added, removed = removed, hunks = hs, note = what }
end

--- The change of `path`, new since the snapshot (and marked so, for the view's `dO`).
local function new_file(path)
  local now = snapshot.read(path, 0, M.caps())
  if not now then -- (a directory a symlink points to)
    return nil
  end
  local text = now.data and as_text(now.data)
  local count = text and #hunks.lines(text) or 0
  local note = text and 'new, without a review' or ('new (' .. WHY[now.why] .. ')')
  local strange = not_a_file(now)
  fresh[path] = not strange or nil
  local hs = text and hunks.compute('', text) or {}
  return { path = path, added = count, removed = 0, hunks = hs, note = strange or note, strange = strange ~= nil }
end

--- Inside snapshot.run: the changes git finds in `root` since commit `base`, of files with no
--- baseline of their own (their earlier text is the commit's).
local function git_changes(root, base, out, gen)
  local dirty, why = snapshot.dirty(root, base)
  refused[root] = why -- (the agent may have written .git/config since the snapshot)
  for path, status in pairs(dirty or {}) do
    alive(gen)
    if not baseline[path] then
      local new = status == '?' or status == 'A'
      local before = not new and snapshot.at_commit(root, base, path)
      if new then
        out[#out + 1] = new_file(path)
      elseif not before then -- (never "new": `dO` would offer to delete it)
        local note = 'changed (its text at the commit cannot be read)'
        out[#out + 1] = { path = path, added = 0, removed = 0, hunks = {}, note = note }
      else
        local binary = snapshot.binary(before)
        from_commit[path] = not binary and as_text(before) or nil
        out[#out + 1] = compare(path, { text = from_commit[path], why = binary and 'binary' or nil })
      end
    end
  end
end

--- Files that differ from their baseline, and files new in the snapshotted workspace:
--- { {path, added, removed, hunks, note} } by path, to `done` (in slices).
function M.scan(done)
  local gen = generation
  return snapshot.run(function()
    local out = {}
    from_commit = {}
    for _, path in ipairs(vim.tbl_keys(baseline)) do
      alive(gen)
      local change = baseline[path] and compare(path, baseline[path])
      out[#out + 1] = change
    end
    for _, root in ipairs(roots or {}) do
      if bases[root] then
        git_changes(root, bases[root], out, gen)
      else
        for _, path in ipairs((snapshot.list(root, M.caps().max_files))) do
          alive(gen)
          out[#out + 1] = not baseline[path] and new_file(path) or nil
        end
      end
    end
    table.sort(out, function(a, b)
      return a.path < b.path
    end)
    return out
  end, function(ok, out)
    if ok then
      done(out)
    elseif out ~= 'stopped' then
      notify.say('looking for changes failed: ' .. tostring(out), 'error')
    end
  end)
end

--- The workspace snapshot is taken (changes are counted from it).
function M.snapshotted()
  return roots ~= nil
end

--- How many files of the workspace are not watched (past max_files, where git cannot tell).
function M.unwatched()
  return unwatched
end

--- Why git is not asked in the workspace although it is a repository: 'git cannot be run safely
--- here (why)', or nil. Then its files are walked, as where there is no git (snapshot.git).
function M.without_git()
  local _, why = next(refused)
  return why and ('git cannot be run safely here (%s)'):format(why)
end

--- What :GeminiChanges says it watches: "12 watched", or git's part.
function M.watched()
  local n = vim.tbl_count(baseline)
  local count = ('%d file%s watched'):format(n, n == 1 and '' or 's')
  return next(bases) and ('git compares every file with its commit; %s'):format(count) or count
end

--- The text `path` had before (nil: none known; '' for a file new since the snapshot), and
--- why there is none.
function M.before(path)
  if baseline[path] and not baseline[path].text then
    return nil, WHY[baseline[path].why]
  end
  return M.before_text(path), NOT_WATCHED
end

--- A baseline is kept for `path` (or its commit's text is).
function M.known(path)
  return baseline[path] ~= nil or from_commit[path] ~= nil
end

function M.before_text(path)
  if baseline[path] then
    return baseline[path].text
  elseif from_commit[path] then
    return from_commit[path]
  end
  -- New only when a scan listed it: a file it never lists (ignored by git, in a hidden folder, past
  -- max_files) has no earlier text known, and '' would let `do` empty or delete it.
  return fresh[path] and '' or nil
end

--- Mark now: the workspace and every watched file as on disk now become the baseline ("since
--- my last prompt"); said when the snapshot is taken.
function M.mark()
  fresh = {}
  return M.snapshot(true, function()
    notify.say(('changes are now counted from here (%s)'):format(M.watched()))
  end)
end

-- Turns (issue 27): an agent's turn hook says a turn ended; what changed without a review since
-- the end of the turn before is that turn's. `seen`: each changed path's fingerprint then.
local turns = {} ---@type { n: integer, agent: string, paths: string[] }[]
local seen = {} ---@type table<string, string>
local turn_of = {} ---@type table<string, integer> path -> the last turn that changed it

local function fingerprint(c)
  local parts = { c.note, tostring(c.added), tostring(c.removed) }
  for _, h in ipairs(c.hunks or {}) do
    parts[#parts + 1] = table.concat(h, ',')
  end
  return table.concat(parts, ';')
end

--- `agent`'s turn ended: scan, and give `done(turn or nil)` the turn's unreviewed changes ({n,
--- agent, paths}; nil when it changed nothing without a review).
function M.turn_ended(agent, done)
  M.scan(function(changed)
    local now, paths = {}, {}
    for _, c in ipairs(changed) do
      local fp = fingerprint(c)
      now[c.path] = fp
      if seen[c.path] ~= fp then
        paths[#paths + 1] = c.path
      end
    end
    seen = now
    if #paths == 0 then
      return done(nil)
    end
    local turn = { n = #turns + 1, agent = agent, paths = paths }
    turns[#turns + 1] = turn
    for _, path in ipairs(paths) do
      turn_of[path] = turn.n
    end
    done(turn)
  end)
end

--- The last turn that changed something without a review (nil: none yet).
function M.last_turn()
  return turns[#turns]
end

--- The turn that last changed `path` without a review, if a turn hook said so.
function M.turn_of(path)
  local n = turn_of[path]
  return n and turns[n] or nil
end

--- Whether :GeminiChanges {path} must scan first: a file of the workspace it knows nothing of yet
--- (new since the snapshot, or never listed by one).
function M.needs_scan(path)
  return not (baseline[path] or from_commit[path] or fresh[path] or not in_roots(path))
end

return M
