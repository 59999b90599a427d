-- Waiting for the debugged program to stop, and the requests that resume or pause it. A wait is
-- listeners plus a timer, never a loop, so Neovim never blocks on the adapter; every wait returns
-- the function that cancels it, so nothing of it outlives the tool call.
local dap = require('dap')
local state = require('gemini_companion.builtin.dap.state')
local view = require('gemini_companion.builtin.dap.view')

local M = {}

M.WAIT_MS = 10000 -- default wait for a stop
M.TOOL_TIMEOUT_MS = 120000 -- the tools' own timeout (waits are capped below it)

--- The arguments of every tool that resumes the program and may wait for the next stop.
M.args = {
  thread_id = { type = 'integer', description = 'Thread (default: the stopped thread)' },
  wait_until_paused = { type = 'boolean', description = 'Wait for the next stop and return where', default = true },
  timeout_ms = { type = 'integer', description = 'How long to wait for the stop', default = M.WAIT_MS },
  context_lines = { type = 'integer', description = 'Lines of code around the stop', default = 3 },
}

--- Where `thread_id` stopped: reason, thread, top frame (the first with a file) and code around it.
function M.location(session, thread_id, reason, radius, done)
  session:request('stackTrace', { threadId = thread_id, startFrame = 0, levels = 20 }, function(err, resp)
    if err then
      return done({ paused = true, reason = reason, thread_id = thread_id, error = view.err_text(err) })
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
      frame = view.frame_info(top),
      code = top and view.code_around(top.source and top.source.path, top.line, radius) or vim.NIL,
    })
  end)
end

--- Call `done` once `session` stops (with the location), ends, or `timeout_ms` passes.
--- Returns a function that abandons the wait at once and silently (listeners and timer gone).
---@return fun()
function M.until_paused(session, timeout_ms, radius, done, ctx)
  local key = state.key('wait', ctx)
  local finished = false
  local timer = assert(vim.uv.new_timer())
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
      M.location(s, body.threadId or s.stopped_thread_id, body.reason, radius, finish)
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
  local message = 'still running after %d ms (dap_wait_until_paused waits longer; dap_pause stops it)'
  timer:start(
    math.min(timeout_ms, M.TOOL_TIMEOUT_MS - 5000),
    0,
    vim.schedule_wrap(function()
      finish({ paused = false, running = true, message = message:format(timeout_ms) })
    end)
  )
  return function()
    finish(nil)
  end
end

--- Send `command` for thread `tid`. With args.wait_until_paused the answer comes when the program
--- stops again (or ends); else `accepted` as soon as the adapter took the request. When the adapter
--- refuses, the wait is cancelled, `on_failure` runs and the tool fails with the adapter's reason.
function M.request_and_wait(session, command, tid, args, done, ctx, accepted, on_failure)
  local cancel_wait = args.wait_until_paused and M.until_paused(session, args.timeout_ms, args.context_lines, done, ctx)
  session:request(command, { threadId = tid }, function(err)
    if err then
      if cancel_wait then
        cancel_wait()
      end
      if on_failure then
        on_failure()
      end
      return done(nil, ('%s failed: %s'):format(command, view.err_text(err)))
    end
    if not args.wait_until_paused then
      done(accepted)
    end
  end)
end

--- An execution request (continue, next, stepIn, stepOut) for thread `tid`, then the wait.
function M.resume(session, command, tid, args, done, ctx, on_failure)
  state.running[session.id] = true
  M.request_and_wait(session, command, tid, args, done, ctx, { ok = true, running = true, thread_id = tid }, function()
    state.running[session.id] = nil
    if on_failure then
      on_failure()
    end
  end)
end

return M
