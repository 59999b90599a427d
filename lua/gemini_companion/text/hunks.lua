-- The hunks of a review: where the proposal differs from the file on disk, found by Neovim's own
-- xdiff (vim.text.diff, vim.diff before 0.11), and the edit that drops one (puts the on-disk
-- text back). Pure: buffers in, buffers out, no windows, no state.
--
-- A hunk is vim.diff's `indices` tuple { old_start, old_count, new_start, new_count }; a count
-- of 0 means the lines were inserted/deleted after line `start` (0: before the first line).
local M = {}

local xdiff = (vim.text and vim.text.diff) or vim.diff

--- Lines with one empty line meaning no text at all: Neovim shows an empty buffer as one empty
--- line, and an empty file is split into one empty string.
local function no_text(lines)
  return #lines == 0 or (#lines == 1 and lines[1] == '')
end

--- The text the diff compares: each line ends with "\n" (a missing final newline is not a hunk,
--- as in Neovim's diff mode).
function M.text(lines)
  if no_text(lines) then
    return ''
  end
  return table.concat(lines, '\n') .. '\n'
end

--- Hunks turning `old_text` into `new_text` (both as M.text makes them), found as 'diffopt'
--- makes Neovim's diff mode find them (its algorithm), so the keys act on the hunks shown.
function M.compute(old_text, new_text)
  if old_text == new_text then
    return {}
  end
  local diffopt = vim.o.diffopt
  return xdiff(old_text, new_text, {
    result_type = 'indices',
    algorithm = diffopt:match('algorithm:(%a+)') or 'myers',
    indent_heuristic = diffopt:find('indent%-heuristic') ~= nil,
  })
end

--- Lines of `text` as M.text made it.
function M.lines(text)
  if text == '' then
    return {}
  end
  local lines = vim.split(text, '\n', { plain = true })
  lines[#lines] = nil -- after the final "\n"
  return lines
end

--- Hunks kept as one flat list { old_start, old_count, new_start, new_count, ... }, read as
--- M.compute's list (hs[i] is hunk i's tuple, made when asked for; M.count says how many). A big
--- review's 10 000 hunks so are one block that goes back to the system when freed: as 10 000
--- small tables they kept LuaJIT's memory scattered after the review (~5 MiB, measured).
function M.packed(flat)
  local n = math.floor(#flat / 4)
  return setmetatable({}, {
    flat = flat,
    n = n,
    __index = function(_, i)
      if type(i) == 'number' and i >= 1 and i <= n and i % 1 == 0 then
        local at = 4 * (i - 1)
        return { flat[at + 1], flat[at + 2], flat[at + 3], flat[at + 4] }
      end
    end,
  })
end

--- How many hunks `hs` holds (M.compute's list or M.packed's).
function M.count(hs)
  local mt = getmetatable(hs)
  return mt and mt.n or #hs
end

--- Field `k` (1-4) of hunk `i`, without making a tuple of a packed one.
local function field(hs, i, k)
  local mt = getmetatable(hs)
  if mt and mt.flat then
    return mt.flat[4 * (i - 1) + k]
  end
  return hs[i][k]
end

--- The rows a hunk adding `new_count` lines at `new_start` is at (see M.rows).
local function span(new_start, new_count, line_count)
  if new_count > 0 then
    return new_start, new_start + new_count - 1
  end
  local row = math.max(1, math.min(new_start + 1, line_count))
  return row, row
end

--- The rows (1-based, inclusive) of the proposal a hunk is "at": its new lines, or for a deletion
--- the line below where the lines were (the one above at the end), as Vim's `]c` lands.
function M.rows(h, line_count)
  return span(h[3], h[4], line_count)
end

--- Index of the hunk at `row`, or nil.
function M.at(hunks, row, line_count)
  for i = 1, M.count(hunks) do
    local first, last = span(field(hunks, i, 3), field(hunks, i, 4), line_count)
    if row >= first and row <= last then
      return i
    end
  end
end

--- Index of the first hunk starting below `row` (`step` 1) or above it (`step` -1), or nil.
function M.next(hunks, row, line_count, step)
  local from, to = 1, M.count(hunks)
  if step < 0 then
    from, to = to, 1
  end
  for i = from, to, step do
    local first = span(field(hunks, i, 3), field(hunks, i, 4), line_count)
    if (step > 0 and first > row) or (step < 0 and first < row) then
      return i
    end
  end
end

--- Lines added and removed by `hunks`.
function M.counts(hunks)
  local added, removed = 0, 0
  for i = 1, M.count(hunks) do
    added, removed = added + field(hunks, i, 4), removed + field(hunks, i, 2)
  end
  return added, removed
end

--- Does `h` reach the end of both texts (so dropping it makes the final newline the file's)?
function M.at_end(h, old_count, new_count)
  local old_end = h[2] > 0 and h[1] + h[2] - 1 or h[1]
  local new_end = h[4] > 0 and h[3] + h[4] - 1 or h[3]
  return old_end == old_count and new_end == new_count
end

--- Put the on-disk lines of hunk `h` back into `buf` (the proposal, whose text the hunks were
--- computed from), as one undoable change.
function M.drop(buf, h, old_lines)
  local lines = vim.list_slice(old_lines, h[1], h[1] + h[2] - 1)
  local first = h[4] > 0 and h[3] - 1 or h[3]
  local last = first + h[4]
  if no_text(vim.api.nvim_buf_get_lines(buf, 0, 2, false)) and vim.api.nvim_buf_line_count(buf) == 1 then
    first, last = 0, 1 -- the one empty line is no text: replace it rather than insert beside it
  end
  vim.api.nvim_buf_set_lines(buf, first, last, false, lines)
end

return M
