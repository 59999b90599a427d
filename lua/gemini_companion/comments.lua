-- Review comments: a note on a line or a range of any review (a proposal, either side of a
-- :GeminiChanges view), shown as virtual text beside it, moving with edits (an extmark), listed
-- by :GeminiComments and sent to the agent as one prompt by :GeminiCommentsSend. The prompt goes
-- through the send path (terminal/send.lua deliver), whose bracketed paste passes every text
-- through the one sanitizer: no control sequence in a comment or a quoted line reaches the agent.
local notify = require('gemini_companion.notify')

local M = {}

local ns = vim.api.nvim_create_namespace('gemini_companion_comments')
M.ns = ns

---@class gemini_companion.Comment
---@field id integer
---@field path string the file it is about (a proposal's: its target)
---@field buf integer the buffer it was made in (its extmark lives there while it is loaded)
---@field mark integer
---@field first integer 1-based line, as last known
---@field last integer
---@field text string
---@field quote string[] the lines it is about, as they were when it was written
---@field sent boolean

local comments = {} ---@type gemini_companion.Comment[]
local next_id = 1

-- A prompt past this many bytes is sent only after the user says yes.
M.MAX_PROMPT_BYTES = 16 * 1024

--- Where comment `c` is now (its extmark follows edits; the last known lines once it is gone).
local function place(c)
  if vim.api.nvim_buf_is_valid(c.buf) then
    local at = vim.api.nvim_buf_get_extmark_by_id(c.buf, ns, c.mark, { details = true })
    if at[1] then
      c.first = at[1] + 1
      c.last = (at[3] and at[3].end_row or at[1]) + 1
    end
  end
  return c
end

local function show(c)
  local label = (c.sent and '  ✓ ' or '  » ') .. c.text
  return { { label, c.sent and 'Comment' or 'DiagnosticInfo' } }
end

local function draw(c)
  local last_line = vim.api.nvim_buf_line_count(c.buf)
  c.mark = vim.api.nvim_buf_set_extmark(c.buf, ns, math.min(c.first, last_line) - 1, 0, {
    id = c.mark,
    end_row = math.min(c.last, last_line) - 1,
    virt_text = show(c),
    virt_text_pos = 'eol',
  })
end

--- The comment of `buf` on line `line`, if any.
local function at(buf, line)
  for _, c in ipairs(comments) do
    place(c)
    if c.buf == buf and c.first <= line and line <= c.last then
      return c
    end
  end
end

--- Add, edit or (an empty text) delete the comment on lines `first`..`last` of `buf`, about the
--- file `path` (a proposal's target; default: the buffer's own name).
function M.edit(buf, first, last, path)
  path = path or vim.api.nvim_buf_get_name(buf)
  path = path ~= '' and path or nil
  if not path then
    return notify.say('a comment needs a file: this buffer has no name', 'warn')
  end
  local existing = at(buf, first)
  local where = ('%s:%d%s'):format(vim.fn.fnamemodify(path, ':~:.'), first, last > first and ('-' .. last) or '')
  vim.ui.input({ prompt = 'Comment on ' .. where .. ': ', default = existing and existing.text or '' }, function(text)
    if text == nil then
      return -- cancelled
    end
    text = vim.trim(text)
    if existing and text == '' then
      return M.delete(existing.id)
    elseif text == '' then
      return
    end
    local c = existing
      or {
        id = next_id,
        path = path,
        buf = buf,
        first = first,
        last = last,
        quote = vim.api.nvim_buf_get_lines(buf, first - 1, last, false),
        sent = false,
      }
    if not existing then
      next_id = next_id + 1
      table.insert(comments, c)
    end
    c.text, c.sent = text, false
    draw(c)
  end)
end

function M.delete(id)
  for i, c in ipairs(comments) do
    if c.id == id then
      if vim.api.nvim_buf_is_valid(c.buf) then
        pcall(vim.api.nvim_buf_del_extmark, c.buf, ns, c.mark)
      end
      table.remove(comments, i)
      return
    end
  end
end

--- Every comment (`open`: only those not sent yet), where they are now, by file and line.
---@return gemini_companion.Comment[]
function M.list(open)
  local out = {}
  for _, c in ipairs(comments) do
    if not (open and c.sent) then
      table.insert(out, place(c))
    end
  end
  table.sort(out, function(a, b)
    return a.path == b.path and a.first < b.first or a.path < b.path
  end)
  return out
end

--- One prompt of `list`: each comment with `path:line` (or a range), the lines it is about and its text.
function M.prompt(list)
  local parts = { 'Review comments on your changes:' }
  for _, c in ipairs(list) do
    local where = ('%s:%d%s'):format(
      vim.fn.fnamemodify(c.path, ':~:.'),
      c.first,
      c.last > c.first and ('-' .. c.last) or ''
    )
    local quote = vim.tbl_map(function(l)
      return '> ' .. l
    end, c.quote)
    table.insert(parts, ('\n%s\n%s\n%s'):format(where, table.concat(quote, '\n'), c.text))
  end
  return table.concat(parts, '\n') .. '\n'
end

--- A review of `path` (its proposal `buf`) is rejected: its open comments as one prompt (marked
--- sent), or nil when it has none.
function M.take(buf, path)
  local mine = vim.tbl_filter(function(c)
    return c.buf == buf or c.path == path
  end, M.list(true))
  if #mine == 0 then
    return nil
  end
  M.mark_sent(mine)
  notify.say(('%d comment%s sent with the rejection'):format(#mine, #mine == 1 and '' or 's'))
  return M.prompt(mine)
end

--- :GeminiComments: the open comments in the quickfix list.
function M.quickfix()
  local open = M.list(true)
  if #open == 0 then
    return notify.say('no open review comment (add one with the comment key in a review)')
  end
  vim.fn.setqflist({}, ' ', {
    title = 'Gemini review comments',
    items = vim.tbl_map(function(c)
      return { filename = c.path, lnum = c.first, end_lnum = c.last, text = c.text }
    end, open),
  })
  vim.cmd('copen')
end

--- Mark `list` sent (their virtual text says so).
function M.mark_sent(list)
  for _, c in ipairs(list) do
    c.sent = true
    if vim.api.nvim_buf_is_valid(c.buf) then
      pcall(draw, c)
    end
  end
end

--- :GeminiCommentsSend: every open comment as one prompt to the agent (asks first past
--- MAX_PROMPT_BYTES); `!`: clear the sent ones instead.
function M.send(clear)
  if clear then
    for _, c in ipairs(M.list()) do
      if c.sent then
        M.delete(c.id)
      end
    end
    return
  end
  local open = M.list(true)
  if #open == 0 then
    return notify.say('no open review comment to send')
  end
  local text = M.prompt(open)
  local function go()
    if require('gemini_companion.terminal.send').deliver(text) then
      M.mark_sent(open)
      notify.say(('%d comment%s sent to the agent'):format(#open, #open == 1 and '' or 's'))
    end
  end
  if #text <= M.MAX_PROMPT_BYTES then
    return go()
  end
  vim.ui.select({ 'Send', 'Cancel' }, {
    prompt = ('The comments make a prompt of %d KiB: send it?'):format(math.ceil(#text / 1024)),
  }, function(_, index)
    if index == 1 then
      go()
    end
  end)
end

return M
