-- Tools that start, drive and end the debug session: run, terminate, disconnect, continue and
-- the steps, run to a line, pause, wait. Execution uses the session's own requests with an
-- explicit thread, so no picker ever opens; nvim-dap still moves the user's debug cursor and
-- signs as usual, because it handles the adapter's events itself.
local dap = require('dap')
local bps = require('gemini_companion.builtin.dap.breakpoints')
local state = require('gemini_companion.builtin.dap.state')
local view = require('gemini_companion.builtin.dap.view')
local wait = require('gemini_companion.builtin.dap.wait')

local START_MS = 10000 -- how long dap_run waits for nvim-dap to start the session

--- The configuration `args` name or give, or nil and why not.
local function configuration(args)
  local names = table.concat(view.config_names(dap.configurations), ', ')
  local config = args.config
  if not config then
    if not args.configuration then
      return nil, 'give a configuration name or a config table; configurations: ' .. names
    end
    config = view.find_config(dap.configurations, args.configuration)
    if not config then
      return nil, ('no configuration named %q; configurations: %s'):format(args.configuration, names)
    end
  end
  if type(config.type) ~= 'string' or dap.adapters[config.type] == nil then
    return nil, ('no adapter for type %q (dap.adapters)'):format(tostring(config.type))
  end
  return config
end

local function run(args, done, ctx)
  local config, why = configuration(args)
  if not config then
    return done(nil, why)
  end
  local key = state.key('run', ctx)
  local function stop_listening()
    dap.listeners.on_session[key] = nil
  end
  dap.listeners.on_session[key] = function(_, new)
    if not new then
      return
    end
    stop_listening()
    if args.wait_until_paused then
      wait.until_paused(new, args.timeout_ms, args.context_lines, function(result)
        result.session_id = new.id
        done(result)
      end, ctx)
    else
      done({ started = true, session_id = new.id })
    end
  end
  ctx.on_cancel(stop_listening)
  local ok, err = pcall(dap.run, config, { new = true })
  if not ok then
    stop_listening()
    return done(nil, 'could not start: ' .. tostring(err))
  end
  vim.defer_fn(function()
    if dap.listeners.on_session[key] then
      stop_listening()
      done(nil, 'the debug session did not start within 10 s (check the adapter: :DapShowLog)')
    end
  end, START_MS)
end

--- Run thread `tid` of `session` to `args.filename`:`args.line`, the other breakpoints set aside
--- until it stops or ends (or the call is cancelled or refused).
local function run_to(session, args, done, ctx, tid)
  local ok, buf = pcall(bps.buffer, args.filename)
  if not ok then
    return done(nil, buf)
  end
  if args.line > vim.api.nvim_buf_line_count(buf) then
    return done(nil, ('line %d is past the end of %s'):format(args.line, vim.api.nvim_buf_get_name(buf)))
  end
  local temp, restore = bps.only(session, buf, args.line)
  local key = state.key('run_to', ctx)
  local function restore_on(s)
    if s.id == session.id then
      restore()
      return true -- nvim-dap removes a listener that returns true
    end
  end
  dap.listeners.before.event_stopped[key] = restore_on
  dap.listeners.before.event_terminated[key] = restore_on
  ctx.on_cancel(restore)
  session:set_breakpoints(temp, function()
    wait.resume(session, 'continue', tid, args, done, ctx, restore)
  end)
end

local function pause(session, args, done, ctx)
  if session.stopped_thread_id and not state.running[session.id] and not args.thread_id then
    return wait.location(session, session.stopped_thread_id, 'already paused', args.context_lines, done)
  end
  local tid = args.thread_id or next(session.threads or {}) or 1
  wait.request_and_wait(session, 'pause', tid, args, done, ctx, { ok = true })
end

local function wait_until_paused(session, args, done, ctx)
  if session.stopped_thread_id and not state.running[session.id] then
    local stop = state.stops[session.id]
    return wait.location(session, session.stopped_thread_id, stop and stop.reason, args.context_lines, done)
  end
  wait.until_paused(session, args.timeout_ms, args.context_lines, done, ctx)
end

