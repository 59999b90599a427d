-- Built-in tools: the user's nvim-dap debug session, for agents. Registered only when nvim-dap
-- loads. Everything is asynchronous: DAP requests go out with callbacks; waits are timers and
-- listeners, so Neovim never blocks on the adapter. Execution uses the session's own requests
-- with an explicit thread, so no picker ever opens; nvim-dap still moves the user's debug
-- cursor and signs as usual, because it handles the adapter's events itself.
local ok_dap, dap = pcall(require, 'dap')
if not ok_dap then
  return {}
end
local breakpoints = require('dap.breakpoints')
local util = require('gemini_companion.builtin.util')

local KEY = 'gemini_companion'
local WAIT_MS = 10000 -- default wait for a stop
local TOOL_TIMEOUT_MS = 120000 -- the tools' own timeout (waits are capped below it)
local OUTPUT_MAX_ENTRIES = 2000
local OUTPUT_MAX_BYTES = 256 * 1024
local VALUE_MAX = 2000

-- Program output per session, kept here because nvim-dap's REPL buffer is cleared per session.
local outputs = {} ---@type table<integer, {entries: {category: string, text: string}[], bytes: integer}>
local last_output_session = nil
local stops = {} ---@type table<integer, table> last stopped event body per session
local running = {} ---@type table<integer, boolean> sessions we (or the adapter) resumed

dap.listeners.before.event_output[KEY] = function(session, body)
  if not body or type(body.output) ~= 'string' or body.category == 'telemetry' then
    return
  end
  local o = outputs[session.id] or { entries = {}, bytes = 0 }
  outputs[session.id] = o
  last_output_session = session.id
  table.insert(o.entries, { category = body.category or 'console', text = body.output })
  o.bytes = o.bytes + #body.output
  while #o.entries > OUTPUT_MAX_ENTRIES or o.bytes > OUTPUT_MAX_BYTES do
    o.bytes = o.bytes - #table.remove(o.entries, 1).text
  end
end
dap.listeners.before.event_stopped[KEY] = function(session, body)
  stops[session.id] = body
  running[session.id] = nil
end
dap.listeners.before.event_continued[KEY] = function(session)
  running[session.id] = true
  stops[session.id] = nil
end
dap.listeners.on_session[KEY] = function(old, new)
  if new then
    outputs[new.id] = { entries = {}, bytes = 0 }
    last_output_session = new.id
  end
  if old and not new then
    stops[old.id], running[old.id] = nil, nil
  end
end

local function no_session()
  return { active = false, message = 'no active debug session (start one with dap_run)' }
end

local function require_session(done)
  local s = dap.session()
  if not s then
    done(no_session())
    return nil
  end
  return s
end

local function err_text(err)
  if type(err) == 'table' then
    local body = err.body and err.body.error
    if body and body.format then
      return body.format
    end
    return tostring(err.message or vim.inspect(err))
  end
  return tostring(err)
end

