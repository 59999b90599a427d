-- What context.lua sends Python for Gemini CLI's ide/contextUpdate (was part of
-- tests/integration/test_gemini_ide.py): the recent files in MRU order (only real files on disk),
-- the cursor, Visual selections of every kind, a quick one not lost to the debounce, one kept
-- while the user is in the terminal, and the 16k cut. The host is stubbed (host_stub.lua): what
-- reaches Python is the `context` event; agents/gemini/context.py's own shaping of it is
-- tests/unit/test_context.py's.
local t = ...
local H = require('host_stub')
local context = function()
  return require('gemini_companion.context')
end

local function names(files)
  return vim.tbl_map(function(f)
    return vim.fn.fnamemodify(f.path, ':t')
  end, files)
end

--- The files of the first `context` event sent from now on that `predicate` holds for.
local function wait_context(predicate, what)
  local seen = #H.contexts()
  local found
  t.wait_for(function()
    for _, files in ipairs(vim.list_slice(H.contexts(), seen + 1)) do
      if predicate(files) then
        found = files
        return true
      end
    end
    return false
  end, what)
  return found
end

--- The files of the first `context` event sent so far (from the start) that `predicate` holds for.
local function wait_any_context(predicate, what)
  local found
  t.wait_for(function()
    for _, files in ipairs(H.contexts()) do
      if predicate(files) then
        found = files
        return true
      end
    end
    return false
  end, what)
  return found
end

local function selected(files)
  return files[1] and files[1].selectedText
end

H.test(t, 'the recent files are listed with the cursor, in MRU order, help and terminals left out', function(ws)
  H.project(ws)
  vim.cmd('edit a.py')
  vim.cmd('edit b.py')
  vim.cmd('help') -- help buffers are not files
  vim.cmd('close')
  vim.cmd('terminal') -- neither are terminals
  vim.cmd('buffer b.py')
  vim.api.nvim_win_set_cursor(0, { 2, 4 })
  local files = wait_any_context(function(f)
    return f[1] and vim.deep_equal(f[1].cursor, { line = 2, character = 5 })
  end, 'cursor in b.py')
  t.eq(names(files), { 'b.py', 'a.py' })
  t.eq(files[1].isActive, true)
  t.eq(files[2].isActive == nil and files[2].cursor == nil, true) -- the CLI sets False itself
  for _, f in ipairs(files) do
    t.eq(f.timestamp % 1, 0) -- whole milliseconds
    t.eq(f.timestamp > 1.7e12, true)
    t.eq(vim.startswith(f.path, '/'), true) -- absolute
  end

  vim.cmd('buffer a.py')
  vim.api.nvim_win_set_cursor(0, { 7, 0 })
  files = wait_any_context(function(f)
    return f[1] and names(f)[1] == 'a.py' and vim.deep_equal(f[1].cursor, { line = 7, character = 1 })
  end, 'a.py active')
  t.eq(names(files), { 'a.py', 'b.py' })

  vim.cmd('bwipeout! b.py')
  wait_any_context(function(f)
    return vim.deep_equal(names(f), { 'a.py' })
  end, 'b.py closed')
end)

H.test(t, 'Visual line, block and characterwise selections are sent', function(ws)
  H.project(ws)
  vim.cmd('edit a.py')
  H.type('3GVj') -- Visual-line, left open
  local files = wait_context(function(f)
    return selected(f) == 'line 3\nline 4'
  end, 'line selection')
  t.eq(files[1].cursor, { line = 4, character = 1 })
  H.type('<Esc>')
  -- The selection is dropped after the demotion delay while the user stays in the file.
  wait_context(function(f)
    return f[1] and f[1].selectedText == nil
  end, 'selection dropped')

  H.type('5G0<C-v>jl') -- Visual-block
  wait_context(function(f)
    return selected(f) == 'li\nli'
  end, 'block selection')
  H.type('<Esc>')
  H.type('1G0vll') -- characterwise
  wait_context(function(f)
    return selected(f) == 'lin'
  end, 'char selection')
  H.type('<Esc>')
end)

H.test(t, 'a quick selection is not lost to the debounce', function(ws)
  H.project(ws)
  vim.cmd('edit a.py')
  wait_any_context(function(f)
    return f[1] and names(f)[1] == 'a.py'
  end, 'a.py')
  H.type('9GVy') -- select a line and yank it at once: Visual mode lasts ~no time
  wait_context(function(f)
    return selected(f) == 'line 9'
  end, 'quick selection')
end)

H.test(t, 'a selection survives switching to the terminal', function(ws)
  H.project(ws)
  vim.cmd('edit a.py')
  vim.cmd('botright split | terminal')
  vim.cmd('wincmd p')
  H.type('2GVj')
  wait_context(function(f)
    return selected(f) == 'line 2\nline 3'
  end, 'selection')
  H.type('<Esc><C-w>j') -- leave Visual mode and go to the terminal at once
  t.eq(vim.bo.buftype, 'terminal')
  local seen = #H.contexts()
  vim.cmd('startinsert') -- activity in the terminal does not erase it
  -- Proves nothing happened within a window: past the demotion delay and the debounce, typing
  -- in the terminal sent no cleared selection.
  local settings = require('gemini_companion.state').settings.context
  vim.wait((settings.selection_demotion_ms + settings.debounce_ms) * 4)
  for _, files in ipairs(vim.list_slice(H.contexts(), seen + 1)) do
    t.eq(selected(files), 'line 2\nline 3')
  end
  t.eq(context().snapshot().openFiles[1].selectedText, 'line 2\nline 3')
end)

H.test(t, 'unsaved and scratch buffers are not listed, until written', function(ws)
  H.project(ws)
  vim.cmd('edit a.py')
  vim.cmd('enew') -- unnamed
  vim.cmd('edit not_on_disk_yet.py') -- not a file on disk (yet)
  vim.cmd('new | setlocal buftype=nofile')
  vim.cmd('file scratch.txt')
  t.eq(names(context().snapshot().openFiles), { 'a.py' })
  vim.cmd('wincmd p | write') -- now it exists: it appears
  wait_context(function(f)
    return f[1] and names(f)[1] == 'not_on_disk_yet.py'
  end, 'written file')
end)

H.test(t, 'a selection is cut to 16k characters, multibyte safe', function(ws)
  H.write_file(ws .. '/wide.txt', ('é'):rep(20000) .. '\n')
  vim.cmd('edit wide.txt')
  vim.cmd('normal! 0v$')
  local files = wait_context(function(f)
    return selected(f) ~= nil
  end, 'selection')
  t.eq(files[1].selectedText, ('é'):rep(16384))
  t.eq(context().snapshot().openFiles[1].selectedText, ('é'):rep(16384))
end)
