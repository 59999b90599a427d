-- Big reviews (see review/init.lua) fill their buffers in slices: a few thousand lines at a
-- time, SLICE_MS of work per trip through the event loop, so Neovim keeps answering keys and
-- other clients while a 200 000-line proposal arrives. Texts are cut into lines as they go (no
-- whole-text vim.split), exactly as text/lines.lua's `split` would cut them.
--
-- Past DIFF_MODE_MAX_LINES a review is not put in Neovim's diff mode: Neovim compares the whole
-- buffers in one go as 'diff' is set and again after every change (~140 ms at 200 000 lines,
-- ~830 ms at 1 M, measured). Its hunks are found here instead, off the main loop: the proposal
-- read in slices, vim.diff in a thread of its own (vim.uv.new_thread), again after each change.
local bulk_lines = require('gemini_companion.bulk_lines')
local heap = require('gemini_companion.heap')
local hunks = require('gemini_companion.text.hunks')
local notify = require('gemini_companion.notify')

local M = {}

--- Texts up to this many bytes (both sides together) are shown in one go, as always.
M.SYNC_BYTES = 1024 * 1024
--- Work per slice before the editor gets its turn.
M.SLICE_MS = 8
--- A chunk (the lines moved between a text and a buffer in one call) ends at the line that
--- reaches CHUNK_BYTES, or at CHUNK_LINES lines if that comes first. At least 128 KiB because
--- LuaJIT maps a block that big on its own and unmaps it when freed: smaller ones are carved from
--- its 128 KiB segments, and a 22 MB text cut in 88 KB chunks left ~45 MiB of segments that a
--- few live objects kept (measured). At most CHUNK_LINES lines because Vim's cost is per line
--- (16 000 empty lines: ~12 ms).
M.CHUNK_BYTES = 136 * 1024
M.CHUNK_LINES = 16000
--- Past this many lines (either side) no diff mode: the hunks come from M.compare.
M.DIFF_MODE_MAX_LINES = 50000
--- Removed lines a big review shows per hunk (as virtual lines), then how many more there are.
M.REMOVED_SHOWN = 100
--- Hunks per pack the diff thread hands back (M.diff).
M.PACK_HUNKS = 500
--- After a change, how long a big review waits for more before comparing again.
M.DEBOUNCE_MS = 150
--- Full collections at most after a big review closed (M.collect), and when the heap is trimmed
--- once more.
M.COLLECT_ROUNDS = 10
M.LATE_TRIM_MS = 1000
--- M.tidy collects once Lua's memory grew by this much (KiB) since it last did.
M.TIDY_KB = 1024

--- Whether `text` ends with a newline, and whether it uses CRLF throughout (text/lines.lua's split's `eol`
--- and `dos`), without cutting it into lines.
function M.shape(text)
  local first_nl = text:find('\n', 1, true)
  if not first_nl then
    return false, false
  end
  local eol = text:sub(-1) == '\n'
  -- CRLF throughout: every newline follows a CR (scanned only when there is a CR at all).
  local dos = text:find('\r', 1, true) ~= nil and first_nl > 1 and not text:find('[^\r]\n')
  return eol, dos
end

--- The text text/hunks.lua compares (hunks.text of text/lines.lua's split's lines) from the text itself:
--- what is left of it once CRLF became LF, ending with one "\n".
function M.compare_text(text, eol, dos)
  if text == '' then
    return ''
  end
  local t = dos and (text:gsub('\r\n', '\n')) or text
  if not eol then
    t = t .. '\n'
  end
  return t == '\n' and '' or t
end

--- The chunk of `text` from byte `at`: up to `max_lines` lines, fewer once they reach
--- `max_bytes`, joined by their separator ("\r\n" when `dos`, else "\n") with none after the
--- last; how many; and where the next starts (nil: the text is done). Split at the separator,
--- the lines are text/lines.lua's split's.
function M.cut(text, at, max_lines, max_bytes, dos)
  local n, from, last_nl = 0, at, nil
  local limit = at + max_bytes - 1
  while n < max_lines and from <= limit do
    local nl = text:find('\n', from, true)
    if not nl then
      if from <= #text or n == 0 then
        -- The last line: text after the final newline, or the one empty line of an empty text.
        return text:sub(at), n + 1, nil
      end
      break
    end
    n, last_nl, from = n + 1, nl, nl + 1
  end
  local next_at = last_nl + 1
  return text:sub(at, last_nl - (dos and 2 or 1)), n, next_at <= #text and next_at or nil
