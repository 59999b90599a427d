-- What we know about nvim-dap's sessions beyond what nvim-dap keeps (program output, the last
-- stop, whether we resumed it), and the one precondition check every session tool goes through.
local dap = require('dap')

local M = {}

local KEY = 'gemini_companion'
local OUTPUT_MAX_ENTRIES = 2000
local OUTPUT_MAX_BYTES = 256 * 1024

-- Program output per session, kept here because nvim-dap's REPL buffer is cleared per session.
M.outputs = {} ---@type table<integer, {entries: {category: string, text: string}[], bytes: integer}>
M.last_output_session = nil ---@type integer|nil
M.stops = {} ---@type table<integer, table> last stopped event body per session
M.running = {} ---@type table<integer, boolean> sessions we (or the adapter) resumed

dap.listeners.before.event_output[KEY] = function(session, body)
  if not body or type(body.output) ~= 'string' or body.category == 'telemetry' then
    return
  end
  local o = M.outputs[session.id] or { entries = {}, bytes = 0 }
  M.outputs[session.id] = o
  M.last_output_session = session.id
  table.insert(o.entries, { category = body.category or 'console', text = body.output })
  o.bytes = o.bytes + #body.output
  while #o.entries > OUTPUT_MAX_ENTRIES or o.bytes > OUTPUT_MAX_BYTES do
    o.bytes = o.bytes - #table.remove(o.entries, 1).text
  end
end
dap.listeners.before.event_stopped[KEY] = function(session, body)
  M.stops[session.id] = body
  M.running[session.id] = nil
end
dap.listeners.before.event_continued[KEY] = function(session)
  M.running[session.id] = true
  M.stops[session.id] = nil
end
dap.listeners.on_session[KEY] = function(old, new)
  if new then
    M.outputs[new.id] = { entries = {}, bytes = 0 }
    M.last_output_session = new.id
  end
  if old and not new then
    M.stops[old.id], M.running[old.id] = nil, nil
  end
end

--- A listener key of ours, unique per tool call: `purpose` and the call's id.
function M.key(purpose, ctx)
  return ('%s.%s.%s'):format(KEY, purpose, tostring(ctx.id))
end

function M.no_session()
  return { active = false, message = 'no active debug session (start one with dap_run)' }
end

--- The thread to act on: the given one, else the stopped one; nil if none.
function M.pick_thread(session, thread_id)
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

--- The preconditions of the session tools, in one place. Wraps `run(session, args, done, ctx,
--- thread_id)` into an asynchronous execute that answers "no active debug session" when there is
--- none; with `stopped_hint`, it also needs a thread to act on (args.thread_id, else the stopped
--- one) and answers "no stopped thread: <stopped_hint>" without one.
---@param run fun(session: table, args: table, done: function, ctx: table, thread_id: integer|nil)
---@param stopped_hint string|nil
function M.with_session(run, stopped_hint)
  return function(args, done, ctx)
    local session = dap.session()
    if not session then
      return done(M.no_session())
    end
    local thread_id = nil
    if stopped_hint then
      thread_id = M.pick_thread(session, args.thread_id)
      if not thread_id then
        return done({ ok = false, message = 'no stopped thread: ' .. stopped_hint })
      end
    end
    return run(session, args, done, ctx, thread_id)
  end
end

--- The last `max_lines` lines the program printed (of `category`, default all) in the current
--- session, else the last one that printed.
function M.output(category, max_lines)
  local session = dap.session()
  local id = session and session.id or M.last_output_session
  local o = id and M.outputs[id]
  if not o then
    return { session_id = vim.NIL, text = '', lines = 0 }
  end
  local parts = {}
  for _, e in ipairs(o.entries) do
    if not category or e.category == category then
      table.insert(parts, e.text)
    end
  end
  local all = vim.split(table.concat(parts), '\n', { plain = true })
  if all[#all] == '' then
    table.remove(all)
  end
  local first = math.max(1, #all - max_lines + 1)
  return {
    session_id = id,
    lines = #all - first + 1,
    total_lines = #all,
    text = table.concat(vim.list_slice(all, first, #all), '\n'),
  }
end

return M