local function status()
  local s = dap.session()
  if not s then
    return vim.tbl_extend('force', state.no_session(), { configurations = view.config_names(dap.configurations) })
  end
  local stop = state.stops[s.id]
  return {
    active = true,
    session_id = s.id,
    sessions = vim.tbl_count(dap.sessions()),
    adapter = s.config and s.config.type or vim.NIL,
    configuration = s.config and s.config.name or vim.NIL,
    stopped = s.stopped_thread_id ~= nil or stop ~= nil,
    stopped_thread_id = s.stopped_thread_id or (stop and stop.threadId) or vim.NIL,
    stop_reason = stop and stop.reason or vim.NIL,
    frame = view.frame_info(s.current_frame),
    threads = vim.tbl_count(s.threads or {}),
    capabilities = view.capabilities_on(s.capabilities),
  }
end

local RESUME_HINT = 'the program is running (dap_pause stops it, dap_wait_until_paused waits)'

--- An execution request (continue, next, stepIn, stepOut) on a stopped thread, then the wait.
local function exec_tool(name, command, description)
  return {
    name = name,
    description = description,
    args = wait.args,
    timeout_ms = wait.TOOL_TIMEOUT_MS,
    execute = state.with_session(function(session, args, done, ctx, tid)
      wait.resume(session, command, tid, args, done, ctx)
    end, RESUME_HINT),
  }
end

return {
  {
    name = 'dap_status',
    description = 'The debug session: active?, adapter, configuration, whether and where it is stopped, '
      .. 'threads, the adapter capabilities that are on.',
    read_only = true,
    args = {},
    execute = status,
  },
  {
    name = 'dap_run',
    description = 'Start debugging: a configuration by name (from dap.configurations) or an explicit '
      .. 'configuration table. Waits for the first stop (breakpoint, entry) unless told not to.',
    args = {
      configuration = { type = 'string', description = 'Name of a configuration in dap.configurations' },
      config = { type = 'object', description = 'An explicit nvim-dap configuration (type, request, name, ...)' },
      wait_until_paused = wait.args.wait_until_paused,
      timeout_ms = wait.args.timeout_ms,
      context_lines = wait.args.context_lines,
    },
    timeout_ms = wait.TOOL_TIMEOUT_MS,
    execute = run,
  },
  {
    name = 'dap_terminate',
    description = 'End the debug session and the program.',
    args = {},
    execute = state.with_session(function(s, _, done)
      local via = (s.capabilities or {}).supportsTerminateRequest and 'terminate request'
        or 'disconnect (the adapter has no terminate request)'
      dap.terminate({
        on_done = function()
          done({ terminated = true, via = via })
        end,
      })
    end),
  },
  {
    name = 'dap_disconnect',
    description = 'Disconnect from the debug adapter; the program keeps running unless terminate_debuggee.',
    args = { terminate_debuggee = { type = 'boolean', default = false } },
    execute = state.with_session(function(_, args, done)
      dap.disconnect({ terminateDebuggee = args.terminate_debuggee }, function()
        done({ disconnected = true })
      end)
    end),
  },
  exec_tool('dap_continue', 'continue', 'Resume the program; by default wait until it stops again and say where.'),
  exec_tool('dap_step_over', 'next', 'Step over the current line; returns where it stopped.'),
  exec_tool('dap_step_into', 'stepIn', 'Step into the call on the current line; returns where it stopped.'),
  exec_tool('dap_step_out', 'stepOut', 'Run until the current function returns; returns where it stopped.'),
  {
    name = 'dap_run_to',
    description = 'Run to a file and line (other breakpoints are set aside meanwhile, as in run_to_cursor).',
    args = vim.tbl_extend('force', { filename = bps.path_arg, line = bps.line_arg }, wait.args),
    timeout_ms = wait.TOOL_TIMEOUT_MS,
    execute = state.with_session(run_to, 'dap_run_to needs a paused program'),
  },
  {
    name = 'dap_pause',
    description = 'Pause the running program (a thread, default: all / the first one); returns where it stopped.',
    args = wait.args,
    timeout_ms = wait.TOOL_TIMEOUT_MS,
    execute = state.with_session(pause),
  },
  {
    name = 'dap_wait_until_paused',
    description = 'Wait until the program stops (breakpoint, step, pause, exception) and say where; '
      .. 'answers at once if it is already stopped.',
    args = { timeout_ms = wait.args.timeout_ms, context_lines = wait.args.context_lines },
    timeout_ms = wait.TOOL_TIMEOUT_MS,
    execute = state.with_session(wait_until_paused),
  },
}
