-- Diff review for proposed edits (`openDiff`): the file as on disk (read-only) beside an
-- editable proposed buffer. An explicit `:w`/`:x`/`ZZ` in the proposal accepts, closing it rejects.
-- The plugin never writes the file: Gemini CLI does, after `ide/diffAccepted`.
--
-- The proposal buffer is never 'modified' (edits are tracked in `d.edited` instead). That is
-- what keeps `:wa`, `:wqa`, `:xa`, 'autowrite'/'autowriteall' and auto-save plugins from writing
-- it (they only write modified buffers), and `:q` from failing with E37. `:x` and `ZZ` write
-- only modified buffers, so typed `:x`/`:update` and `ZZ` mark it modified just before they run.
local to_host = require('gemini_companion.to_host')
local notify = require('gemini_companion.notify')
local hunks = require('gemini_companion.text.hunks')
local paths = require('gemini_companion.text.paths')
local record = require('gemini_companion.review.record')
local guard = require('gemini_companion.review.guard')
local keys = require('gemini_companion.review.keys')
local fill = require('gemini_companion.review.fill')
local disk = require('gemini_companion.review.disk')
local buffers = require('gemini_companion.review.buffers')
local diffmode = require('gemini_companion.diffmode')
local focus = require('gemini_companion.review.focus')
local teardown = require('gemini_companion.review.teardown')

local shown = paths.shown

local M = {}

-- The validated `review` settings (config.py owns the defaults), set by configure() at on_ready,
-- before any openDiff can arrive.
local settings = {}

---@type table<string, GeminiCompanionReview> reviews someone waits for, by key
local diffs = {}
---@type GeminiCompanionReview[] edited proposals whose session ended
local orphans = {}

function M.configure(opts)
  settings = opts or {}
end

