-- Long work in time slices: a coroutine that yields once its slice has used SLICE_MS, resumed from
-- a timer so that keys typed meanwhile are handled between slices. A large workspace scan or a
-- send of megabytes never holds the editor for longer than one slice.
local M = {}

M.SLICE_MS = 8

local deadline = 0
local steps = setmetatable({}, { __mode = 'k' }) ---@type table<thread, fun(...)>

--- Inside M.run: give the editor its turn once this slice has used its time.
function M.pause()
  if vim.uv.hrtime() > deadline then
    coroutine.yield('slice')
  end
end

--- Inside M.run: start `start(callback)` and wait (the editor runs meanwhile) until it calls back;
--- returns what it was called back with.
function M.await(start)
  local step = steps[coroutine.running()]
  start(function(...)
    local args = { ... }
    vim.schedule(function()
      step(unpack(args))
    end)
  end)
  return coroutine.yield('await')
end

--- Run `fn` (which may call M.pause and M.await) in slices, then `done(ok, result or err)`.
--- Returns whether it finished within the first slice (then `done` ran already).
function M.run(fn, done)
  local co = coroutine.create(fn)
  local function step(...)
    deadline = vim.uv.hrtime() + M.SLICE_MS * 1e6
    local ok, why = coroutine.resume(co, ...)
    if not ok or coroutine.status(co) == 'dead' then
      done(ok, why)
      return true
    elseif why == 'slice' then
      vim.defer_fn(steps[co], 0)
    end
    return false
  end
  steps[co] = step
  return step()
end

return M
