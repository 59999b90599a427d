-- The unified layout (`review.layout = 'unified'`): one window with the editable proposal; added
-- and changed lines highlighted (DiffAdd), the lines they replace or that were removed shown above
-- them as virtual lines (DiffDelete). Drawn from the same hunks the per-hunk keys use
-- (review/keys.lua), again after every change to the proposal. One of the layouts a review is
-- shown in (review/layouts/split.lua is the other), chosen as it opens; a big review past diff
-- mode shows its hunks this way in either (M.draw).
local hunks = require('gemini_companion.text.hunks')
local keys = require('gemini_companion.review.keys')
local windows = require('gemini_companion.review.windows')

local M = {}

local ns = vim.api.nvim_create_namespace('gemini_companion_unified')

--- Virtual lines for `old` lines `first`..`last` (1-based), as removed text.
local function removed(old, first, last)
  local virt = {}
  for i = first, last do
    virt[#virt + 1] = { { old[i], 'DiffDelete' } }
  end
  return virt
end

--- Mark hunk `h` in `buf`; `virt`: the virtual lines of what it removed.
local function mark(buf, h, virt)
  local old_count, new_start, new_count = h[2], h[3], h[4]
  if new_count > 0 then
    vim.api.nvim_buf_set_extmark(buf, ns, new_start - 1, 0, {
      end_row = new_start + new_count - 2,
      line_hl_group = 'DiffAdd',
      sign_text = old_count > 0 and '~' or '+',
      sign_hl_group = 'DiffChange',
      virt_lines = old_count > 0 and virt or nil,
      virt_lines_above = true,
    })
  else
    -- Removed after line `new_start`: below it, or above the first line (0).
    vim.api.nvim_buf_set_extmark(buf, ns, math.max(new_start - 1, 0), 0, {
      virt_lines = virt,
      virt_lines_above = new_start == 0,
      sign_text = '-',
      sign_hl_group = 'DiffDelete',
    })
  end
end

--- Draw the proposal's hunks in `d.proposed`; `old`: the on-disk lines if at hand.
function M.redraw(d, old)
  local buf = d.proposed
  if not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  local hs = keys.current(d)
  old = old or (#hs > 0 and hunks.lines(d.old_text) or {})
  for _, h in ipairs(hs) do
    mark(buf, h, h[2] > 0 and removed(old, h[1], h[1] + h[2] - 1) or nil)
  end
end

--- Lines of a big review drawn beyond each window's view, above and below it: scrolling less
--- than half of it redraws nothing.
M.AROUND_VIEW = 400

--- The rows (1-based) hunk `h` marks: its new lines, or the one line a deletion's mark is on.
local function marked_rows(h)
  if h[4] > 0 then
    return h[3], h[3] + h[4] - 1
  end
  local row = math.max(h[3], 1)
  return row, row
end

--- Index of the first of the `n` hunks `hs` (in order) whose marks reach row `row` or below.
local function first_reaching(hs, n, row)
  local lo, hi = 1, n + 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local _, last = marked_rows(hs[mid])
    if last < row then
      lo = mid + 1
    else
      hi = mid
    end
  end
  return lo
end

--- The rows around each window showing `buf` (merged where they meet): { {from, to, view_from,
--- view_to}, ... }, the view being what the window shows now.
local function around_views(buf)
  local spans = {}
  local line_count = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    local top, bottom = vim.fn.line('w0', win), vim.fn.line('w$', win)
    spans[#spans + 1] = {
      math.max(1, top - M.AROUND_VIEW),
      math.min(line_count, bottom + M.AROUND_VIEW),
      top,
      bottom,
    }
  end
  table.sort(spans, function(a, b)
    return a[1] < b[1]
  end)
  local merged = {}
  for _, span in ipairs(spans) do
    local last = merged[#merged]
    if last and span[1] <= last[2] + 1 then
      last[2], last[3], last[4] = math.max(last[2], span[2]), math.min(last[3], span[3]), math.max(last[4], span[4])
    else
      merged[#merged + 1] = span
    end
  end
  return merged, line_count
end

--- Whether what each window shows is still well inside what was drawn (half the margin left).
local function still_drawn(drawn, views, line_count)
  if not drawn or #views == 0 then
    return #views == 0
  end
  local half = M.AROUND_VIEW / 2
  for _, view in ipairs(views) do
    local inside = false
    for _, span in ipairs(drawn) do
      local low_ok = span[1] == 1 or view[3] - half >= span[1]
      local high_ok = span[2] == line_count or view[4] + half <= span[2]
      inside = inside or (low_ok and high_ok and view[3] >= span[1] and view[4] <= span[2])
    end
    if not inside then
      return false
    end
  end
  return true
end

--- Draw the marks of the big review `d`'s hunks (`d.marking`) near what its windows show, if
--- the view moved out of what was drawn (or `force`).
local function draw_near_view(d, force)
  local buf, marking = d.proposed, d.marking
  if d.resolved or not marking or not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  if vim.api.nvim_buf_get_changedtick(buf) ~= marking.tick then
    return -- edited since: the marks there move with the text until the hunks are found again
  end
  local views, line_count = around_views(buf)
  if not force and still_drawn(marking.drawn, views, line_count) then
    return
  end
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  local hs, n = marking.hunks, hunks.count(marking.hunks)
  local drawn_to = 0 -- a hunk reaching into two spans is marked once
  for _, span in ipairs(views) do
    for i = math.max(first_reaching(hs, n, span[1]), drawn_to + 1), n do
      local h = hs[i]
      if marked_rows(h) > span[2] then
        break
      end
      local virt
      if h[2] > 0 then
        local lines = marking.removed(i) -- { first lines, how many more }
        virt = {}
        for _, line in ipairs(lines[1]) do
          virt[#virt + 1] = { { line, 'DiffDelete' } }
        end
        if lines[2] > 0 then
          virt[#virt + 1] = { { ('… %d more removed lines'):format(lines[2]), 'DiffDelete' } }
        end
      end
      mark(buf, h, virt)
      drawn_to = i
    end
  end
  marking.drawn = views
end

--- Show a big review's hunks `hs` with what they removed (`removed_of(i)`: hunk i's first
--- lines, and how many more; review/fill.lua's `compare`). Only the hunks near what its windows
--- show are marked, again as they scroll: a 1 M-line review's 10 000 marks at once took ~50
--- slices to place, and Neovim keeps its decoration table at its largest after the marks are
--- gone (~0.9 MiB for 10 000, measured on Neovim 0.11).
function M.draw(d, hs, removed_of)
  local buf = d.proposed
  if not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  d.marking = { hunks = hs, removed = removed_of, tick = vim.api.nvim_buf_get_changedtick(buf) }
  if not d.marking_watched then
    d.marking_watched = true
    -- The review's own group: its teardown deletes it.
    local group = vim.api.nvim_create_augroup('gemini_companion_diff_' .. buf, { clear = false })
    local function redraw()
      draw_near_view(d, false)
    end
    vim.api.nvim_create_autocmd('WinScrolled', { group = group, callback = redraw })
    vim.api.nvim_create_autocmd('BufWinEnter', { group = group, buffer = buf, callback = redraw })
  end
  draw_near_view(d, true)
end

--- Draw now and after every change (batched: once per trip through the event loop). `lines`:
--- the on-disk and proposed lines just put in the buffers (saves reading 50 000 lines back; nil:
--- read from the buffer, once a big review is filled).
local function start(d, lines)
  if lines then
    keys.seed(d, lines.new)
  end
  M.redraw(d, lines and lines.old)
  local queued = false
  vim.api.nvim_buf_attach(d.proposed, false, {
    on_lines = function()
      if d.resolved then
        return true
      end
      if not queued then
        queued = true
        vim.schedule(function()
          queued = false
          M.redraw(d)
        end)
      end
    end,
  })
end

--- No buffer of its own: the proposal shows it all.
function M.create() end

--- Its one window; the hunks drawn at once unless the review still fills (M.render comes once
--- it is full). `lines`: the on-disk and proposed lines just put in the buffers.
---@param d GeminiCompanionReview
function M.show(d, settings, lines)
  d.wins = { windows.first(d.proposed, settings) }
  if not d.filling then
    start(d, lines)
  end
end

--- Show the changes of a big review once it is filled, and after every change.
---@param d GeminiCompanionReview
function M.render(d)
  start(d)
end

--- The file changed on disk during the review: its hunks drawn again (a big review's are found
--- again off the main loop: review/disk.lua's refresh).
---@param d GeminiCompanionReview
function M.refresh(d)
  if not d.compare then
    M.redraw(d)
  end
end

--- Its marks go with the proposal's buffer.
function M.teardown() end

--- The proposal's removed and added lines as the user sees them, for tests: { row, kind, text }.
function M.shown(d)
  local out = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(d.proposed, ns, 0, -1, { details = true })) do
    local row, details = m[2] + 1, m[4]
    for _, vl in ipairs(details.virt_lines or {}) do
      table.insert(out, { row, details.virt_lines_above and 'removed above' or 'removed below', vl[1][1] })
    end
    if details.line_hl_group then
      table.insert(out, { row, 'added', (details.end_row or m[2]) + 1 })
    end
  end
  return out
end

return M
