-- The unified layout (`diff.layout = 'unified'`): one window with the editable proposal; added
-- and changed lines highlighted (DiffAdd), the lines they replace or that were removed shown above
-- them as virtual lines (DiffDelete). Drawn from the same hunks the per-hunk keys use
-- (review/keys.lua), again after every change to the proposal.
local hunks = require('gemini_companion.review.hunks')
local keys = require('gemini_companion.review.keys')
local fill = require('gemini_companion.review.fill')

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
function M.render(d, old)
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

--- Draw a big review's hunks `hs` with what they removed (`removed_of(i)`: hunk i's first lines,
--- and how many more; review/fill.lua's `compare`), in slices; a later draw or a change stops this one.
function M.draw(d, hs, removed_of)
  local buf = d.proposed
  if not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local tick = vim.api.nvim_buf_get_changedtick(buf)
  d.drawing = (d.drawing or 0) + 1
  local mine = d.drawing
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  local i, count = 1, hunks.count(hs)
  local function step()
    local still = vim.api.nvim_buf_is_valid(buf) and d.drawing == mine and not d.resolved
    if not still or vim.api.nvim_buf_get_changedtick(buf) ~= tick then
      return
    end
    local deadline = vim.uv.hrtime() + fill.SLICE_MS * 1e6
    while i <= count do
      local h = hs[i]
      local virt
      if h[2] > 0 then
        local lines = removed_of(i) -- { first lines, how many more }
        virt = {}
        for _, line in ipairs(lines[1]) do
          virt[#virt + 1] = { { line, 'DiffDelete' } }
        end
        if lines[2] > 0 then
          virt[#virt + 1] = { { ('… %d more removed lines'):format(lines[2]), 'DiffDelete' } }
        end
      end
      mark(buf, h, virt)
      i = i + 1
      if vim.uv.hrtime() > deadline then
        fill.tidy()
        vim.defer_fn(step, 0)
        return
      end
    end
  end
  step()
end

--- Draw now and after every change (batched: once per trip through the event loop). `lines`:
--- the on-disk and proposed lines just put in the buffers (saves reading 50 000 lines back; nil:
--- read from the buffer, once a big review is filled).
function M.start(d, lines)
  if lines then
    keys.seed(d, lines.new)
  end
  M.render(d, lines and lines.old)
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
          M.render(d)
        end)
      end
    end,
  })
end

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
