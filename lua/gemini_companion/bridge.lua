-- The seam between Lua and the Python host, Python -> Lua: the only module Python calls (through
-- nvim_exec_lua, the code strings in rplugin/python3/gemini_companion/seam.py), and the only one
-- that requires the features it dispatches to. What Lua sends to the host is to_host.lua's.
-- docs/SEAM.md is the table of both directions; tests/unit/test_seam.py fails when these files
-- and seam.py drift apart. Below: the host's lifecycle (hello, state, ready), then the entry points.
local config = require('gemini_companion.config')
local env = require('gemini_companion.env')
local notify = require('gemini_companion.notify')
local state = require('gemini_companion.state')
local host = require('gemini_companion.host')
local to_host = require('gemini_companion.to_host')

local M = {}

--- Python says something to the user.
function M.notify(msg, level)
  notify.say(msg, level)
end

-- Neovim raises no event when the host's channel closes: look twice a second (a cheap call that
-- never blocks), so the state turns failed, and the status line shows it, at once.
local host_watch = nil
local function watch_host()
  host_watch = host_watch or vim.uv.new_timer()
  host_watch:start(
    500,
    500,
    vim.schedule_wrap(function()
      if state.channel and not to_host.host_alive() and host_watch:is_active() then
        host_watch:stop()
        M.on_state({ state = 'failed', error = 'the Python host process has exited (killed or crashed)' })
      end
    end)
  )
end

---@return gemini_companion.HostHello
function M.host_hello(channel)
  if not (host.process and host.process.channel == channel) then
    -- Neovim's shared python3 host also loads the plugin (the manifest): someone called
    -- GeminiCompanionCall() there. One server per Neovim, run by the host we started.
    return { refused = 'GeminiCompanionCall is internal: use :GeminiStart' }
  end
  state.channel = channel
  watch_host()
  return { log_dir = vim.fn.stdpath('log'), pid = vim.fn.getpid() }
end

---@return gemini_companion.StartInfo
function M.start_info()
  local ok_tools, tools = pcall(function()
    require('gemini_companion.builtin')
    return require('gemini_companion.tools').specs()
  end)
  if not ok_tools then
    notify.say('built-in tools failed to load: ' .. tostring(tools), 'error')
  end
  return {
    config = config.raw(),
    cwd = vim.fn.getcwd(-1, -1),
    pid = vim.fn.getpid(),
    ppid = vim.uv.os_getppid(),
    env = {
      TMPDIR = vim.env.TMPDIR,
      TMP = vim.env.TMP,
      TEMP = vim.env.TEMP,
      OPENCODE_SERVER_PASSWORD = vim.env.OPENCODE_SERVER_PASSWORD,
      OPENCODE_SERVER_USERNAME = vim.env.OPENCODE_SERVER_USERNAME,
      CLAUDE_CONFIG_DIR = vim.env.CLAUDE_CONFIG_DIR, -- where claude looks for lock files
      HOME = vim.env.HOME,
    },
    state_dir = vim.fn.stdpath('state'),
    tools = ok_tools and tools or {},
    servername = vim.v.servername,
  }
end

--- The host died without cleaning up: its discovery file and Claude lock would keep pointing
--- clients at a port anyone may bind now (and the lock's pid, Neovim's, looks alive). Removed
--- while they are still that host's own (their hostPid); a file another server wrote stays.
local function remove_left_files(last)
  for _, path in ipairs({ last.discovery_file or false, last.claude_lock_file or false }) do
    local ok, text = pcall(require('gemini_companion.builtin.util').read_file, path or '')
    local decoded, data = pcall(vim.json.decode, ok and text or '')
    if decoded and type(data) == 'table' and data.hostPid == last.host_pid then
      os.remove(path)
    end
  end
end

