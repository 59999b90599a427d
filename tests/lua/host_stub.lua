-- The Python host, stubbed at the typed seam (docs/SEAM.md), for UI specs that need no real client:
-- what to_host.lua sends (seam.py's `Event` models, the `to_host.call` commands) is recorded instead
-- of sent, and a spec calls bridge.lua's entry points as Python would. A spec then asserts what the
-- user sees (buffers, windows, vim.notify messages) and what would reach Python (`H.decisions()`:
-- the `review` events, seam.py's ReviewDecided).
--
--   local t = ...
--   local H = require('host_stub')
--   H.test(t, 'name', function(ws) ... end)  -- a fresh plugin, started as Python starts it, in `ws`
--
-- Each case gets the plugin as a user who set nothing has it (config.py's defaults, sent by
-- tests/lua/conftest.py as ON_READY's settings), or `opts.settings` over them, in a workspace of
-- its own (the current directory).
local H = {}

local HOST_CHANNEL = 1000 -- stands for the host's channel; no such channel exists
local uv = vim.uv or vim.loop

---@type table[] every event to_host sent, in order: { type = ..., ... } (seam.py's Event)
local events = {}
---@type table[] every to_host.call: { action, args... } (seam.COMMANDS)
local commands = {}
---@type string[] every vim.notify message, in order
local messages = {}
local answered = 0 -- how many decisions H.result handed out already

local real_rpcnotify = vim.rpcnotify
-- to_host.lua is the only module that talks to the host (tests/unit/test_seam.py): what it sends
-- on any channel is what Python would receive.
vim.rpcnotify = function(channel, method, payload, ...)
  if method == 'gemini_companion_event' then
    table.insert(events, vim.tbl_extend('keep', payload, { on_channel = channel }))
    return true
  end
  if channel == HOST_CHANNEL then
    table.insert(commands, payload)
    return true
  end
  return real_rpcnotify(channel, method, payload, ...)
end

vim.notify = function(msg, level)
  table.insert(messages, { msg, level or vim.log.levels.INFO })
end

--- What Python sends at start for a user who set nothing (tests/lua/conftest.py reads config.py).
local function at_start()
  local json = assert(os.getenv('GEMINI_COMPANION_SPEC_SETTINGS'), 'run through tests/lua/conftest.py')
  return vim.json.decode(json)
end

--- Forget every module of the plugin and every window, buffer and tab: the next case starts as
--- Neovim does.
local function forget_everything()
  -- A window of its own too: a window keeps its w: variables and a local directory (netrw sets
  -- both), which `new` does not copy and H.test's :cd clears.
  pcall(vim.cmd, 'silent! tabonly! | silent! noautocmd new | silent! only!')
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    pcall(vim.api.nvim_buf_delete, buf, { force = true })
  end
  for name in pairs(package.loaded) do
    if name:match('^gemini_companion') then
      package.loaded[name] = nil
    end
  end
  pcall(vim.api.nvim_clear_autocmds, { pattern = 'Gemini*' })
  for _, autocmd in ipairs(vim.api.nvim_get_autocmds({})) do -- the forgotten modules' own groups
    if autocmd.group_name and autocmd.group_name:match('^gemini_companion') then
      pcall(vim.api.nvim_del_augroup_by_id, autocmd.group)
    end
  end
  vim.g.loaded_gemini_companion = nil
  events, commands, messages = {}, {}, {}
  answered = 0
end

--- Start the plugin as a user's Neovim has it once the host runs: plugin/ sourced, the host's
--- channel known, ON_READY with `opts.settings` over the defaults.
function H.start(opts)
  opts = opts or {}
  vim.cmd.runtime('plugin/gemini_companion.lua')
  local host = require('gemini_companion.host')
  host.process = { channel = HOST_CHANNEL, method = 'GeminiCompanionCall', python = 'python3' }
  local state = require('gemini_companion.state')
  state.channel = HOST_CHANNEL
  state.booted = true -- what started the host: VimEnter's automatic start (plugin/'s `boot`)
  require('gemini_companion.to_host').host_alive = function()
    return true
  end
  local sent = at_start()
  local bridge = require('gemini_companion.bridge')
  bridge.configure_tools(vim.tbl_deep_extend('force', sent.configure_tools, opts.configure_tools or {}))
  bridge.on_state({ state = 'running', workspace_path = vim.fn.getcwd(), client_count = 0 })
  bridge.on_ready({
    url = 'http://127.0.0.1:1/mcp',
    port = 1,
    quiet = true,
    settings = vim.tbl_deep_extend('force', sent.settings, opts.settings or {}),
  })
end

--- The timers still to fire (vim.defer_fn's, the plugin's debounces and watches), soonest first.
local function active_timers()
  local timers = {}
  uv.walk(function(handle)
    if handle:get_type() == 'timer' and handle:is_active() then
      table.insert(timers, handle)
    end
  end)
  table.sort(timers, function(x, y)
    return x:get_due_in() < y:get_due_in()
  end)
  return timers
end

--- Run every callback scheduled so far (vim.schedule's queue is first in, first out).
local function run_scheduled()
  local ran = false
  vim.schedule(function()
    ran = true
  end)
  vim.wait(1000, function()
    return ran
  end, 1)
end

local SOON_MS = 100 -- a teardown's or a refresh's deferral; expiries and watches are seconds away

--- Let what the previous case left to run next (a list refreshed after its `a`, a view's deferred
--- teardown) run now, against that case's plugin, then stop its timers that were further off (a
--- review's expiry, the host watch): none of them fires into the next case.
local function settle()
  run_scheduled()
  for _ = 1, 20 do
    local soonest = vim.tbl_filter(function(timer) -- a repeating one (a poll) never ends: stopped below
      return timer:get_repeat() == 0
    end, active_timers())[1]
    if not soonest or soonest:get_due_in() > SOON_MS then
      break
    end
    vim.wait(SOON_MS * 2, function()
      return not soonest:is_active() or soonest:get_due_in() > SOON_MS
    end, 1)
    run_scheduled()
  end
  for _, timer in ipairs(active_timers()) do
    timer:stop()
  end
  uv.walk(function(handle) -- the previous plugin's file watches (changes/init.lua's)
    local kind = handle:get_type()
    if (kind == 'fs_event' or kind == 'fs_poll') and handle:is_active() then
      handle:stop()
    end
  end)
end

--- A case: a fresh plugin (H.start(opts)) in a fresh workspace, which `fn` gets as its path.
function H.test(t, name, fn, opts)
  t.test(name, function()
    settle()
    forget_everything()
    local ws = vim.fn.resolve(vim.fn.tempname())
    vim.fn.mkdir(ws, 'p')
    vim.cmd.cd(vim.fn.fnameescape(ws))
    H.start(opts)
    fn(ws)
  end)
end

-- Python -> Lua: the one place each entry point's arguments are spelled ---------------------------

local next_id = 0

--- OPEN_REVIEW as reviews.py sends it. `opts`: id (default: a new one), client (default: Gemini
--- CLI's IdeClient), channel (default: none, the host's), expires (monotonic ns), carries_reason.
--- Returns the reply (seam.py's OpenedReview).
function H.open_review(path, text, opts)
  opts = opts or {}
  next_id = next_id + 1
  return require('gemini_companion.bridge').open_review(
    path,
    text,
    opts.id or next_id,
    opts.client or 'streamable-http-client',
    opts.channel or vim.NIL,
    opts.expires or (uv.hrtime() + 60e9),
    opts.carries_reason or false
  )
end

--- H.open_review that must open, then its proposal buffer.
function H.open(path, text, opts)
  local reply = H.open_review(path, text, opts)
  assert(reply.ok, vim.inspect(reply))
  return H.proposed_buf(path)
end

--- CLOSE_REVIEW (Gemini's closeDiff) → seam.py's ClosedReview.
function H.close_review(path, id)
  return require('gemini_companion.bridge').close_review(path, id)
end

--- RELEASE_REVIEW: the proposing session ended (`why` nil) or withdrew it.
function H.release_review(path, why)
  return require('gemini_companion.bridge').release_review(path, why or vim.NIL)
end

--- ON_STATE: `count` agent sessions connected (lifecycle.py pushes the count as it changes).
function H.clients(count)
  require('gemini_companion.bridge').on_state({
    state = 'running',
    workspace_path = vim.fn.getcwd(),
    client_count = count,
  })
end

--- ON_STATE: the server stopped (`:GeminiStop`, or the host's own stop).
function H.server_stopped()
  require('gemini_companion.bridge').on_state({ state = 'stopped' })
end

-- What the user sees ---------------------------------------------------------------------------

--- The proposal buffer of the pending review of `path`, or nil.
function H.proposed_buf(path)
  for _, d in ipairs(require('gemini_companion.review').pending()) do
    if d.path == path then
      return d.proposed_buf
    end
  end
end

--- The paths of the pending reviews (what tests/support/gemini_ide.py's PENDING read).
function H.pending()
  return vim.tbl_map(function(d)
    return d.path
  end, require('gemini_companion.review').pending())
end

--- The paths of the orphaned proposals.
function H.orphaned()
  return vim.tbl_map(function(d)
    return d.path
  end, require('gemini_companion.review').orphaned())
end

--- The messages said since message `since` (a count from H.said()), text only.
function H.messages(since)
  return vim.tbl_map(function(m)
    return m[1]
  end, vim.list_slice(messages, (since or 0) + 1))
end

--- The warnings and errors said since message `since` (what tests/support/agent_terminal.py's
--- `errors` read), text only.
function H.complaints(since)
  local out = {}
  for _, m in ipairs(vim.list_slice(messages, (since or 0) + 1)) do
    if m[2] >= vim.log.levels.WARN then
      table.insert(out, m[1])
    end
  end
  return out
end

--- How many messages were said so far (for H.messages(since)).
function H.said()
  return #messages
end

--- The last message said, or nil.
function H.last_message()
  return messages[#messages] and messages[#messages][1]
end

--- Type `keys` as the user would (termcodes such as <CR>, <Esc>), and let them run.
function H.type(keys)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), 'xt', false)
end

--- Go to buffer `buf`'s window.
function H.go_to(buf)
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(buf)[1])
end

--- Type a new first line into the proposal, as a user would (tests/support/reviewing.py's edit_proposal).
function H.edit_proposal(buf, line)
  H.go_to(buf)
  H.type('ggO' .. line .. '<Esc>')
  assert(vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == line, 'typed edit')
end

--- A small project in `ws`: a.py of 20 lines and b.py; returns their paths.
function H.project(ws)
  local lines = {}
  for i = 1, 20 do
    lines[i] = 'line ' .. i .. '\n'
  end
  H.write_file(ws .. '/a.py', table.concat(lines))
  H.write_file(ws .. '/b.py', 'def foo():\n    return 1\n')
  return ws .. '/a.py', ws .. '/b.py'
end

--- Write `text` to `path` (a file the user has).
function H.write_file(path, text)
  vim.fn.mkdir(vim.fn.fnamemodify(path, ':h'), 'p')
  local f = assert(io.open(path, 'wb'))
  f:write(text)
  f:close()
end

--- The file's text, or nil if there is none.
function H.read_file(path)
  local f = io.open(path, 'rb')
  if not f then
    return nil
  end
  local text = f:read('*a')
  f:close()
  return text
end

-- The agent in Neovim's terminal ----------------------------------------------------------------

local ROOT = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h')
local STANDIN = ROOT .. '/tests/fixtures/agent_standin/agent.py'

--- A stand-in agent (tests/fixtures/agent_standin/agent.py, as tests/support/agent_terminal.py's
--- Agent): like gemini it takes its terminal raw and asks for bracketed paste, and records its
--- environment, cwd and pid, and every byte typed into it, in a directory of its own outside the
--- workspace. `name`: the same program under that name (`claude`: the profiles key on it).
--- `agent.cmd` is the terminal.cmd setting.
function H.agent(name)
  local record = vim.fn.tempname()
  local agent = { record = record, cmd = { vim.fn.exepath('python3'), '-I', '-S', STANDIN, record } }
  if name then
    local program = vim.fn.tempname() .. '/' .. name
    vim.fn.mkdir(vim.fn.fnamemodify(program, ':h'), 'p')
    assert(uv.fs_symlink(STANDIN, program))
    agent.cmd = { program, record }
  end
  --- Wait until it started: what it was given ({ env, cwd, pid }). In a terminal of this Neovim,
  --- also until it shows its prompt: what is typed before it takes the terminal raw is lost.
  function agent.started(t)
    t.wait_for(function()
      return uv.fs_stat(record .. '/env.json') ~= nil
    end, 'the agent started')
    local info = vim.json.decode(H.read_file(record .. '/env.json'))
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      local job = vim.bo[buf].buftype == 'terminal' and vim.bo[buf].channel or 0
      if job > 0 and pcall(vim.fn.jobpid, job) and vim.fn.jobpid(job) == info.pid then
        t.wait_for(function()
          return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n'):find('stand-in agent ready', 1, true)
        end, 'the agent ready')
      end
    end
    return info
  end
  --- Every byte typed into it so far.
  function agent.typed()
    return H.read_file(record .. '/input') or ''
  end
  --- Wait until it received exactly `expected` (on failure: what it received instead).
  function agent.received(t, expected)
    if not pcall(t.wait_for, function()
      return agent.typed() == expected
    end) then
      error(('the agent received %s\n   expected %s'):format(vim.inspect(agent.typed()), vim.inspect(expected)), 2)
    end
  end
  return agent
end

--- The windows of the current tab showing a terminal (the agent's): { win, buf, job, relative,
--- width, col } each (tests/support/agent_terminal.py's agent_windows).
function H.agent_windows()
  local out = {}
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local buf = vim.api.nvim_win_get_buf(win)
    if vim.bo[buf].buftype == 'terminal' then
      table.insert(out, {
        win = win,
        buf = buf,
        job = vim.bo[buf].channel,
        relative = vim.api.nvim_win_get_config(win).relative,
        width = vim.api.nvim_win_get_width(win),
        col = vim.api.nvim_win_get_position(win)[2],
      })
    end
  end
  return out
end

-- What would reach Python ----------------------------------------------------------------------

--- Every event sent so far (seam.py's Event models; `on_channel`: the channel it went on).
function H.events()
  return vim.deepcopy(events)
end

--- The files of every `context` event sent so far (context.lua's snapshot, what Python turns into
--- ide/contextUpdate), oldest first: each its `openFiles`.
function H.contexts()
  local out = {}
  for _, e in ipairs(events) do
    if e.type == 'context' then
      table.insert(out, vim.deepcopy(e.context.openFiles))
    end
  end
  return out
end

--- The `to_host.call` commands sent so far: { action, args... } each.
function H.commands()
  return vim.deepcopy(commands)
end

--- The review decisions sent so far (seam.py's ReviewDecided), without the channel they went on.
function H.decisions()
  local out = {}
  for _, e in ipairs(events) do
    if e.type == 'review' then
      local copy = vim.deepcopy(e)
      copy.type, copy.on_channel = nil, nil
      table.insert(out, copy)
    end
  end
  return out
end

--- What an IdeClient's openDiff would resolve to (tests/support/gemini_ide.py's diff_result): the
--- next decision not handed out yet, {status = 'accepted', content = ...} or {status = 'rejected'}
--- (with `path`). Waits for it: a decision may take a turn of the event loop (a big review's).
function H.result(t)
  local decision
  t.wait_for(function()
    decision = H.decisions()[answered + 1]
    return decision ~= nil
  end, 'a decision')
  answered = answered + 1
  if decision.action == 'accepted' then
    return { status = 'accepted', content = decision.content, path = decision.path }
  end
  return { status = 'rejected', path = decision.path }
end

--- No decision was sent that H.result has not handed out.
function H.undecided()
  return H.decisions()[answered + 1] == nil
end

--- How many tab pages there are.
function H.tabs()
  return #vim.api.nvim_list_tabpages()
end

--- Wait until no review is pending and the review's tab is gone.
function H.view_closed(t)
  t.wait_for(function()
    return #H.pending() == 0 and H.tabs() == 1
  end, 'view closed')
end

--- :GeminiChanges, once its scan is done (at once, or after a few slices): the quickfix list,
--- { path, lnum, text } each.
function H.changes_listed(t)
  local before = H.said()
  vim.fn.setqflist({}, 'f')
  vim.cmd('GeminiChanges')
  local function listed()
    return vim.tbl_map(function(i)
      return { vim.fn.fnamemodify(vim.fn.bufname(i.bufnr), ':.'), i.lnum, i.text }
    end, vim.fn.getqflist())
  end
  t.wait_for(function()
    return #listed() > 0 or H.said() > before
  end, 'the scan done')
  return listed()
end

return H