end

--- Put the next lines of `job`'s text from `at` into its buffer (at == 1: in place of what it
--- has); where the next start (nil: done). Vim splits the lines (bulk_lines) unless the text holds
--- a NUL, which only Lua's strings carry through.
local function put(job, at)
  local sep = job.dos and '\r\n' or '\n'
  local chunk, _, next_at = M.cut(job.text, at, M.CHUNK_LINES, M.CHUNK_BYTES, job.dos)
  if job.nul == nil then
    job.nul = job.text:find('\0', 1, true) ~= nil
  end
  if job.nul then
    vim.api.nvim_buf_set_lines(job.buf, at == 1 and 0 or -1, -1, false, vim.split(chunk, sep, { plain = true }))
    return next_at
  end
  if at == 1 then
    vim.api.nvim_buf_set_lines(job.buf, 0, -1, false, {})
  end
  bulk_lines.append(job.buf, chunk, sep)
  if at == 1 then
    vim.api.nvim_buf_set_lines(job.buf, 0, 1, false, {}) -- the empty line an empty buffer has
  end
  return next_at
end

--- Fill each job's buffer ({ buf, text, dos }) with its text, in slices; the buffers stay
--- unmodifiable between slices (nobody edits half a proposal). `alive()` false stops it (the
--- review was closed). `done()` runs once all are filled.
function M.run(jobs, alive, done)
  heap.keep_big_blocks_apart()
  local j, at = 1, 1
  local function step()
    if not alive() then
      return
    end
    local deadline = vim.uv.hrtime() + M.SLICE_MS * 1e6
    while j <= #jobs do
      local job = jobs[j]
      if not vim.api.nvim_buf_is_valid(job.buf) then
        return
      end
      local bo = vim.bo[job.buf]
      local readonly = bo.readonly
      bo.readonly, bo.modifiable = false, true
      at = put(job, at)
      bo.modifiable, bo.readonly, bo.modified = false, readonly, false
      if not at then
        j, at = j + 1, 1
      end
      if vim.uv.hrtime() > deadline then
        M.tidy()
        vim.defer_fn(step, 0) -- a timer: keys typed meanwhile are handled between slices
        return
      end
    end
    done()
  end
  step()
end

--- Where the chunk of `buf`'s lines from `from` (0-based) ends (exclusive): as M.cut's, its
--- size from the buffer's own byte counts.
local function chunk_end(buf, from, count)
  local lo, hi = from + 1, math.min(from + M.CHUNK_LINES, count)
  local start = vim.api.nvim_buf_get_offset(buf, from)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if vim.api.nvim_buf_get_offset(buf, mid) - start >= M.CHUNK_BYTES then
      hi = mid
    else
      lo = mid + 1
    end
  end
  return hi
end