function M.on_state(snapshot)
  local was_running = state.server.state == 'running'
  if
    snapshot.state == 'failed'
    and state.channel
    and not to_host.host_alive()
    and M.exit_announced ~= state.channel
  then
    M.exit_announced = state.channel -- once per host, whoever noticed
    notify.say('the Python host has exited (killed or crashed): :GeminiRestart starts a new one', 'error')
    snapshot.log_file = snapshot.log_file or state.server.log_file
    remove_left_files(state.server)
  end
  state.server = snapshot
  state.start_pending = state.start_pending and snapshot.state == 'starting'
  if snapshot.state == 'running' and snapshot.workspace_path then
    vim.env.GEMINI_CLI_IDE_WORKSPACE_PATH = snapshot.workspace_path
    state.publish('clients', snapshot.client_count or 0)
  end
  if was_running and snapshot.state ~= 'running' then
    env.clear()
    state.publish('stopped')
    local hook = config.hook('on_stop')
    if hook then
      pcall(hook)
    end
    vim.api.nvim_exec_autocmds(
      'User',
      { pattern = 'GeminiServerStopped', modeline = false, data = { state = snapshot.state } }
    )
  end
  pcall(vim.cmd.redrawstatus)
end

function M.on_ready(details)
  local settings = details.settings or {}
  state.settings = settings
  env.export(details)
  state.publish('ready', settings)
  local public = {
    url = details.url,
    port = details.port,
    pid = details.pid,
    discovery_file = details.discovery_file,
    workspace = details.workspace,
  }
  local hook = config.hook('on_ready')
  if hook then
    pcall(hook, vim.deepcopy(public))
  end
  vim.api.nvim_exec_autocmds('User', { pattern = 'GeminiServerReady', modeline = false, data = public })
  if not details.quiet then
    notify.say('server running at ' .. details.url)
  end
end

-- Python -> Lua: what the server asks of the editor (seam.py names each call) -------------------

--- What the built-in tools may read (file size cap, workspace roots), before any tool call.
function M.configure_tools(limits)
  require('gemini_companion.builtin.util').configure(limits)
end

--- A tools/call (arguments validated, defaults applied): a reply, or {pending = true} when an
--- asynchronous tool answers later through to_host.tool_done, on `channel` (the caller's) if given.
---@return gemini_companion.ToolReply
function M.call_tool(name, args, id, channel)
  local reply =
    require('gemini_companion.review.guard').as_client(require('gemini_companion.tools').call, name, args, id)
  to_host.answer_on(id, reply.pending and type(channel) == 'number' and channel or nil)
  return reply
end

--- The client cancelled call `id`, or it timed out: the tool is told, its answer ignored.
function M.cancel_tool(id, reason)
  to_host.answer_on(id, nil)
  require('gemini_companion.tools').cancel(id, reason)
end

--- A review opens (Gemini's openDiff, Claude's openDiff): show the proposal; the user's decision
--- comes back through to_host.review_decided, on `channel` (the caller's) if given. `expires`
--- (vim.uv.hrtime(), the clock Python's time.monotonic_ns() reads): past it, the caller gave up
--- waiting for this call (Neovim was busy) and answered its agent already, so nothing opens.
--- `carries_reason`: the owner's answer carries a reason the model reads (a hook gate's deny), so
--- a rejection's comments go there; otherwise the review types them into the agent.
---@return gemini_companion.OpenedReview
function M.open_review(path, content, id, client, channel, expires, carries_reason)
  if type(expires) == 'number' and vim.uv.hrtime() > expires then
    return { ok = false, error = 'Neovim was busy for longer than the review could wait; the agent was told' }
  end
  return require('gemini_companion.review').open(
    path,
    content,
    id,
    client,
    type(channel) == 'number' and channel or nil,
    carries_reason == true
  )
end

--- The proposing agent closes its review without a decision (Gemini's closeDiff).
---@return gemini_companion.ClosedReview
function M.close_review(path, id)
  return require('gemini_companion.review').close(path, id)
end

--- The session that proposed `path` ended or withdrew it (`why`): close the view (kept if the
--- user edited it).
function M.release_review(path, why)
  return require('gemini_companion.review').release(path, why ~= vim.NIL and why or nil)
end

--- An agent's turn ended (its turn hook, through :GeminiGate's entries): what did it change
--- without a review?
function M.turn_ended(agent)
  require('gemini_companion.changes.view').turn_ended(agent)
end

--- An agent's IDE tool (its Python package checked the arguments; its profile's `ide_tools`
--- answers): its JSON value (any shape), or an error.
---@return gemini_companion.ClaudeToolError
function M.agent_tool(agent, name, args)
  return require('gemini_companion.review.guard').as_client(
    require(require('gemini_companion.agents').profile(agent).ide_tools).call,
    name,
    args
  )
end

return M
