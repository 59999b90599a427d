-- Tools that look at the paused program: threads, stack, scopes, variables, expressions, where it
-- stopped, what it printed. They read; only dap_evaluate can run code in the program.
local state = require('gemini_companion.builtin.dap.state')
local view = require('gemini_companion.builtin.dap.view')
local wait = require('gemini_companion.builtin.dap.wait')

local VARIABLES_MAX = 500 -- variables per call

local function threads(s, _, done)
  s:request('threads', nil, function(err, resp)
    if err then
      return done(nil, 'threads failed: ' .. view.err_text(err))
    end
    local out = {}
    for _, t in ipairs(resp and resp.threads or {}) do
      local known = (s.threads or {})[t.id] or {}
      table.insert(out, { id = t.id, name = t.name, stopped = known.stopped == true })
    end
    done({ count = #out, threads = out, stopped_thread_id = s.stopped_thread_id or vim.NIL })
  end)
end

local function stacktrace(s, args, done, _, tid)
  s:request('stackTrace', { threadId = tid, startFrame = 0, levels = args.levels }, function(err, resp)
    if err then
      return done(nil, ('stackTrace for thread %d failed: %s'):format(tid, view.err_text(err)))
    end
    local frames = {}
    for _, f in ipairs(resp and resp.stackFrames or {}) do
      table.insert(frames, view.frame_info(f))
    end
    done({ thread_id = tid, total = resp and resp.totalFrames or #frames, frames = frames })
  end)
end

local function scopes(s, args, done)
  local frame_id = args.frame_id or (s.current_frame and s.current_frame.id)
  if not frame_id then
    return done({ ok = false, message = 'no current frame: the program is not stopped' })
  end
  s:request('scopes', { frameId = frame_id }, function(err, resp)
    if err then
      return done(nil, ('scopes for frame %d failed: %s'):format(frame_id, view.err_text(err)))
    end
    local out = {}
    for _, sc in ipairs(resp and resp.scopes or {}) do
      table.insert(
        out,
        { name = sc.name, variables_reference = sc.variablesReference, expensive = sc.expensive or false }
      )
    end
    done({ frame_id = frame_id, scopes = out })
  end)
end

local function variables(s, args, done)
  local max = math.min(args.count, VARIABLES_MAX)
  local req = { variablesReference = args.variables_reference, filter = args.filter, start = args.start }
  if args.filter or args.start then
    req.count = max
  end
  s:request('variables', req, function(err, resp)
    if err then
      return done(nil, ('variables %d: %s'):format(args.variables_reference, view.err_text(err)))
    end
    local out = {}
    local all = resp and resp.variables or {}
    for i = 1, math.min(#all, max) do
      local v = all[i]
      table.insert(out, {
        name = v.name,
        value = view.cap(v.value),
        type = v.type or vim.NIL,
        variables_reference = v.variablesReference or 0,
      })
    end
    done({ count = #out, total = #all, truncated = #all > #out, variables = out })
  end)
end

local function evaluate(s, args, done)
  local caps = s.capabilities or {}
  if args.context == 'clipboard' and not caps.supportsClipboardContext then
    return done({ ok = false, message = 'the adapter does not support the clipboard context' })
  end
  if args.context == 'hover' and not caps.supportsEvaluateForHovers then
    return done({ ok = false, message = 'the adapter does not support the hover context' })
  end
  local frame_id = args.frame_id or (s.current_frame and s.current_frame.id)
  local req = { expression = args.expression, frameId = frame_id, context = args.context }
  s:request('evaluate', req, function(err, resp)
    if err then
      -- An exception in the debuggee is an answer, not a tool failure.
      return done({ ok = false, error = view.err_text(err), expression = args.expression })
    end
    done({
      ok = true,
      expression = args.expression,
      result = view.cap(resp.result),
      type = resp.type or vim.NIL,
      variables_reference = resp.variablesReference or 0,
    })
  end)
end

local function current_location(s, args, done)
  local tid = state.pick_thread(s, nil)
  if not tid or state.running[s.id] then
    return done({ paused = false, running = true, message = 'the program is running' })
  end
  local stop = state.stops[s.id]
  wait.location(s, tid, stop and stop.reason, args.context_lines, done)
end

return {
  {
    name = 'dap_threads',
    description = 'Threads of the debugged program, and which are stopped.',
    read_only = true,
    args = {},
    execute = state.with_session(threads),
  },
  {
    name = 'dap_stacktrace',
    description = 'The call stack of a thread (default: the stopped one), innermost first.',
    read_only = true,
    args = {
      thread_id = wait.args.thread_id,
      levels = { type = 'integer', description = 'How many frames', default = 20 },
    },
    execute = state.with_session(stacktrace, 'the program is running (dap_pause first)'),
  },
  {
    name = 'dap_scopes',
    description = 'Scopes (locals, globals, ...) of a frame (default: the current frame), with the '
      .. 'variables_reference to pass to dap_variables.',
    read_only = true,
    args = { frame_id = { type = 'integer', description = 'Frame id from dap_stacktrace' } },
    execute = state.with_session(scopes),
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
    execute = state.with_session(variables),
  },
  {
    name = 'dap_evaluate',
    description = 'Evaluate an expression in a frame (default: the current frame) of the debugged program.',
    args = {
      expression = { type = 'string', required = true },
      frame_id = { type = 'integer' },
      context = { type = 'string', enum = { 'repl', 'watch', 'hover', 'clipboard' }, default = 'repl' },
    },
    execute = state.with_session(evaluate),
  },
  {
    name = 'dap_current_location',
    description = 'Where the program is stopped: thread, frame (file, line, function) and code around it.',
    read_only = true,
    args = { context_lines = { type = 'integer', default = 5 } },
    execute = state.with_session(current_location),
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
      return state.output(args.category, args.lines)
    end,
  },
}