local function cap(value)
  if type(value) == 'string' and #value > VALUE_MAX then
    return value:sub(1, VALUE_MAX) .. ('… [%d more bytes]'):format(#value - VALUE_MAX)
  end
  return value
end

--- Lines around `line` of `path` (from its buffer when loaded, else from disk).
local function code_around(path, line, radius)
  if not path or not line then
    return vim.NIL
  end
  local buf = vim.fn.bufnr(path)
  local lines
  if buf > 0 and vim.api.nvim_buf_is_loaded(buf) then
    lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  else
    local ok, read = pcall(util.read_lines, path)
    lines = ok and read or {}
  end
  local out = {}
  for i = math.max(1, line - radius), math.min(#lines, line + radius) do
    table.insert(out, ('%s%4d  %s'):format(i == line and '>' or ' ', i, lines[i]))
  end
  return table.concat(out, '\n')
end

local function frame_info(frame)
  if not frame then
    return vim.NIL
  end
  local source = frame.source or {}
  return {
    id = frame.id,
    ['function'] = frame.name,
    file = source.path or source.name or vim.NIL,
    line = frame.line,
    column = frame.column,
  }
end

--- Where `thread_id` stopped: reason, thread, top frame and code around it.
local function location(session, thread_id, reason, radius, done)
  session:request('stackTrace', { threadId = thread_id, startFrame = 0, levels = 20 }, function(err, resp)
    if err then
      return done({ paused = true, reason = reason, thread_id = thread_id, error = err_text(err) })
    end
    local frames = resp and resp.stackFrames or {}
    local top = nil
    for _, f in ipairs(frames) do
      if f.source and f.source.path then
        top = f
        break
      end
    end
    top = top or frames[1]
    done({
      paused = true,
      reason = reason or vim.NIL,
      thread_id = thread_id,
      frame = frame_info(top),
      code = top and code_around(top.source and top.source.path, top.line, radius) or vim.NIL,
    })
  end)
end

--- Call `done` once `session` stops (with the location), ends, or `timeout_ms` passes.
--- Returns a function that abandons the wait silently.
local function wait_until_paused(session, timeout_ms, radius, done, ctx)
  local key = KEY .. '.wait.' .. tostring(ctx.id)
  local finished = false
  local timer = vim.uv.new_timer()
  local function finish(result)
    if finished then
      return
    end
    finished = true
    timer:stop()
    timer:close()
    dap.listeners.after.event_stopped[key] = nil
    dap.listeners.after.event_terminated[key] = nil
    dap.listeners.after.event_exited[key] = nil
    if result and not ctx.cancelled() then
      done(result)
    end
  end
  local exit_code = nil
  dap.listeners.after.event_exited[key] = function(s, body)
    if s.id == session.id then
      exit_code = body and body.exitCode
    end
  end
  dap.listeners.after.event_stopped[key] = function(s, body)
    if s.id == session.id then
      location(s, body.threadId or s.stopped_thread_id, body.reason, radius, finish)
    end
  end
  dap.listeners.after.event_terminated[key] = function(s)
    if s.id == session.id then
      finish({ paused = false, terminated = true, exit_code = exit_code or vim.NIL })
    end
  end
  ctx.on_cancel(function()
    finish(nil)
  end)
  timer:start(
    math.min(timeout_ms, TOOL_TIMEOUT_MS - 5000),
    0,
    vim.schedule_wrap(function()
      finish({
        paused = false,
        running = true,
        message = ('still running after %d ms (dap_wait_until_paused waits longer; dap_pause stops it)'):format(
          timeout_ms
        ),
      })
    end)
  )
end

--- The thread to act on: the given one, else the stopped one; nil + message if none.
local function pick_thread(session, thread_id)
  if thread_id then
    return thread_id
  end
  if session.stopped_thread_id then
    return session.stopped_thread_id
  end
  for id, t in pairs(session.threads or {}) do
    if t.stopped then
      return id
    end
  end
  return nil
end

local exec_args = {
  thread_id = { type = 'integer', description = 'Thread (default: the stopped thread)' },
  wait_until_paused = { type = 'boolean', description = 'Wait for the next stop and return where', default = true },
  timeout_ms = { type = 'integer', description = 'How long to wait for the stop', default = WAIT_MS },
  context_lines = { type = 'integer', description = 'Lines of code around the stop', default = 3 },
}

--- Send an execution request for thread `tid`. With args.wait_until_paused the answer comes
--- when the program stops again (or ends); else as soon as the adapter took the request.
--- `on_failure` runs when the adapter refuses it.
local function resume(session, command, tid, args, done, ctx, on_failure)
  local abandon = args.wait_until_paused and wait_until_paused(session, args.timeout_ms, args.context_lines, done, ctx)
    or function() end
  running[session.id] = true
  session:request(command, { threadId = tid }, function(err)
    if err then
      running[session.id] = nil
      if on_failure then
        on_failure()
      end
      abandon()
      return done(nil, ('%s failed: %s'):format(command, err_text(err)))
    end
    if not args.wait_until_paused then
      done({ ok = true, running = true, thread_id = tid })
    end
  end)
end

--- An execution request (continue, next, stepIn, stepOut) on a stopped thread, then the wait.
local function exec_tool(name, command, description)
  return {
    name = name,
    description = description,
    args = exec_args,
    timeout_ms = TOOL_TIMEOUT_MS,
    execute = function(args, done, ctx)
      local session = require_session(done)
      if not session then
        return
      end
      local tid = pick_thread(session, args.thread_id)
      if not tid then
        return done({
          ok = false,
          message = 'no stopped thread: the program is running (dap_pause stops it, dap_wait_until_paused waits)',
        })
      end
      resume(session, command, tid, args, done, ctx)
    end,
  }
end

local function bp_buffer(filename)
  local path = vim.fs.normalize(vim.fn.fnamemodify(filename, ':p'))
  util.check_allowed(path)
  -- Loaded, though not shown: a breakpoint in an unloaded buffer lands on line 1.
  return util.load_hidden(path), path
end

local function breakpoint_list()
  local out = {}
  for buf, list in pairs(breakpoints.get()) do
    local path = vim.api.nvim_buf_get_name(buf)
    for _, bp in ipairs(list) do
      local state = bp.state or {}
      table.insert(out, {
        file = path,
        line = bp.line,
        condition = bp.condition or vim.NIL,
        hit_condition = bp.hitCondition or vim.NIL,
        log_message = bp.logMessage or vim.NIL,
        verified = state.verified == nil and vim.NIL or state.verified,
        message = state.message or vim.NIL,
      })
    end
  end
  table.sort(out, function(a, b)
    return a.file < b.file or (a.file == b.file and a.line < b.line)
  end)
  return out
end

--- Send one buffer's breakpoints to every session; `done_fn` after the adapters answered.
local function push_breakpoints(buf, done_fn)
  local sessions = vim.tbl_values(dap.sessions())
  if #sessions == 0 then
    return done_fn()
  end
  local pending = #sessions
  for _, s in ipairs(sessions) do
    s:set_breakpoints({ [buf] = breakpoints.get(buf)[buf] or {} }, function()
      pending = pending - 1
      if pending == 0 then
        done_fn()
      end
    end)
  end
end

local function find_config(name)
  for ft, list in pairs(dap.configurations or {}) do
    for _, c in ipairs(list) do
      if c.name == name then
        return c, ft
      end
    end
  end
end

local function config_names()
  local names = {}
  for _, list in pairs(dap.configurations or {}) do
    for _, c in ipairs(list) do
      table.insert(names, c.name)
    end
  end
  table.sort(names)
  return names
end

local function capability_summary(caps)
  local on = {}
  for k, v in pairs(caps or {}) do
    if v == true then
      table.insert(on, k)
    end
  end
  table.sort(on)
  return on
end

local path_arg = { type = 'string', description = 'File path', required = true }
local line_arg = { type = 'integer', description = 'Line (1-based)', required = true }

return {
  {
    name = 'dap_status',
    description = 'The debug session: active?, adapter, configuration, whether and where it is stopped, '
      .. 'threads, the adapter capabilities that are on.',
    read_only = true,
    args = {},
    execute = function()
      local s = dap.session()
      if not s then
        return vim.tbl_extend('force', no_session(), { configurations = config_names() })
      end
      local stop = stops[s.id]
      local threads = 0
      for _ in pairs(s.threads or {}) do
        threads = threads + 1
      end
      return {
        active = true,
        session_id = s.id,
        sessions = vim.tbl_count(dap.sessions()),
        adapter = s.config and s.config.type or vim.NIL,
        configuration = s.config and s.config.name or vim.NIL,
        stopped = s.stopped_thread_id ~= nil or stop ~= nil,
        stopped_thread_id = s.stopped_thread_id or (stop and stop.threadId) or vim.NIL,
        stop_reason = stop and stop.reason or vim.NIL,
        frame = frame_info(s.current_frame),
        threads = threads,
        capabilities = capability_summary(s.capabilities),
      }
    end,
  },
  {
    name = 'dap_run',
    description = 'Start debugging: a configuration by name (from dap.configurations) or an explicit '
      .. 'configuration table. Waits for the first stop (breakpoint, entry) unless told not to.',
    args = {
      configuration = { type = 'string', description = 'Name of a configuration in dap.configurations' },
      config = { type = 'object', description = 'An explicit nvim-dap configuration (type, request, name, ...)' },
      wait_until_paused = exec_args.wait_until_paused,
      timeout_ms = exec_args.timeout_ms,
      context_lines = exec_args.context_lines,
    },
    timeout_ms = TOOL_TIMEOUT_MS,
    execute = function(args, done, ctx)
      local config = args.config
      if not config then
        if not args.configuration then
          return done(
            nil,
            'give a configuration name or a config table; configurations: ' .. table.concat(config_names(), ', ')
          )
        end
        config = find_config(args.configuration)
        if not config then
          return done(
            nil,
            ('no configuration named %q; configurations: %s'):format(
              args.configuration,
              table.concat(config_names(), ', ')
            )
          )
        end
      end
      if type(config.type) ~= 'string' or dap.adapters[config.type] == nil then
        return done(nil, ('no adapter for type %q (dap.adapters)'):format(tostring(config.type)))
      end
      local key = KEY .. '.run.' .. tostring(ctx.id)
      dap.listeners.on_session[key] = function(_, new)
        if not new then
          return
        end
        dap.listeners.on_session[key] = nil
        if args.wait_until_paused then
          wait_until_paused(new, args.timeout_ms, args.context_lines, function(result)
            result.session_id = new.id
            done(result)
          end, ctx)
        else
          done({ started = true, session_id = new.id })
        end
      end
      local ok, err = pcall(dap.run, config, { new = true })
      if not ok then
        dap.listeners.on_session[key] = nil
        return done(nil, 'could not start: ' .. tostring(err))
      end
      vim.defer_fn(function()
        if dap.listeners.on_session[key] then
          dap.listeners.on_session[key] = nil
          done(nil, 'the debug session did not start within 10 s (check the adapter: :DapShowLog)')
        end
      end, 10000)
    end,
  },
  {
    name = 'dap_terminate',
    description = 'End the debug session and the program.',
    args = {},
    execute = function(_, done)
      local s = require_session(done)
      if not s then
        return
      end
      local via = (s.capabilities or {}).supportsTerminateRequest and 'terminate request'
        or 'disconnect (the adapter has no terminate request)'
      dap.terminate({
        on_done = function()
          done({ terminated = true, via = via })
        end,
      })
    end,
  },
  {
    name = 'dap_disconnect',
    description = 'Disconnect from the debug adapter; the program keeps running unless terminate_debuggee.',
    args = { terminate_debuggee = { type = 'boolean', default = false } },
    execute = function(args, done)
      if not require_session(done) then
        return
      end
      dap.disconnect({ terminateDebuggee = args.terminate_debuggee }, function()
        done({ disconnected = true })
      end)
    end,
  },
  exec_tool('dap_continue', 'continue', 'Resume the program; by default wait until it stops again and say where.'),
  exec_tool('dap_step_over', 'next', 'Step over the current line; returns where it stopped.'),
  exec_tool('dap_step_into', 'stepIn', 'Step into the call on the current line; returns where it stopped.'),
  exec_tool('dap_step_out', 'stepOut', 'Run until the current function returns; returns where it stopped.'),
  {
    name = 'dap_run_to',
    description = 'Run to a file and line (other breakpoints are set aside meanwhile, as in run_to_cursor).',
    args = vim.tbl_extend('force', { filename = path_arg, line = line_arg }, exec_args),
    timeout_ms = TOOL_TIMEOUT_MS,
    execute = function(args, done, ctx)
      local session = require_session(done)
      if not session then
        return
      end
      local tid = pick_thread(session, args.thread_id)
      if not tid then
        return done({ ok = false, message = 'no stopped thread: dap_run_to needs a paused program' })
      end
      local ok, buf = pcall(bp_buffer, args.filename)
      if not ok then
        return done(nil, buf)
      end
      if args.line > vim.api.nvim_buf_line_count(buf) then
        return done(nil, ('line %d is past the end of %s'):format(args.line, vim.api.nvim_buf_get_name(buf)))
      end
      local before = breakpoints.get()
      breakpoints.clear()
      breakpoints.set({}, buf, args.line)
      local temp = breakpoints.get(buf)
      for b in pairs(before) do
        if b ~= buf then
          temp[b] = {}
        end
      end
      local restored = false
      local function restore()
        if restored then
          return
        end
        restored = true
        breakpoints.clear()
        for b, list in pairs(before) do
          for _, bp in ipairs(list) do
            breakpoints.set(
              { condition = bp.condition, hit_condition = bp.hitCondition, log_message = bp.logMessage },
              b,
              bp.line
            )
          end
        end
        local all = breakpoints.get()
        all[buf] = all[buf] or {}
        if not session.closed then
          session:set_breakpoints(all)
        end
      end
      local key = KEY .. '.run_to.' .. tostring(ctx.id)
      dap.listeners.before.event_stopped[key] = function(s)
        if s.id == session.id then
          restore()
          return true
        end
      end
      dap.listeners.before.event_terminated[key] = function(s)
        if s.id == session.id then
          restore()
          return true
        end
      end
      ctx.on_cancel(restore)
      session:set_breakpoints(temp, function()
        resume(session, 'continue', tid, args, done, ctx, restore)
      end)
    end,
  },
  {
    name = 'dap_pause',
    description = 'Pause the running program (a thread, default: all / the first one); returns where it stopped.',
    args = exec_args,
    timeout_ms = TOOL_TIMEOUT_MS,
    execute = function(args, done, ctx)
      local session = require_session(done)
      if not session then
        return
      end
      if session.stopped_thread_id and not running[session.id] and not args.thread_id then
        return location(session, session.stopped_thread_id, 'already paused', args.context_lines, done)
      end
      local tid = args.thread_id or next(session.threads or {}) or 1
      local abandon = args.wait_until_paused
          and wait_until_paused(session, args.timeout_ms, args.context_lines, done, ctx)
        or function() end
      session:request('pause', { threadId = tid }, function(err)
        if err then
          abandon()
          return done(nil, 'pause failed: ' .. err_text(err))
        end
        if not args.wait_until_paused then
          done({ ok = true })
        end
      end)
    end,
  },
  {
    name = 'dap_wait_until_paused',
    description = 'Wait until the program stops (breakpoint, step, pause, exception) and say where; '
      .. 'answers at once if it is already stopped.',
    args = {
      timeout_ms = exec_args.timeout_ms,
      context_lines = exec_args.context_lines,
    },
    timeout_ms = TOOL_TIMEOUT_MS,
    execute = function(args, done, ctx)
      local session = require_session(done)
      if not session then
        return
      end
      if session.stopped_thread_id and not running[session.id] then
        local stop = stops[session.id]
        return location(session, session.stopped_thread_id, stop and stop.reason, args.context_lines, done)
      end
      wait_until_paused(session, args.timeout_ms, args.context_lines, done, ctx)
    end,
  },
  {
    name = 'dap_set_breakpoint',
    description = 'Set a breakpoint (optionally conditional, hit-conditional, or a log point) at a file and '
      .. "line; works for files not open in Neovim. Shows in the user's signs.",
    args = {
      filename = path_arg,
      line = line_arg,
      condition = { type = 'string' },
      hit_condition = { type = 'string' },
      log_message = { type = 'string' },
    },
    execute = function(args, done)
      local ok, buf, path = pcall(bp_buffer, args.filename)
      if not ok then
        return done(nil, buf)
      end
      local count = vim.api.nvim_buf_line_count(buf)
      if args.line < 1 or args.line > count then
        return done(nil, ('line %d is outside %s (%d lines)'):format(args.line, path, count))
      end
      local s = dap.session()
      local caps = s and s.capabilities or {}
      local notes = {}
      if s and args.condition and not caps.supportsConditionalBreakpoints then
        table.insert(notes, 'the adapter does not support conditions')
      end
      if s and args.hit_condition and not caps.supportsHitConditionalBreakpoints then
        table.insert(notes, 'the adapter does not support hit conditions')
      end
      if s and args.log_message and not caps.supportsLogPoints then
        table.insert(notes, 'the adapter does not support log points')
      end
      breakpoints.set({
        condition = args.condition,
        hit_condition = args.hit_condition,
        log_message = args.log_message,
        replace = true,
      }, buf, args.line)
      push_breakpoints(buf, function()
        for _, bp in ipairs(breakpoint_list()) do
          if bp.file == path and bp.line == args.line then
            bp.notes = #notes > 0 and notes or vim.NIL
            bp.session = s and 'sent to the adapter' or 'no session yet: sent when one starts'
            return done(bp)
          end
        end
        done({ file = path, line = args.line })
      end)
    end,
  },
  {
    name = 'dap_remove_breakpoint',
    description = 'Remove the breakpoint at a file and line.',
    args = { filename = path_arg, line = line_arg },
    execute = function(args, done)
      local ok, buf, path = pcall(bp_buffer, args.filename)
      if not ok then
        return done(nil, buf)
      end
      local had = false
      for _, bp in ipairs(breakpoints.get(buf)[buf] or {}) do
        had = had or bp.line == args.line
      end
      if not had then
        return done({ removed = false, message = ('no breakpoint at %s:%d'):format(path, args.line) })
      end
      breakpoints.remove(buf, args.line)
      push_breakpoints(buf, function()
        done({ removed = true, file = path, line = args.line })
      end)
    end,
  },
  {
    name = 'dap_clear_breakpoints',
    description = 'Remove every breakpoint.',
    args = {},
    execute = function()
      local n = #breakpoint_list()
      dap.clear_breakpoints()
      return { removed = n }
    end,
  },
  {
    name = 'dap_breakpoints',
    description = 'All breakpoints: file, line, condition, hit condition, log message, and whether the '
      .. 'adapter verified them.',
    read_only = true,
    args = {},
    execute = function()
      local list = breakpoint_list()
      return { count = #list, breakpoints = list }
    end,
  },
  {
    name = 'dap_threads',
    description = 'Threads of the debugged program, and which are stopped.',
    read_only = true,
    args = {},
    execute = function(_, done)
      local s = require_session(done)
      if not s then
        return
      end
      s:request('threads', nil, function(err, resp)
        if err then
          return done(nil, 'threads failed: ' .. err_text(err))
        end
        local out = {}
        for _, t in ipairs(resp and resp.threads or {}) do
          local known = (s.threads or {})[t.id] or {}
          table.insert(out, { id = t.id, name = t.name, stopped = known.stopped == true })
        end
        done({ count = #out, threads = out, stopped_thread_id = s.stopped_thread_id or vim.NIL })
      end)
    end,
  },
  {
    name = 'dap_stacktrace',
    description = 'The call stack of a thread (default: the stopped one), innermost first.',
    read_only = true,
    args = {
      thread_id = exec_args.thread_id,
      levels = { type = 'integer', description = 'How many frames', default = 20 },
    },
    execute = function(args, done)
      local s = require_session(done)
      if not s then
        return
      end
      local tid = pick_thread(s, args.thread_id)
      if not tid then
        return done({ ok = false, message = 'no stopped thread: the program is running (dap_pause first)' })
      end
      s:request('stackTrace', { threadId = tid, startFrame = 0, levels = args.levels }, function(err, resp)
        if err then
          return done(nil, ('stackTrace for thread %d failed: %s'):format(tid, err_text(err)))
        end
        local frames = {}
        for _, f in ipairs(resp and resp.stackFrames or {}) do
          table.insert(frames, frame_info(f))
        end
        done({ thread_id = tid, total = resp and resp.totalFrames or #frames, frames = frames })
      end)
    end,
  },
  {
    name = 'dap_scopes',
    description = 'Scopes (locals, globals, ...) of a frame (default: the current frame), with the '
      .. 'variables_reference to pass to dap_variables.',
    read_only = true,
    args = { frame_id = { type = 'integer', description = 'Frame id from dap_stacktrace' } },
    execute = function(args, done)
      local s = require_session(done)
      if not s then
        return
      end
      local frame_id = args.frame_id or (s.current_frame and s.current_frame.id)
      if not frame_id then
        return done({ ok = false, message = 'no current frame: the program is not stopped' })
      end
      s:request('scopes', { frameId = frame_id }, function(err, resp)
        if err then
          return done(nil, ('scopes for frame %d failed: %s'):format(frame_id, err_text(err)))
        end
        local out = {}
        for _, sc in ipairs(resp and resp.scopes or {}) do
          table.insert(out, {
            name = sc.name,
            variables_reference = sc.variablesReference,
            expensive = sc.expensive or false,
          })
        end
        done({ frame_id = frame_id, scopes = out })
      end)
    end,
  },
  {
    name = 'dap_variables',
    description = 'Variables of a scope or a structured value (by variables_reference). Long values are cut.',
    read_only = true,
    args = {
      variables_reference = { type = 'integer', required = true },
      filter = { type = 'string', enum = { 'indexed', 'named' } },
      start = { type = 'integer', description = 'First index (indexed variables)' },
      count = { type = 'integer', description = 'How many (at most 500)', default = 100 },
    },
    execute = function(args, done)
      local s = require_session(done)
      if not s then
        return
      end
      local req = { variablesReference = args.variables_reference, filter = args.filter, start = args.start }
      if args.filter or args.start then
        req.count = math.min(args.count, 500)
      end
      s:request('variables', req, function(err, resp)
        if err then
          return done(nil, ('variables %d: %s'):format(args.variables_reference, err_text(err)))
        end
        local out = {}
        local all = resp and resp.variables or {}
        for i, v in ipairs(all) do
          if i > math.min(args.count, 500) then
            break
          end
          table.insert(out, {
            name = v.name,
            value = cap(v.value),
            type = v.type or vim.NIL,
            variables_reference = v.variablesReference or 0,
          })
        end
        done({ count = #out, total = #all, truncated = #all > #out, variables = out })
      end)
    end,
  },
  {
    name = 'dap_evaluate',
    description = 'Evaluate an expression in a frame (default: the current frame) of the debugged program.',
    args = {
      expression = { type = 'string', required = true },
      frame_id = { type = 'integer' },
      context = { type = 'string', enum = { 'repl', 'watch', 'hover', 'clipboard' }, default = 'repl' },
    },
    execute = function(args, done)
      local s = require_session(done)
      if not s then
        return
      end
      local caps = s.capabilities or {}
      if args.context == 'clipboard' and not caps.supportsClipboardContext then
        return done({ ok = false, message = 'the adapter does not support the clipboard context' })
      end
      if args.context == 'hover' and not caps.supportsEvaluateForHovers then
        return done({ ok = false, message = 'the adapter does not support the hover context' })
      end
      local frame_id = args.frame_id or (s.current_frame and s.current_frame.id)
      s:request(
        'evaluate',
        { expression = args.expression, frameId = frame_id, context = args.context },
        function(err, resp)
          if err then
            -- An exception in the debuggee is an answer, not a tool failure.
            return done({ ok = false, error = err_text(err), expression = args.expression })
          end
          done({
            ok = true,
            expression = args.expression,
            result = cap(resp.result),
            type = resp.type or vim.NIL,
            variables_reference = resp.variablesReference or 0,
          })
        end
      )
    end,
  },
  {
    name = 'dap_current_location',
    description = 'Where the program is stopped: thread, frame (file, line, function) and code around it.',
    read_only = true,
    args = { context_lines = { type = 'integer', default = 5 } },
    execute = function(args, done)
      local s = require_session(done)
      if not s then
        return
      end
      local tid = pick_thread(s, nil)
      if not tid or running[s.id] then
        return done({ paused = false, running = true, message = 'the program is running' })
      end
      local stop = stops[s.id]
      location(s, tid, stop and stop.reason, args.context_lines, done)
    end,
  },
  {
    name = 'dap_program_output',
    description = 'What the debugged program printed (kept per session, also after it ended).',
    read_only = true,
    args = {
      category = { type = 'string', description = 'stdout, stderr, console, ... (default: all)' },
      lines = { type = 'integer', description = 'The last N lines', default = 100 },
    },
    execute = function(args)
      local s = dap.session()
      local id = s and s.id or last_output_session
      local o = id and outputs[id]
      if not o then
        return { session_id = vim.NIL, text = '', lines = 0 }
      end
      local parts = {}
      for _, e in ipairs(o.entries) do
        if not args.category or e.category == args.category then
          table.insert(parts, e.text)
        end
      end
      local all = vim.split(table.concat(parts), '\n', { plain = true })
      if all[#all] == '' then
        table.remove(all)
      end
      local first = math.max(1, #all - args.lines + 1)
      return {
        session_id = id,
        lines = #all - first + 1,
        total_lines = #all,
        text = table.concat(vim.list_slice(all, first, #all), '\n'),
      }
    end,
  },
}