--- The `review.keymaps` settings (their defaults before the server's settings arrive).
function M.keymaps()
  return settings.keymaps or require('gemini_companion.config').defaults.review.keymaps
end

local ORPHAN_HELP = 'nothing can accept it any more (:w {file} saves a copy, :q discards it)'

local finish

--- Run `steps` in order, each in a turn of the event loop of its own (a timer: clients waiting are
--- answered between them); a step that returns false ends the run.
local function turn_by_turn(steps, i)
  i = i or 1
  vim.defer_fn(function()
    if steps[i]() ~= false and steps[i + 1] then
      turn_by_turn(steps, i + 1)
    end
  end, 0)
end

--- Accept big review `d`: its text read in slices first (review/fill.lua; reading 1 M lines at
--- once blocked ~0.7 s), the proposal unmodifiable meanwhile, so what is sent is what was shown.
--- The disk check and the decision then get a turn each of the event loop (~20 ms each at 1 M
--- lines), so other clients are answered between them.
local function accept_big(d, quiet)
  if d.reading then
    return
  end
  local bo = vim.bo[d.proposed]
  if vim.api.nvim_buf_line_count(d.proposed) == 1 then
    -- The user emptied it.
    return guard.disk_unchanged(d) and finish(d, 'accepted', quiet, nil, buffers.buffer_text(d))
  end
  d.reading = true
  bo.modifiable = false
  local function pending()
    return not d.resolved and vim.api.nvim_buf_is_valid(d.proposed)
  end
  local function done(text)
    d.reading = nil
    if pending() then
      bo.modifiable = true
      if text then
        finish(d, 'accepted', quiet, nil, text)
      end
    end
  end
  fill.read(d.proposed, pending, function(text)
    if not text then
      return done(nil)
    end
    turn_by_turn({
      function()
        if not (pending() and guard.disk_unchanged(d)) then
          done(nil)
          return false
        end
      end,
      function()
        done(text)
      end,
    })
  end, bo.fileformat == 'dos' and '\r\n' or '\n', bo.eol or bo.fixeol)
end

--- Orphan `d` decided: rejecting discards it; nothing can accept it (said).
local function decide_orphan(d, outcome, quiet)
  if outcome == 'accepted' then
    notify.say(('the session that proposed %s has ended: %s'):format(shown(d.key), ORPHAN_HELP), 'warn')
    return
  end
  d.resolved = true
  orphans = vim.tbl_filter(function(o)
    return o ~= d
  end, orphans)
  if not quiet then
    notify.say(('discarded your edited proposal for %s'):format(shown(d.key)))
  end
  teardown.soon(d)
end

--- Whether `d` may be accepted now, its text read from the buffer: not while it fills (the user
--- accepts what they have seen whole), a big one only after its text is read in slices
--- (accept_big decides it then), and only while the file on disk is what the review shows.
local function may_accept_now(d, quiet)
  if d.filling then
    notify.say(
      ('not accepted: the proposal for %s is still loading; accept it once it is shown whole'):format(shown(d.key)),
      'warn'
    )
    return false
  end
  if d.big then
    accept_big(d, quiet)
    return false
  end
  return guard.disk_unchanged(d)
end

--- The comments of rejected review `d` that go with the rejection (the user is asked unless
--- `send` says; never while Neovim exits: quitting is not a review), and what became of them.
local function rejection_comments(d, outcome, send)
  if vim.v.exiting ~= vim.NIL then
    send = false
  end
  return require('gemini_companion.comments').decided(d.proposed, d.key, outcome, send)
end

--- Tell the review's owner (through Python), the `User` listeners and the user that `d` was
--- decided. Returns the comments the agent is to get typed as its next prompt, if any: the
--- owner's answer says no why (Gemini's diffRejected, Claude's DIFF_REJECTED).
local function announce(d, outcome, content, quiet, send_comments)
  local comments, note = rejection_comments(d, outcome, send_comments)
  to_host.review_decided(outcome, d.key, d.id, content, comments, d.channel)
  keys.emit(outcome == 'accepted' and 'Accepted' or 'Rejected', d, { content = content })
  d.decision = ('%s the edit to %s%s'):format(outcome, shown(d.key), note and (' (' .. note .. ')') or '')
  if not quiet then
    notify.say(d.decision)
  end
  return not d.carries_reason and comments or nil
end

--- Decide `d`: 'accepted' or 'rejected'. `quiet`: no message (the caller says it).
--- `send_comments`: whether a rejection carries the review's comments (nil: ask the user).
--- `text`: the proposal's text when the caller read it already, and checked the disk (a big
--- review's, accept_big).
function finish(d, outcome, quiet, send_comments, text)
  if d.resolved then
    return
  elseif d.orphan then
    return decide_orphan(d, outcome, quiet)
  elseif outcome == 'accepted' and not text and not may_accept_now(d, quiet) then
    return
  end
  d.resolved = true
  if diffs[d.key] == d then
    diffs[d.key] = nil
  end
  local content = outcome == 'accepted' and (text or buffers.buffer_text(d)) or nil
  local to_type = announce(d, outcome, content, quiet, send_comments)
  if outcome == 'accepted' then
    -- The agent writes this text: :GeminiChanges takes it as reviewed (plugin/ subscribes it).
    require('gemini_companion.state').publish('review_accepted', d.key, content)
    disk.reload_when_written(d.key)
  end
  teardown.soon(d, to_type and function()
    require('gemini_companion.terminal.send').deliver(to_type)
  end)
end

local function from_buffer(buf)
  for _, d in ipairs(vim.list_extend(vim.tbl_values(diffs), orphans)) do
    if d.proposed == buf or d.original == buf then
      return d
    end
  end
end

--- The review the user means: `arg` names its file (relative, `%` of either side, …), else the
--- one under the cursor, else the only one.
local function pick(arg)
  if arg and arg ~= '' then
    local wanted = paths.normalise(arg)
    for _, d in ipairs(vim.list_extend(vim.tbl_values(diffs), orphans)) do
      if
        d.key == wanted
        or vim.iter(buffers.of(d)):any(function(buf)
          return vim.api.nvim_buf_is_valid(buf) and vim.api.nvim_buf_get_name(buf) == wanted
        end)
      then
        return d
      end
    end
    return nil
  end
  local d = from_buffer(vim.api.nvim_get_current_buf())
  if d then
    return d
  end
  local only, count = nil, 0
  for _, x in pairs(diffs) do
    only, count = x, count + 1
  end
  return count == 1 and only or nil
end

--- Decide the diff for `arg` (or the one the user means): 'accepted' or 'rejected'.
local function decide(arg, outcome)
  local d = pick(arg)
  if not d then
    local verb = outcome == 'accepted' and 'accept' or 'reject'
    local what = (arg and arg ~= '') and ('for %s'):format(arg) or 'here'
    notify.say(('no proposed edit to %s %s (:GeminiReviews lists them)'):format(verb, what), 'warn')
    return false
  end
  finish(d, outcome)
  return true
end

function M.accept(arg)
  return decide(arg, 'accepted')
end

function M.reject(arg)
  return decide(arg, 'rejected')
end

function M.reject_all()
  local comments = require('gemini_companion.comments')
  local n, commented = 0, 0
  for _, d in pairs(diffs) do
    commented = commented + #comments.of_review(d.proposed, d.key)
  end
  -- One question for them all.
  local send = commented > 0 and comments.ask_to_send(('%d comments'):format(commented)) or false
  for _, d in pairs(diffs) do
    finish(d, 'rejected', true, send)
    n = n + 1
  end
  return n
end

local function by_path(list)
  table.sort(list, function(a, b)
    return a.key < b.key
  end)
  return list
end

local function listing(list)
  return vim.tbl_map(function(d)
    return { path = d.key, proposed_buf = d.proposed, original_buf = d.original }
  end, by_path(list))
end

--- Reviews waiting for the user's decision.
function M.pending()
  return listing(vim.tbl_values(diffs))
end

--- Edited proposals kept after their session ended.
function M.orphaned()
  return listing(vim.list_extend({}, orphans))
end

--- Every review, pending then orphaned, by path: the live records (review/list.lua shows them).
function M.reviews()
  return vim.list_extend(by_path(vim.tbl_values(diffs)), by_path(vim.list_extend({}, orphans)))
end

--- Decide review `d` (one of M.reviews()): 'accepted' or 'rejected'.
function M.decide(d, outcome)
  finish(d, outcome)
end

--- How many reviews wait for the user (cheap: for the status line).
function M.count()
  local n = 0
  for _ in pairs(diffs) do
    n = n + 1
  end
  return n
end

--- Still shown anywhere? A proposed buffer that no window shows counts as closed.
local function check_closed(d)
  if d.resolved then
    return
  end
  if not vim.api.nvim_buf_is_valid(d.proposed) or #vim.fn.win_findbuf(d.proposed) == 0 then
    finish(d, 'rejected')
  end
end

--- Only an explicit write of the proposal itself accepts it (see the top of this file).
local function on_write(d, ev)
  vim.bo[d.proposed].modified = false -- written, as far as Neovim is concerned (`:wq` quits)
  if guard.by_client(d) or guard.other_name(d, ev) then
    return
  end
  finish(d, 'accepted')
  if not d.resolved then
    guard.modified_for_now(d.proposed) -- a failed write: `:wq` keeps it open
  end
end

local function watch(d)
  local proposed = d.proposed
  vim.api.nvim_buf_attach(proposed, false, {
    on_lines = function()
      if d.resolved then
        return true
      end
      if d.filling then
        return -- the plugin filling it, not an edit
      end
      d.edited = true
      vim.bo[proposed].modified = false
    end,
  })
  local group = vim.api.nvim_create_augroup('gemini_companion_diff_' .. proposed, { clear = true })
  vim.api.nvim_create_autocmd('BufWriteCmd', {
    group = group,
    buffer = proposed,
    callback = function(ev)
      on_write(d, ev)
    end,
  })
  vim.api.nvim_create_autocmd({ 'BufDelete', 'BufWipeout', 'BufUnload' }, {
    group = group,
    buffer = proposed,
    callback = function()
      finish(d, 'rejected')
    end,
  })
  vim.api.nvim_create_autocmd('BufWinLeave', {
    group = group,
    buffer = proposed,
    callback = function()
      -- After the window is gone: is the proposal still shown somewhere?
      vim.schedule(function()
        check_closed(d)
      end)
    end,
  })
  guard.watch_options(d, group)
  keys.attach(d, M.keymaps(), function(outcome)
    finish(d, outcome)
  end)
end

-- Typed `:x`, `:exit` and `:update` in a proposal accept it like `:w`: they write only modified
-- buffers, so mark it modified just before they run (a failed command leaves it so only briefly).
vim.api.nvim_create_autocmd('CmdlineLeave', {
  group = vim.api.nvim_create_augroup('gemini_companion_diff', { clear = true }),
  callback = function()
    if next(diffs) == nil then
      return
    end
    local buf = vim.api.nvim_get_current_buf()
    local d = from_buffer(buf)
    if not d or d.proposed ~= buf or d.orphan or vim.v.event.abort or vim.fn.getcmdtype() ~= ':' then
      return
    end
    local ok, cmd = pcall(vim.api.nvim_parse_cmd, vim.fn.getcmdline(), {})
    if ok and (cmd.cmd == 'xit' or cmd.cmd == 'exit' or cmd.cmd == 'update') and #cmd.args == 0 then
      guard.modified_for_now(buf)
    end
  end,
})

--- Keep an edited proposal whose session ended: nobody will answer it, the text stays.
local function orphan(d, why)
  diffs[d.key] = nil
  d.orphan = true
  table.insert(orphans, d)
  -- A scratch buffer now: `:w` cannot write anything (E382), `:w {file}` still saves a copy.
  vim.api.nvim_clear_autocmds({ group = 'gemini_companion_diff_' .. d.proposed, event = 'BufWriteCmd' })
  vim.bo[d.proposed].buftype = 'nofile'
  diffmode.unique_name(d.proposed, d.key .. ' (orphaned proposal)')
  vim.b[d.proposed].gemini_diff = { role = 'proposed', path = d.key, orphaned = true }
  notify.say(
    ('%s, so your edited proposal for %s stays open in buffer %d: %s'):format(
      why,
      shown(d.key),
      d.proposed,
      ORPHAN_HELP
    ),
    'warn'
  )
end

--- Once review `d` shows its proposal whole (`proposed_text`, as shown): the event, and what
--- the user should know (`same`: the proposal is the file as it is; `proposal_ff`: its own line
--- ends).
local function shown_whole(d, proposed_text, same, proposal_ff)
  keys.emit('Opened', d)
  if same then
    notify.say(('%s: no changes (the proposal is the same as the file)'):format(shown(d.key)))
  end
  guard.line_ends_note(d, proposal_ff, d.old_text == proposed_text)
end

--- Show big review `d`'s changes once its buffers are full: in its layout, or past
--- fill.DIFF_MODE_MAX_LINES in the proposal, their hunks found off the main loop. Returns the
--- proposal's text as shown.
local function render_big(d, content)
  local eol, dos = fill.shape(content)
  local proposed_text = fill.compare_text(content, eol, dos)
  local lines = 0
  for _, buf in ipairs(buffers.of(d)) do
    lines = math.max(lines, vim.api.nvim_buf_line_count(buf))
  end
  if lines > fill.DIFF_MODE_MAX_LINES then
    -- Too big for Neovim's diff mode (it compares both buffers whole, again after every change):
    -- the proposal shows its hunks as the unified layout does, found off the main loop.
    d.compare = fill.compare(d, function(hs, removed)
      require('gemini_companion.review.layouts.unified').draw(d, hs, removed)
    end, proposed_text)
    notify.say(
      ('%s: %d lines, so its changes are shown in the proposal (removed lines inline), not in diff mode'):format(
        shown(d.key),
        lines
      )
    )
  else
    d.layout.render(d)
  end
  return proposed_text
end

--- Fill big review `d` (its buffers made empty; `proposal`: buffers.proposal's shape of the
--- proposed text): its file read off the main loop, then both buffers in slices
--- (review/fill.lua), then its changes shown.
local function fill_big(d, content, ft, proposal)
  disk.read_async(d.key, d.exists, function(text, why)
    if d.resolved then
      return
    elseif text == nil then
      notify.say(('cannot read %s for its review, so it is rejected: %s'):format(shown(d.key), why), 'error')
      return finish(d, 'rejected', true, false)
    end
    local _, disk_dos = disk.set(d, text, d.exists, true)
    buffers.disk_line_ends(d)
    local jobs = { { buf = d.proposed, text = content, dos = proposal.dos } }
    if d.original then
      table.insert(jobs, 1, { buf = d.original, text = text, dos = disk_dos })
    end
    fill.run(jobs, function()
      return not d.resolved
    end, function()
      d.filling, d.content = nil, nil
      buffers.filled(d, ft)
      local proposed_text = render_big(d, content)
      focus.to_first_change(d, proposed_text)
      shown_whole(d, proposed_text, d.exists and text == content, proposal.ff)
    end)
  end)
end

--- A new proposal from the same session replaces the review of `path` (Python answered it);
--- what the user typed into the old one is theirs: kept, as when a session ends.
local function replace(path)
  local replaced = diffs[path]
  if not replaced then
    return
  elseif replaced.edited then
    orphan(replaced, ('a newer proposal for %s arrived'):format(shown(path)))
  else
    replaced.resolved = true
    diffs[path] = nil
    teardown.now(replaced)
  end
end

--- The file `path` as a review of `content` needs it: {exists, text} (text nil for a big review:
--- read later, off the main loop), or nil and why it cannot be reviewed.
local function read_target(path, content)
  local exists, size = disk.check(path)
  if exists == nil then
    return nil, size
  end
  -- A big review opens at once, empty, and fills in slices (review/fill.lua); its file is read off
  -- the main loop. Until then it cannot be accepted (d.filling), and its changes and the cursor
  -- come once it is full.
  if #content + size > fill.SYNC_BYTES then
    return { exists = exists }
  end
  local text, exists_or_why = disk.read_checked(path, exists)
  if text == nil then
    return nil, exists_or_why
  end
  return { exists = exists_or_why, text = text }
end

--- Make review `d`'s buffers and windows, in its layout. Returns the proposal's shape
--- ({lines, ff, dos}: buffers.proposal's), or nil and why it could not be shown (nothing is).
local function show(d, content, target, ft)
  local disk_lines
  if target.text then
    disk_lines = disk.set(d, target.text, target.exists)
  end
  d.layout.create(d, disk_lines, ft, target.exists)
  local proposal = {}
  d.proposed, proposal.lines, proposal.ff, proposal.dos = buffers.proposal(d, content, target.exists, ft, d.filling)
  local ok, err = pcall(d.layout.show, d, settings, { old = disk_lines, new = proposal.lines })
  if not ok then
    d.resolved = true
    teardown.now(d)
    return nil, tostring(err)
  end
  return proposal
end

--- Open a review of `content` for `path` (normalised by Python); `id` comes back in the answer;
--- `client` names the MCP client that proposed it; the decision goes on `channel` (nil: the
--- host's); `carries_reason`: the owner's answer carries a reason (a hook gate's deny), where a
--- rejection's comments go. Returns {ok=true} or {ok=false, error=...}.
function M.open(path, content, id, client, channel, carries_reason)
  local mode = vim.api.nvim_get_mode() -- before opening anything: what the user is doing
  replace(path)
  local target, why = read_target(path, content)
  if not target then
    return { ok = false, error = why }
  end
  -- The layout is chosen once, here: the rest of the review asks it (review/layouts/).
  local layout = require('gemini_companion.review.layouts.' .. (settings.layout == 'unified' and 'unified' or 'split'))
  local from = { channel = channel, carries_reason = carries_reason, client = client }
  local d = record.new(path, id, from, layout, mode)
  d.exists = target.exists
  d.filling = target.text == nil or nil
  d.big = d.filling
  local ft = vim.filetype.match({ filename = path })
  local proposal, err = show(d, content, target, ft)
  if not proposal then
    return { ok = false, error = err }
  end
  diffs[path] = d
  watch(d)
  if not d.filling then
    local proposed_text = hunks.text(proposal.lines)
    focus.focus(d, settings, mode, proposed_text)
    shown_whole(d, proposed_text, target.exists and target.text == content, proposal.ff)
    return { ok = true }
  end
  d.content = content -- what closeDiff answers until the buffer holds it all
  focus.focus(d, settings, mode, nil)
  fill_big(d, content, ft, proposal)
  return { ok = true }
end

--- The proposing session ended (or the server stopped): keep what the user edited, close the
--- rest (saying so).
function M.release(path, why)
  local d = diffs[path]
  if not d then
    return
  end
  why = why or 'the session that proposed it ended'
  if d.edited then
    orphan(d, why)
    return
  end
  d.resolved = true
  diffs[path] = nil
  teardown.now(d)
  notify.say(('closed the review of %s: %s'):format(shown(path), why))
end

--- The server stopped: nobody is waiting for an answer any more.
function M.close_all()
  for path in pairs(diffs) do
    M.release(path, 'the companion server stopped')
  end
end

--- Close silently (the client decided, e.g. in its own prompt) and return the proposed text.
-- How long a closed review the user edited waits for its agent to write that text.
M.CLOSE_WAIT_MS = 3000

--- The agent closed review `d` that the user edited. Gemini CLI closes it the same way whether
--- its user said yes or no in its own prompt, or cancelled (Ctrl+C), and writes the text only on
--- yes: once the file holds the user's text it closes quietly; otherwise the edits stay, as an
--- orphan, with the same message as when a session ends.
local function close_edited(d, text)
  diffs[d.key] = nil
  local waited = 0
  local timer = assert(vim.uv.new_timer())
  timer:start(
    100,
    100,
    vim.schedule_wrap(function()
      waited = waited + 100
      local written = disk.read(d.key) == text
      if d.resolved or written or waited >= M.CLOSE_WAIT_MS then
        timer:stop()
        timer:close()
        if d.resolved then
          return
        elseif written then
          d.resolved = true
          teardown.now(d)
        else
          orphan(d, ('the agent closed the review of %s without writing it'):format(shown(d.key)))
        end
      end
    end)
  )
end

function M.close(path, id)
  local d = diffs[path]
  if not d or (id and d.id ~= id) then
    return { found = false }
  end
  local text = d.content or buffers.buffer_text(d) -- d.content: still filling, not edited
  if d.edited then
    close_edited(d, text)
    return { found = true, content = text }
  end
  d.resolved = true
  diffs[path] = nil
  teardown.now(d)
  return { found = true, content = text }
end

return M