--- The lines of `buf` joined by `nl` (and ending with it if `tail`), read in slices:
--- `done(text, tick)`, or `done(nil)` when the buffer changed meanwhile (or `alive()` turned false).
function M.read(buf, alive, done, nl, tail)
  local tick = vim.api.nvim_buf_get_changedtick(buf)
  local count = vim.api.nvim_buf_line_count(buf)
  local pieces, from = {}, 0
  local function step()
    if not (alive() and vim.api.nvim_buf_is_valid(buf)) or vim.api.nvim_buf_get_changedtick(buf) ~= tick then
      done(nil)
      return
    end
    local deadline = vim.uv.hrtime() + M.SLICE_MS * 1e6
    while from < count do
      local to = chunk_end(buf, from, count)
      pieces[#pieces + 1] = bulk_lines.get(buf, from, to, nl)
      from = to
      if from < count and vim.uv.hrtime() > deadline then
        M.tidy()
        vim.defer_fn(step, 0)
        return
      end
    end
    if tail then
      pieces[#pieces + 1] = '' -- the separator once more at the end, in the same copy
    end
    -- The joining gets a turn of its own (22 MB: ~20-40 ms).
    vim.defer_fn(function()
      if alive() and vim.api.nvim_buf_is_valid(buf) and vim.api.nvim_buf_get_changedtick(buf) == tick then
        done(table.concat(pieces, nl), tick)
      else
        done(nil)
      end
    end, 0)
  end
  step()
end

--- In a thread of its own: the hunks of `old` -> `new` (vim.diff's indices) as one flat list, then
--- for each hunk up to `shown` of the lines it removes and how many more, `per` hunks to a pack;
--- each packed with vim.mpack after its length (8 hex digits), sent to `reply` (or nil and why it
--- failed). Runs in the thread's own Lua state: no upvalues.
local function diff_in_thread(reply, old, new, algorithm, indent, shown, per)
  local ok, packed = pcall(function()
    local function framed(value)
      local pack = vim.mpack.encode(value)
      return ('%08x'):format(#pack) .. pack
    end
    local xdiff = (vim.text and vim.text.diff) or vim.diff
    local hs = xdiff(old, new, { result_type = 'indices', algorithm = algorithm, indent_heuristic = indent })
    local flat, packs, removed, starts, at = {}, {}, {}, { 1 }, 1
    for i, h in ipairs(hs) do
      for k = 1, 4 do
        flat[#flat + 1] = h[k]
      end
      local n = math.min(h[2], shown)
      local lines = {}
      if n > 0 then
        while #starts <= h[1] + n do -- where each old line starts, as far as needed
          local nl = old:find('\n', at, true)
          if not nl then
            break
          end
          at = nl + 1
          starts[#starts + 1] = at
        end
        for l = h[1], h[1] + n - 1 do
          lines[#lines + 1] = old:sub(starts[l], starts[l + 1] - 2)
        end
      end
      removed[#removed + 1] = { lines, h[2] - n }
      if #removed == per or i == #hs then
        packs[#packs + 1] = framed(removed)
        removed = {}
      end
    end
    return framed(flat) .. table.concat(packs)
  end)
  reply:send(ok and packed or nil, not ok and tostring(packed) or nil)
end

--- diff_in_thread's answer read: the hunks (hunks.packed) and `removed(i)`, hunk i's removed
--- lines and how many more, its pack decoded when first asked for (one pack kept at a time).
local function read_answer(packed, per)
  local function frame(at)
    local len = tonumber(packed:sub(at, at + 7), 16)
    return packed:sub(at + 8, at + 7 + len), at + 8 + len
  end
  local flat, at = frame(1)
  local starts = {} -- where each pack of removed lines is
  while at <= #packed do
    starts[#starts + 1] = at
    at = at + 8 + tonumber(packed:sub(at, at + 7), 16)
  end
  local current, pack
  local function removed(i)
    local k = math.floor((i - 1) / per) + 1
    if k ~= current then
      current, pack = k, vim.mpack.decode((frame(starts[k])))
    end
    return pack[(i - 1) % per + 1]
  end
  return hunks.packed(vim.mpack.decode(flat)), removed
end

--- Hunks of `old_text` -> `new_text` (both as hunks.text makes them) found off the main loop,
--- with 'diffopt''s algorithm as hunks.compute does: `done(hunks, removed)` (hunks.packed's, and
--- `removed(i)`: hunk i's first removed lines and how many more), or `done(nil)` when comparing
--- failed (said). A thread per comparison, not libuv's pool: a thread's Lua state ends
--- with it, so the copies of both texts and what comparing them left in its allocator go too; a
--- worker of the pool keeps its state, ~2-5 MiB more for each worker a 1 M-line review used
--- (measured).
function M.diff(old_text, new_text, done)
  local diffopt, per = vim.o.diffopt, M.PACK_HUNKS
  local function failed(why)
    notify.say('could not compare the proposal: ' .. tostring(why), 'error')
    done(nil)
  end
  local thread, reply
  reply = vim.uv.new_async(function(packed, err)
    reply:close()
    vim.schedule(function()
      thread:join() -- it has sent its last: it ends as its state is closed (0.04-0.08 ms, measured)
      if not packed then
        return failed(err)
      end
      local hs, removed = read_answer(packed, per) -- ~6 ms for 10 000 hunks: its own turn
      vim.defer_fn(function()
        done(hs, removed)
      end, 0)
    end)
  end)
  local why
  thread, why = vim.uv.new_thread(
    diff_in_thread,
    reply,
    old_text,
    new_text,
    diffopt:match('algorithm:(%a+)') or 'myers',
    diffopt:find('indent%-heuristic') ~= nil,
    M.REMOVED_SHOWN,
    per
  )
  if not thread then -- no thread to be had: as a comparison that failed
    reply:close()
    failed(why)
  end
end

--- Keep big review `d`'s hunks current without blocking: now, and after changes (debounced),
--- `on_hunks(hunks, removed)` with d.hunks and d.hunks_tick set. `text`: the proposal's text as
--- just filled (hunks.text's form), so the first round need not read it back. Returns the
--- function that compares again (after the on-disk text changed).
function M.compare(d, on_hunks, text)
  local function alive()
    return not d.resolved and vim.api.nvim_buf_is_valid(d.proposed)
  end
  local running, again, timer = false, false, nil
  local round
  local function compare(new_text, tick)
    M.diff(d.old_text, new_text, function(hs, removed)
      running = false
      if not alive() then
        return
      end
      if hs and vim.api.nvim_buf_get_changedtick(d.proposed) == tick then
        d.hunks, d.hunks_tick = hs, tick
        on_hunks(hs, removed)
      end
      if again then
        again = false
        round()
      end
    end)
  end
  function round()
    running = true
    M.read(d.proposed, alive, function(joined, tick)
      if not joined then
        running = false
        if alive() then
          again = false
          round() -- changed while it was read: read it again
        end
        return
      end
      -- As text/hunks.lua's `text`: each line ends with "\n", one empty line is no text.
      compare(joined == '\n' and '' or joined, tick)
    end, '\n', true)
  end
  local function soon()
    if running then
      again = true
      return
    end
    if timer then
      timer:stop()
    end
    timer = vim.defer_fn(function()
      timer = nil
      if alive() and not running then
        round()
      end
    end, M.DEBOUNCE_MS)
  end
  vim.api.nvim_buf_attach(d.proposed, false, {
    on_lines = function()
      if not alive() then
        return true
      end
      soon()
    end,
  })
  if text then
    running = true
    compare(text, vim.api.nvim_buf_get_changedtick(d.proposed))
  else
    round()
  end
  return soon
end

local tidied_at = 0 -- Lua's memory (KiB) after M.tidy's last collection

--- At the end of a big review's slice: a full collection once Lua's memory grew by TIDY_KB. The
--- review's big texts count in the collector's pace, so on its own it let the slices' small
--- garbage (lines, tables, marks' virtual lines) pile up to tens of MB between collections; the few
--- objects made meanwhile that outlive the review then kept that memory's segments (LuaJIT gives
--- back only wholly free ones): ~5 MiB after a 1 M-line review, measured. Each collection takes
--- 2-4 ms at 1 M lines (measured: about 60 over such a review).
function M.tidy()
  local now = collectgarbage('count')
  if now > tidied_at + M.TIDY_KB then
    collectgarbage('collect')
    tidied_at = collectgarbage('count')
  elseif now < tidied_at then
    tidied_at = now
  end
end

--- After a big review closed: its texts (tens of MB each) are given back now rather than whenever
--- Lua's collector would get to them, then the C heap is trimmed. LuaJIT's compiled traces hold the
--- objects they were compiled against, the review's texts among them (~45 MiB after 1 M lines,
--- measured): they are flushed first (code runs interpreted until it is compiled again). Full
--- collections, one per turn of the loop (the first 18-33 ms after 1 M lines, the next 1-2 ms):
--- an explicit step pays the debt a big text left in one go anyway, and driving the collector's
--- own steps by allocating filled new segments that a few live objects then kept (~50 MiB after
--- 1 M lines, measured). More than one, because what one collection finalises (luv's handles, and
--- the callbacks they held) goes in the next, and LuaJIT halves the buffer that joined the accepted
--- text (22 MB) once per collection. The C heap is trimmed then, and again LATE_TRIM_MS later:
--- the accepted text sent to the plugin host leaves Neovim's heap once the host has read it.
function M.collect()
  if jit and jit.flush then
    jit.flush()
  end
  local function collect(round, last)
    collectgarbage('collect')
    local now = collectgarbage('count')
    if round < M.COLLECT_ROUNDS and last - now >= 64 then
      return vim.defer_fn(function()
        collect(round + 1, now)
      end, 0)
    end
    heap.give_back()
    vim.defer_fn(heap.give_back, M.LATE_TRIM_MS)
  end
  vim.defer_fn(function()
    collect(1, collectgarbage('count'))
  end, 0)
end

return M
