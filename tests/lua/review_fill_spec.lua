-- review/fill.lua: a big review's texts cut into lines in slices give exactly the lines, line ends
-- and compared text that text/lines.lua's `split` and text/hunks.lua's `text` give at once.
local t = ...
local fill = require('gemini_companion.review.fill')
local hunks = require('gemini_companion.text.hunks')
local lines_of = require('gemini_companion.text.lines')

local TEXTS = {
  '',
  '\n',
  '\n\n',
  'a',
  'a\n',
  'a\nb',
  'a\nb\n',
  'a\n\n',
  '\r',
  '\r\n',
  'a\r\nb\r\n',
  'a\r\nb',
  'a\r\nb\r',
  'a\r\nb\n',
  '\na\r\n',
  'a\rb\n',
  'x\r\n\r\n',
}

-- What put() does with a chunk: Vim splits it at its separator, keeping empty lines.
local function sliced_by_cut(text, dos, max, bytes)
  local lines, at = {}, 1
  repeat
    local chunk, n
    chunk, n, at = fill.cut(text, at, max, bytes, dos)
    local part = vim.split(chunk, dos and '\r\n' or '\n', { plain = true })
    assert(#part == n, ('cut said %d lines, gave %d'):format(n, #part))
    vim.list_extend(lines, part)
  until not at
  return lines
end

t.test('cut, shape and compare_text agree with lines.split and hunks.text', function()
  for _, text in ipairs(TEXTS) do
    local lines, eol, dos = lines_of.split(text)
    local f_eol, f_dos = fill.shape(text)
    t.eq({ f_eol, f_dos }, { eol, dos }, vim.inspect(text))
    t.eq(fill.compare_text(text, f_eol, f_dos), hunks.text(lines), vim.inspect(text))
    for _, max in ipairs({ 1, 2, 1000 }) do
      for _, bytes in ipairs({ 1, 2, 3, 1000 }) do
        local how = (' cut in chunks of %d lines, %d bytes'):format(max, bytes)
        t.eq(sliced_by_cut(text, f_dos, max, bytes), lines, vim.inspect(text) .. how)
      end
    end
  end
end)

--- fill.run to its end, `max` lines a slice (fill.CHUNK_LINES's own by default).
local function run_all(jobs, max)
  local old, done = fill.CHUNK_LINES, false
  fill.CHUNK_LINES = max or old
  fill.run(jobs, function()
    return true
  end, function()
    done = true
  end)
  t.wait_for(function()
    return done
  end)
  fill.CHUNK_LINES = old
end

t.test('run fills each buffer in slices and stops when the review is gone', function()
  local a, b = vim.api.nvim_create_buf(false, true), vim.api.nvim_create_buf(false, true)
  vim.bo[a].modifiable, vim.bo[b].modifiable = false, false
  local text = {}
  for i = 1, 5000 do
    text[i] = 'line ' .. i
  end
  local big = table.concat(text, '\n') .. '\n'
  run_all({ { buf = a, text = big, dos = false }, { buf = b, text = 'x\r\ny\r\n', dos = true } }, 7)
  t.eq(vim.api.nvim_buf_get_lines(a, 0, -1, false), text)
  t.eq(vim.api.nvim_buf_get_lines(b, 0, -1, false), { 'x', 'y' })
  t.eq(vim.bo[a].modifiable, false)
  -- A NUL is carried by Lua's strings, not Vim's: such a text is cut by Lua, read back by Lua.
  local nul = vim.api.nvim_create_buf(false, true)
  run_all({ { buf = nul, text = 'a\0b\n\n\0\nlast', dos = false } })
  t.eq(vim.api.nvim_buf_get_lines(nul, 0, -1, false), { 'a\0b', '', '\0', 'last' })
  local old, old_bytes = fill.CHUNK_LINES, fill.CHUNK_BYTES
  -- Chunks of whole lines by count and by size (100 bytes: 10-11 of these lines), and a NUL.
  local cases = { { a, big, old }, { a, big, old, 100 }, { nul, 'a\0b\n\n\0\nlast\n', 2 } }
  for _, case in ipairs(cases) do
    local read
    fill.CHUNK_LINES, fill.CHUNK_BYTES = case[3], case[4] or old_bytes
    fill.read(case[1], function()
      return true
    end, function(got)
      read = got
    end, '\n', true)
    t.wait_for(function()
      return read
    end)
    fill.CHUNK_LINES, fill.CHUNK_BYTES = old, old_bytes
    t.eq(read, case[2])
  end
  local c = vim.api.nvim_create_buf(false, true)
  local stopped = false
  fill.run({ { buf = c, text = big, dos = false } }, function()
    return false
  end, function()
    stopped = true
  end)
  vim.wait(50)
  t.eq({ stopped, vim.api.nvim_buf_line_count(c) }, { false, 1 })
end)

t.test('diff finds the hunks hunks.compute finds, with the removed lines, off the main loop', function()
  local old, new = {}, {}
  for i = 1, 3000 do
    old[i] = 'old ' .. i
    new[i] = (i % 500 == 0) and ('new ' .. i) or old[i]
  end
  for i = 3001, 3300 do
    old[i] = 'gone ' .. i -- with line 3000 one hunk of 301 lines: the first REMOVED_SHOWN of them are kept
  end
  local old_text, new_text = hunks.text(old), hunks.text(new)
  local function diff(pack_hunks)
    local got, default = nil, fill.PACK_HUNKS
    fill.PACK_HUNKS = pack_hunks or default
    fill.diff(old_text, new_text, function(hs, removed)
      got = { {}, {}, hs }
      for i = 1, hunks.count(hs) do -- each hunk as hunks.compute's, and what it removed
        got[1][i], got[2][i] = hs[i], removed(i)
      end
    end)
    fill.PACK_HUNKS = default
    t.wait_for(function()
      return got
    end)
    return got
  end
  local got = diff()
  t.eq(got[1], hunks.compute(old_text, new_text))
  t.eq(hunks.count(got[3]), #got[1])
  t.eq({ hunks.counts(got[3]) }, { hunks.counts(got[1]) })
  t.eq({ diff(2)[1], diff(2)[2] }, { got[1], got[2] }) -- handed back 2 hunks a pack: the same
  t.eq({ diff(1000)[1], diff(1000)[2] }, { got[1], got[2] })
  t.eq(got[2][1], { { 'old 500' }, 0 })
  local last = got[2][#got[2]]
  t.eq({ #last[1], last[1][1], last[2] }, { fill.REMOVED_SHOWN, 'old 3000', 301 - fill.REMOVED_SHOWN })
end)

t.test("run fills a buffer with exactly lines_of.split's lines, for every shape of text", function()
  for _, text in ipairs(vim.list_extend(vim.deepcopy(TEXTS), { 'a\0\r\nb\0\r\n', '\0' })) do
    local lines, _, dos = lines_of.split(text)
    for _, max in ipairs({ 1, 1000 }) do
      local buf = vim.api.nvim_create_buf(false, true)
      run_all({ { buf = buf, text = text, dos = dos } }, max)
      t.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), lines, vim.inspect(text) .. ' in slices of ' .. max)
    end
  end
end)

t.test('diff says so when comparing fails, and hands back no hunks', function()
  local got
  fill.diff(nil, 'a\n', function(hs)
    got = { hs }
  end)
  t.wait_for(function()
    return got
  end)
  t.eq(got[1], nil)
  t.wait_for(function()
    return vim.fn.execute('messages'):find('could not compare the proposal', 1, true) ~= nil
  end)
end)

t.test('collect gives back a dropped big text, what timers held, and the buffer that joined it', function()
  collectgarbage('collect')
  local before = collectgarbage('count')
  do
    local text = ('x'):rep(16 * 1024 * 1024)
    local joined = table.concat({ text, text }) -- LuaJIT keeps its 32 MB join buffer, halved per collection
    vim.defer_fn(function()
      return #text + #joined -- a timer's callback holds both
    end, 0)
  end
  vim.wait(20)
  fill.collect()
  t.wait_for(function()
    return collectgarbage('count') < before + 4096
  end)
end)

t.test('tidy collects once Lua memory grew by TIDY_KB since it last did, not before', function()
  collectgarbage('stop') -- only tidy collects here
  fill.tidy()
  collectgarbage('collect')
  fill.tidy() -- its mark: memory as it is now
  local base = collectgarbage('count')
  local function garbage(kb)
    local junk = {}
    for i = 1, kb * 16 do -- tables of a few dozen bytes each
      junk[i] = { i }
    end
    return #junk
  end
  garbage(fill.TIDY_KB / 4)
  local small = collectgarbage('count')
  fill.tidy()
  t.eq(collectgarbage('count'), small) -- under TIDY_KB grown: nothing collected
  garbage(fill.TIDY_KB * 2)
  t.eq(collectgarbage('count') > base + fill.TIDY_KB, true)
  fill.tidy()
  local after = collectgarbage('count')
  collectgarbage('restart')
  t.eq(after < base + 64, true)
end)
