-- Review comments: a note on a line or a range of any review (a proposal, the file side of a
-- :GeminiChanges view, a review in :GeminiReviews), shown as virtual text beside it, moving with
-- edits (an extmark), listed by :GeminiComments and :GeminiReviews, and sent to the agent as one
-- prompt by :GeminiCommentsSend. The prompt goes through the send path (terminal/send.lua
-- deliver), whose bracketed paste passes every text through the one sanitizer: no control
-- sequence in a comment or a quoted line reaches the agent.
--
-- A comment outlives its buffer: when the buffer is unloaded it keeps its last place, and it is
-- drawn again when its file is next read or shown. A comment on a proposal moves to the file when
-- the proposal is accepted (the file then holds those lines); on a rejected one it stays in the
-- lists, sent with the rejection or not, as the user answered.
local notify = require('gemini_companion.notify')

local M = {}

local ns = vim.api.nvim_create_namespace('gemini_companion_comments')
M.ns = ns

---@class gemini_companion.Comment
---@field id integer
---@field path string the file it is about (a proposal's: its target)
---@field buf integer|nil the buffer that shows it (its extmark lives there); nil while none does
---@field mark integer|nil
---@field on_proposal boolean about a proposal's lines, not (yet) the file's: never drawn in the file
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
  if c.buf and c.mark and vim.api.nvim_buf_is_loaded(c.buf) then
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
    if c.buf == buf and place(c).first <= line and line <= c.last then
      return c
    end
  end
end

--- `path:line` or `path:first-last`, relative to the working directory where it can be.
local function anchor(path, first, last)
  return ('%s:%d%s'):format(vim.fn.fnamemodify(path, ':~:.'), first, last > first and ('-' .. last) or '')
end

--- Ask for comment `c`'s new text (empty: delete it); `done` runs once it is decided.
function M.rewrite(c, done)
  place(c)
  local prompt = 'Comment on ' .. anchor(c.path, c.first, c.last) .. ': '
  vim.ui.input({ prompt = prompt, default = c.text }, function(text)
    text = text and vim.trim(text)
    if text == '' then
      M.delete(c.id)
    elseif text then
      c.text, c.sent = text, false
      if c.buf then
        draw(c)
      end
    end
    if done then
      done()
    end
  end)
end

--- Add, edit or (an empty text) delete the comment on lines `first`..`last` of `buf`, about the
--- file `path` (a proposal's target; default: the buffer's own name). `done` runs once it is
--- decided (the review list redraws then).
function M.edit(buf, first, last, path, done)
  path = path or vim.api.nvim_buf_get_name(buf)
  if path == '' then
    return notify.say('a comment needs a file: this buffer has no name', 'warn')
  end
  path = vim.fs.normalize(path)
  local existing = at(buf, first)
  if existing then
    return M.rewrite(existing, done)
  end
  local prompt = 'Comment on ' .. anchor(path, first, last) .. ': '
  vim.ui.input({ prompt = prompt }, function(text)
    text = text and vim.trim(text)
    if text and text ~= '' then
      local c = {
        id = next_id,
        path = path,
        buf = buf,
        first = first,
        last = last,
        text = text,
        quote = vim.api.nvim_buf_get_lines(buf, first - 1, last, false),
        sent = false,
        on_proposal = vim.fs.normalize(vim.api.nvim_buf_get_name(buf)) ~= path,
      }
      next_id = next_id + 1
      table.insert(comments, c)
      draw(c)
    end
    if done then
      done()
    end
  end)
end

--- The comment key in `buf` (about `path`): on the cursor's line, or the Visual selection's lines.
function M.here(buf, path)
  local first, last = vim.fn.line('v'), vim.fn.line('.')
  if vim.fn.mode():match('^[vV\22]') then
    vim.cmd.normal({ vim.keycode('<Esc>'), bang = true }) -- (typeahead stays for the prompt)
  else
    first = last
  end
  M.edit(buf, math.min(first, last), math.max(first, last), path)
end

function M.delete(id)
  for i, c in ipairs(comments) do
    if c.id == id then
      if c.buf and c.mark and vim.api.nvim_buf_is_valid(c.buf) then
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
    local where = anchor(c.path, c.first, c.last)
    local quote = vim.tbl_map(function(l)
      return '> ' .. l
    end, c.quote)
    table.insert(parts, ('\n%s\n%s\n%s'):format(where, table.concat(quote, '\n'), c.text))
  end
  return table.concat(parts, '\n') .. '\n'
end

--- The open comments on review `path` (its proposal `buf`).
function M.of_review(buf, path)
  return vim.tbl_filter(function(c)
    return c.buf == buf or c.path == path
  end, M.list(true))
end

--- Review `path` (its proposal `buf`) is decided. Accepted: its comments now describe the file,
--- where they are drawn from now on. Rejected: its open comments go with the rejection as one
--- prompt (returned) if `send` says so; nil means ask the user (once). Those not sent stay listed.
--- Also returns what became of them, for the decision's one line ("2 comments sent with it"): a
--- second line would make Neovim ask the user to press Enter.
---@param send boolean|nil
---@return string|nil prompt, string|nil note
function M.decided(buf, path, outcome, send)
  local mine = M.of_review(buf, path)
  for _, c in ipairs(mine) do
    if c.buf == buf then
      M.detach(c)
      c.on_proposal = outcome ~= 'accepted'
    end
  end
  if outcome == 'accepted' then
    vim.schedule(function()
      M.attach_all()
    end)
    return nil, nil
  elseif #mine == 0 then
    return nil, nil
  end
  local n = ('%d comment%s'):format(#mine, #mine == 1 and '' or 's')
  if send == nil then
    send = M.ask_to_send(n)
  end
  if not send then
    return nil, n .. ' kept: :GeminiCommentsSend sends them'
  end
  M.mark_sent(mine)
  return M.prompt(mine), n .. ' sent with it'
end

--- The one question a rejection with comments asks (`what`: "2 comments").
function M.ask_to_send(what)
  return notify.yes(('Send your %s with the rejection, as the reason?'):format(what), true)
end

--- Comment `c` leaves its buffer (unloaded, or a decided proposal): it keeps its last place.
function M.detach(c)
  place(c)
  if c.buf and c.mark and vim.api.nvim_buf_is_loaded(c.buf) then
    pcall(vim.api.nvim_buf_del_extmark, c.buf, ns, c.mark)
  end
  c.buf, c.mark = nil, nil
end

--- Draw the comments about the file `buf` holds that no buffer shows (its buffer was unloaded,
--- or their proposal was accepted).
function M.attach(buf)
  local name
  for _, c in ipairs(comments) do
    if not c.buf and not c.on_proposal then
      name = name or vim.fs.normalize(vim.api.nvim_buf_get_name(buf))
      if c.path == name and vim.bo[buf].buftype == '' then
        c.buf = buf
        pcall(draw, c)
      end
    end
  end
end

--- M.attach for every loaded buffer.
function M.attach_all()
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) then
      M.attach(buf)
    end
  end
end

--- Go to comment `c`: its buffer (in a window that shows it, if any) or its file, at its line.
function M.jump(c)
  place(c)
  local win = c.buf and vim.fn.win_findbuf(c.buf)[1]
  if win then
    vim.api.nvim_set_current_win(win)
  elseif c.buf then
    vim.api.nvim_win_set_buf(0, c.buf)
  else
    vim.cmd.edit(vim.fn.fnameescape(c.path))
  end
  pcall(vim.api.nvim_win_set_cursor, 0, { c.first, 0 })
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
    if c.buf and vim.api.nvim_buf_is_loaded(c.buf) then
      pcall(draw, c)
    end
  end
end

local group = vim.api.nvim_create_augroup('gemini_companion_comments', {})
vim.api.nvim_create_autocmd('BufUnload', {
  group = group,
  callback = function(ev)
    for _, c in ipairs(comments) do
      if c.buf == ev.buf then
        M.detach(c)
      end
    end
  end,
})
vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufWinEnter' }, {
  group = group,
  callback = function(ev)
    if next(comments) then
      M.attach(ev.buf)
    end
  end,
})

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
