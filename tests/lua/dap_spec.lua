-- builtin/dap/*: the helpers of the DAP tools, against the nvim-dap stand-in's `dap` module and
-- fake sessions (no adapter runs here; tests/integration/test_dap.py drives a real session).
local t = ...
vim.opt.runtimepath:prepend(t.root .. '/tests/fixtures/dap_standin')
local dap = require('dap')
local state = require('gemini_companion.builtin.dap.state')
local view = require('gemini_companion.builtin.dap.view')
local wait = require('gemini_companion.builtin.dap.wait')
-- As the server does at start (bridge.configure_tools), before any tool reads a file.
require('gemini_companion.builtin.util').configure({ max_file_bytes = 1024 * 1024, restrict_to_workspace = false })

local EVENTS = { 'event_stopped', 'event_terminated', 'event_exited' }

--- A tool call's ctx, as tools.lua makes it, that the test can cancel.
local function fake_ctx(id)
  local ctx = { id = id, hooks = {}, is_cancelled = false }
  function ctx.cancelled()
    return ctx.is_cancelled
  end
  function ctx.on_cancel(fn)
    table.insert(ctx.hooks, fn)
  end
  function ctx.cancel()
    ctx.is_cancelled = true
    for _, fn in ipairs(ctx.hooks) do
      fn()
    end
  end
  return ctx
end

--- A session whose adapter answers each command from `replies` ({err, resp}), recording requests.
local function fake_session(id, replies)
  local s = { id = id, sent = {}, threads = {} }
  function s:request(command, body, on_result)
    table.insert(self.sent, { command = command, body = body })
    local reply = (replies or {})[command] or {}
    on_result(reply[1], reply[2])
  end
  return s
end

--- The events a wait of `ctx` still listens to.
local function listening(ctx)
  local out = {}
  for _, event in ipairs(EVENTS) do
    if dap.listeners.after[event][state.key('wait', ctx)] then
      table.insert(out, event)
    end
  end
  return out
end

local STACK = {
  nil,
  {
    stackFrames = {
      { id = 9, name = '<frozen>', line = 1, source = { name = 'frozen' } },
      { id = 2, name = 'main', line = 1, column = 1, source = { path = t.root .. '/tests/fixtures/dap/program.py' } },
    },
  },
}

t.test('err_text prefers the adapter text, then a message, then anything readable', function()
  t.eq(
    view.err_text({ message = 'x', body = { error = { format = 'Wrong ID sent from the client: 9' } } }),
    'Wrong ID sent from the client: 9'
  )
  t.eq(view.err_text({ message = 'timeout' }), 'timeout')
  t.eq(view.err_text('plain'), 'plain')
  t.eq(view.err_text({ code = 1 }), '{\n  code = 1\n}')
end)

t.test('cap cuts long values at VALUE_MAX bytes and says how much is left out', function()
  t.eq(view.cap('short'), 'short')
  t.eq(view.cap(42), 42)
  local long = view.cap(('x'):rep(view.VALUE_MAX + 5))
  t.eq(long, ('x'):rep(view.VALUE_MAX) .. '… [5 more bytes]')
end)

t.test('frame_info names the file by path, else by source name', function()
  t.eq(view.frame_info(STACK[2].stackFrames[1]), { id = 9, ['function'] = '<frozen>', file = 'frozen', line = 1 })
  t.eq(view.frame_info({ id = 1, name = 'f', line = 3 }).file, vim.NIL)
  t.eq(view.frame_info(nil), vim.NIL)
end)

t.test('code_around marks the line and reads unsaved edits from the buffer', function()
  local path = vim.fn.tempname() .. '.py'
  vim.fn.writefile({ 'one', 'two', 'three', 'four' }, path)
  t.eq(view.code_around(path, 2, 1), '    1  one\n>   2  two\n    3  three')
  t.eq(view.code_around(path, 4, 3), '    1  one\n    2  two\n    3  three\n>   4  four')
  vim.cmd.edit(path)
  vim.api.nvim_buf_set_lines(0, 1, 2, false, { 'TWO (unsaved)' })
  t.eq(view.code_around(path, 2, 0), '>   2  TWO (unsaved)')
  t.eq(view.code_around(nil, 2, 1), vim.NIL)
end)

t.test('capabilities_on lists only the capabilities that are true, sorted', function()
  t.eq(
    view.capabilities_on({ supportsB = true, supportsA = true, supportsC = false, filters = {} }),
    { 'supportsA', 'supportsB' }
  )
  t.eq(view.capabilities_on(nil), {})
end)

t.test('configurations are found by name across filetypes, and listed sorted', function()
  local configurations = { python = { { name = 'b' }, { name = 'a' } }, lua = { { name = 'c', type = 'nlua' } } }
  local found, ft = view.find_config(configurations, 'c')
  t.eq({ found.type, ft }, { 'nlua', 'lua' })
  t.eq(view.find_config(configurations, 'nope'), nil)
  t.eq(view.config_names(configurations), { 'a', 'b', 'c' })
end)

t.test('pick_thread: the given thread, else the stopped one, else any stopped, else none', function()
  t.eq(state.pick_thread({ stopped_thread_id = 1 }, 5), 5)
  t.eq(state.pick_thread({ stopped_thread_id = 1 }, nil), 1)
  t.eq(state.pick_thread({ threads = { [3] = { stopped = false }, [4] = { stopped = true } } }, nil), 4)
  t.eq(state.pick_thread({ threads = { [3] = { stopped = false } } }, nil), nil)
end)

t.test('with_session answers for the tool when there is no session or no stopped thread', function()
  local session_fn = dap.session
  local current = nil
  dap.session = function()
    return current
  end
  local answers, runs = {}, {}
  local function answer(result)
    table.insert(answers, result)
  end
  local execute = state.with_session(function(s, args, _, _, tid)
    table.insert(runs, { s.id, args.x, tid })
  end, 'the program is running')
  execute({ x = 1 }, answer, fake_ctx(1))
  current = { id = 7, threads = {} }
  execute({ x = 2 }, answer, fake_ctx(2))
  current.stopped_thread_id = 1
  execute({ x = 3 }, answer, fake_ctx(3))
  execute({ x = 4, thread_id = 2 }, answer, fake_ctx(4))
  dap.session = session_fn
  t.eq(answers, {
    { active = false, message = 'no active debug session (start one with dap_run)' },
    { ok = false, message = 'no stopped thread: the program is running' },
  })
  t.eq(runs, { { 7, 3, 1 }, { 7, 4, 2 } })
end)

t.test('until_paused returns a cancel that ends the wait at once, silently', function()
  local ctx, answers = fake_ctx('cancel'), {}
  local cancel = wait.until_paused(fake_session(1), 60000, 3, function(r)
    table.insert(answers, r)
  end, ctx)
  t.eq(listening(ctx), EVENTS)
  t.eq(type(cancel), 'function')
  cancel()
  t.eq(listening(ctx), {})
  cancel() -- twice is harmless
  t.eq(answers, {})
end)

t.test('until_paused answers with where this session stopped, ignoring other sessions', function()
  local ctx, answers = fake_ctx('stop'), {}
  local session = fake_session(1, { stackTrace = STACK })
  wait.until_paused(session, 60000, 0, function(r)
    table.insert(answers, r)
  end, ctx)
  dap.listeners.after.event_stopped[state.key('wait', ctx)](fake_session(2), { threadId = 1, reason = 'step' })
  t.eq(answers, {})
  dap.listeners.after.event_stopped[state.key('wait', ctx)](session, { threadId = 1, reason = 'breakpoint' })
  t.eq(#answers, 1)
  t.eq(
    { answers[1].paused, answers[1].reason, answers[1].frame['function'], answers[1].frame.line },
    { true, 'breakpoint', 'main', 1 }
  )
  t.eq(answers[1].code, '>   1  import sys') -- the first frame with a file, not the frozen one
  t.eq(listening(ctx), {})
end)

t.test('until_paused answers the end of the program with its exit code', function()
  local ctx, answers = fake_ctx('end'), {}
  local session = fake_session(1)
  wait.until_paused(session, 60000, 3, function(r)
    table.insert(answers, r)
  end, ctx)
  dap.listeners.after.event_exited[state.key('wait', ctx)](session, { exitCode = 3 })
  dap.listeners.after.event_terminated[state.key('wait', ctx)](session)
  t.eq(answers, { { paused = false, terminated = true, exit_code = 3 } })
  t.eq(listening(ctx), {})
end)

t.test('until_paused says "still running" when the time is up', function()
  local ctx, answers = fake_ctx('timeout'), {}
  wait.until_paused(fake_session(1), 20, 3, function(r)
    table.insert(answers, r)
  end, ctx)
  t.wait_for(function()
    return #answers > 0
  end, 'the timeout')
  t.eq({ answers[1].running, answers[1].message:match('^still running after 20 ms') ~= nil }, { true, true })
  t.eq(listening(ctx), {})
end)

t.test('a cancelled call ends its wait without answering', function()
  local ctx, answers = fake_ctx('cancelled'), {}
  wait.until_paused(fake_session(1), 60000, 3, function(r)
    table.insert(answers, r)
  end, ctx)
  ctx.cancel()
  t.eq(listening(ctx), {})
  t.eq(answers, {})
end)

t.test('a request the adapter refuses fails the call and leaves no wait behind', function()
  local ctx, results, failures = fake_ctx('refused'), {}, 0
  local refusal = { body = { error = { format = 'Wrong ID sent from the client: 999' } } }
  local session = fake_session(1, { next = { refusal } })
  local args = { wait_until_paused = true, timeout_ms = 60000, context_lines = 3 }
  wait.resume(
    session,
    'next',
    999,
    args,
    function(result, err)
      table.insert(results, { result, err })
    end,
    ctx,
    function()
      failures = failures + 1
    end
  )
  t.eq(results, { { nil, 'next failed: Wrong ID sent from the client: 999' } })
  t.eq({ failures, state.running[1] }, { 1, nil })
  t.eq(listening(ctx), {})
end)

t.test('without waiting, an accepted request answers at once', function()
  local results = {}
  local session = fake_session(1, { continue = { nil, {} } })
  wait.resume(session, 'continue', 1, { wait_until_paused = false }, function(result)
    table.insert(results, result)
  end, fake_ctx('nowait'))
  t.eq(results, { { ok = true, running = true, thread_id = 1 } })
  t.eq(state.running[1], true)
end)

t.test('dap_run stops listening for its session when the call is cancelled', function()
  local control = require('gemini_companion.builtin.dap.control')
  local run_tool = vim.iter(control):find(function(tool)
    return tool.name == 'dap_run'
  end)
  local run_fn, adapters = dap.run, dap.adapters
  dap.run = function() end -- the adapter never starts
  dap.adapters = { fake = {} }
  local ctx, answers = fake_ctx('run'), {}
  run_tool.execute({ config = { type = 'fake', name = 'x' }, wait_until_paused = true }, function(...)
    table.insert(answers, { ... })
  end, ctx)
  local listening_for_session = dap.listeners.on_session[state.key('run', ctx)] ~= nil
  ctx.cancel()
  dap.run, dap.adapters = run_fn, adapters
  t.eq({ listening_for_session, dap.listeners.on_session[state.key('run', ctx)], answers }, { true, nil, {} })
end)
