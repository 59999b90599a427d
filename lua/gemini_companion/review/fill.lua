-- Big reviews (see review/init.lua) fill their buffers in slices: a few thousand lines at a
-- time, SLICE_MS of work per trip through the event loop, so Neovim keeps answering keys and
-- other clients while a 200 000-line proposal arrives. Texts are cut into lines as they go (no
-- whole-text vim.split), exactly as review/view.lua's `split` would cut them.
local M = {}

--- Texts up to this many bytes (both sides together) are shown in one go, as always.
M.SYNC_BYTES = 1024 * 1024
--- Work per slice before the editor gets its turn.
M.SLICE_MS = 8
--- Lines per nvim_buf_set_lines call.
M.CHUNK_LINES = 4000

--- Whether `text` ends with a newline, and whether it uses CRLF throughout (view.split's `eol`
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

--- The text review/hunks.lua compares (hunks.text of view.split's lines) from the text itself:
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

--- Up to `max` lines of `text` from byte `at` (CR before each newline dropped when `dos`), and
--- where the next line starts (nil: the text is done). The lines are view.split's.
function M.take(text, at, max, dos)
  local lines, n, len = {}, 0, #text
  local cut = dos and 2 or 1
  while n < max do
    local nl = text:find('\n', at, true)
    if not nl then
      -- The last line: text after the final newline, or the one empty line of an empty text.
      if at <= len or at == 1 then
        n = n + 1
        lines[n] = text:sub(at)
      end
      return lines, nil
    end
    n = n + 1
    lines[n] = text:sub(at, nl - cut)
    at = nl + 1
  end
  if at > len then
    return lines, nil
  end
  return lines, at
end

--- Fill each job's buffer ({ buf, text, dos }) with its text, in slices; the buffers stay
--- unmodifiable between slices (nobody edits half a proposal). `alive()` false stops it (the
--- review was closed). `done()` runs once all are filled.
function M.run(jobs, alive, done)
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
      local lines, next_at = M.take(job.text, at, M.CHUNK_LINES, job.dos)
      if at == 1 then
        vim.api.nvim_buf_set_lines(job.buf, 0, -1, false, lines)
      else
        vim.api.nvim_buf_set_lines(job.buf, -1, -1, false, lines)
      end
      bo.modifiable, bo.readonly, bo.modified = false, readonly, false
      at = next_at
      if not at then
        j, at = j + 1, 1
      end
      if vim.uv.hrtime() > deadline then
        vim.defer_fn(step, 0) -- a timer: keys typed meanwhile are handled between slices
        return
      end
    end
    done()
  end
  step()
end

return M
