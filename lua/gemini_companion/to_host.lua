-- The seam's other half, Lua -> Python: the host's channel, every event sent on it (seam.py's
-- `Event` models; `type` picks the model), and the calls (seam.COMMANDS) that start the host on
-- first use. Features send here; Python's calls into Lua arrive in bridge.lua, which is the only
-- module that requires the features, so no feature requires the seam's entry points (no cycle).
local host = require('gemini_companion.host')
local notify = require('gemini_companion.notify')
local state = require('gemini_companion.state')

local M = {}

function M.host_alive()
  if not state.channel then
    return false
  end
  local ok, info = pcall(vim.api.nvim_get_chan_info, state.channel)
  return ok and info ~= nil and next(info) ~= nil
end

--- Every event goes out here: seam.py's `Event` models say what Python accepts. `channel`: the
--- one to answer on instead of the host's (it falls back to the host's if that one is gone).
local function send(event, channel)
  if vim.in_fast_event() then -- a libuv callback (an async tool's `done`): the API waits
    return vim.schedule(function()
      send(event, channel)
    end)
  end
  if channel and pcall(vim.rpcnotify, channel, 'gemini_companion_event', event) then
    return
  end
  if M.host_alive() then
    pcall(vim.rpcnotify, state.channel, 'gemini_companion_event', event)
  end
end

local queued = {} ---@type table[] calls made while the host was being prepared

local function dispatch(args)
  local ok, err = pcall(vim.rpcnotify, host.process.channel, host.process.method, args)
  if not ok then
    notify.say('could not reach the Python host: ' .. tostring(err), 'error')
  end
  return ok
end

--- The host is ready (host.process is set): send what was queued.
local function send_queued()
  local calls = queued
  queued = {}
  for _, args in ipairs(calls) do
    dispatch(args)
  end
end

--- The Python side cannot run (host.problem says why): drop what was queued.
local function host_failed(problem)
  state.server = { state = problem.state, error = problem.error }
  state.start_pending = false
  queued = {}
end

local STARTING = { start = true, restart = true, boot = true }

--- Ask the Python side to do something; starts the host on first use (and again if it died).
function M.call(action, ...)
  local args = { action, ... }
  if state.channel and not M.host_alive() then
    if not STARTING[action] then
      notify.say('the Python host has exited; :GeminiRestart starts a new one', 'error')
      return false
    end
    -- Forget the dead host at once, so a second :GeminiStart cannot start a second one.
    state.channel = nil
    host.forget_dead_host()
    state.server = { state = 'stopped' }
  end
  state.booted = state.booted or action == 'boot'
  state.start_pending = state.start_pending or (STARTING[action] and state.server.state ~= 'running') or false
  if host.process then
    return dispatch(args)
  end
  if host.problem and not STARTING[action] then
    notify.say(host.problem.headline, 'error')
    return false
  end
  if action ~= 'boot' then
    host.tell_problems_again() -- asked for: say it again
  end
  table.insert(queued, args)
  if not host.preparing() then
    host.prepare(send_queued, host_failed)
  end
  return host.problem == nil
end

local reply_to = {} ---@type table<integer, integer> pending call id -> the channel that called

--- An asynchronous tool will answer call `id` later: on `channel` (the caller's), if given.
function M.answer_on(id, channel)
  -- Always (re)set: ids start again at 1 with each server, an old entry must not linger.
  reply_to[id] = channel
end

-- Lua -> Python: events (seam.py's Event models; `type` picks the model) ---------------------------

--- The global working directory changed.
function M.dirchanged(cwd)
  send({ type = 'dirchanged', cwd = cwd })
end

--- The tool registry changed: all specs (tools.specs()).
function M.send_tools(specs)
  send({ type = 'tools', tools = specs })
end

--- The editor context changed (context.snapshot()).
function M.send_context(ctx)
  send({ type = 'context', context = ctx })
end

--- The user decided a proposal: 'accepted' (with the text written) or 'rejected'.
--- `channel`: the one the review was opened on (nil: the host's).
function M.review_decided(action, path, id, content, comments, channel)
  send({ type = 'review', action = action, path = path, id = id, content = content, comments = comments }, channel)
end

--- An asynchronous tool answered call `id` (M.call_tool returned {pending = true}): on the
--- channel the call came on, so request and answer travel the same road.
function M.tool_done(id, reply)
  local channel = reply_to[id]
  reply_to[id] = nil
  send({ type = 'tool_done', id = id, reply = reply }, channel)
end

--- Put `@path#Lx-y` into every connected Claude Code prompt (lines 0-based, or nil).
function M.at_mentioned(path, line_start, line_end)
  send({ type = 'at_mentioned', path = path, line_start = line_start, line_end = line_end })
end

--- An agent is being started beside Neovim: it connects in a moment, so the host loads what
--- serves clients now (the MCP SDK; ~0.7 s on 2 cores) rather than while the agent waits.
function M.agent_starting()
  send({ type = 'agent_starting' })
end

--- VimLeavePre: ask the host to stop (it takes at most ~0.5 s), so quitting is never held up.
function M.shutdown_host()
  if M.host_alive() then
    pcall(vim.rpcrequest, state.channel, 'gemini_companion_shutdown')
  end
end

return M
