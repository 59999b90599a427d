-- Runs one tests/lua/*_spec.lua file in this Neovim, started by tests/lua/conftest.py as
--   nvim --headless --clean --noplugin -l tests/lua/runner.lua <spec> [--list]
-- A spec gets the helpers below as `...`, declares cases with t.test(name, fn), and each case's
-- result is printed as one JSON line: {name, ok, error}. With --list only the names are printed.
local spec_path, mode = arg[1], arg[2]
local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h')
vim.opt.runtimepath:prepend(root)
-- Shared spec helpers (tests/lua/host_stub.lua: require('host_stub')).
package.path = root .. '/tests/lua/?.lua;' .. package.path

local cases = {}
local t = { root = root }

function t.test(name, fn)
  table.insert(cases, { name = name, fn = fn })
end

function t.eq(actual, expected)
  if not vim.deep_equal(actual, expected) then
    error(('expected %s\n     got %s'):format(vim.inspect(expected), vim.inspect(actual)), 2)
  end
end

--- `fn` must fail with an error whose text contains `text` (plain, not a pattern).
function t.raises(fn, text)
  local ok, err = pcall(fn)
  if ok then
    error(('expected an error containing %q, got none'):format(text), 2)
  end
  if not tostring(err):find(text, 1, true) then
    error(('expected an error containing %q, got %q'):format(text, tostring(err)), 2)
  end
end

--- Let the event loop run until `predicate()` holds (timers, scheduled callbacks); fails after 20 s
--- (a condition that holds costs nothing more; a loaded machine's git and file events take longer).
function t.wait_for(predicate, what)
  if not vim.wait(20000, predicate, 5) then
    error('timed out waiting for ' .. (what or 'a condition'), 2)
  end
end

assert(loadfile(spec_path))(t)
for _, case in ipairs(cases) do
  local result = { name = case.name }
  if mode ~= '--list' then
    local ok, err = xpcall(case.fn, debug.traceback)
    result.ok, result.error = ok, not ok and tostring(err) or nil
  end
  -- On a line of its own: headless Neovim may have written a message ("-- INSERT --") without one.
  io.stdout:write('\n', vim.json.encode(result), '\n')
end
