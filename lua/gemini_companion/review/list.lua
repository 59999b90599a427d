-- :GeminiReviews — every review waiting for the user, from every client and session, in one float:
-- file, client, lines added/removed, age, comments; then the open review comments. <CR> jumps to
-- the review or comment, `a` accepts, `r` rejects, `c` comments on a review (its first change) or
-- edits a comment, `s` sends the open comments to the agent, `q`/<Esc> closes the list.
local keys = require('gemini_companion.review.keys')
local agents = require('gemini_companion.agents')
local hunks = require('gemini_companion.text.hunks')
local shown = require('gemini_companion.text.paths').shown

local M = {}

local function age(seconds)
  if seconds < 60 then
    return seconds .. 's'
  elseif seconds < 3600 then
    return ('%dm'):format(seconds / 60)
  end
  return ('%dh %02dm'):format(seconds / 3600, (seconds % 3600) / 60)
end

--- One line per review, aligned: `file  client  +added −removed  age[  N comments]`.
function M.lines(reviews, now)
  local rows, widths = {}, { 0, 0, 0, 0 }
  local comments = require('gemini_companion.comments')
  for _, d in ipairs(reviews) do
    local added, removed = hunks.counts(keys.current(d))
    local n = #comments.of_review(d.proposed, d.key)
    local row = {
      shown(d.key),
      d.orphan and '(orphaned: its session ended)' or agents.client_title(d.client),
      ('+%d −%d'):format(added, removed),
      age(math.max(0, now - d.opened_at)),
      n > 0 and ('%d comment%s'):format(n, n == 1 and '' or 's') or '',
    }
    for i = 1, 4 do
      widths[i] = math.max(widths[i], vim.fn.strdisplaywidth(row[i]))
    end
    table.insert(rows, row)
  end
  return vim.tbl_map(function(row)
    local cells = {}
    for i = 1, 4 do
      cells[i] = row[i] .. (' '):rep(widths[i] - vim.fn.strdisplaywidth(row[i]))
    end
    return vim.trim(table.concat(cells, '  ') .. '  ' .. row[5])
  end, rows)
end

--- One line per open comment: `  file:line  » text`.
local function comment_lines(list)
  return vim.tbl_map(function(c)
    return ('  %s:%d  » %s'):format(shown(c.path), c.first, c.text)
  end, list)
end

--- Go to review `d`: its proposal's window (in its tab), or show it in the current window.
local function jump(d)
  local win = vim.fn.win_findbuf(d.proposed)[1]
  if win then
    vim.api.nvim_set_current_win(win)
  else
    vim.api.nvim_win_set_buf(0, d.proposed)
  end
end

local state = {}

local function close()
  if state.win and vim.api.nvim_win_is_valid(state.win) then
    vim.api.nvim_win_close(state.win, true)
  end
  if state.buf and vim.api.nvim_buf_is_valid(state.buf) then
    vim.api.nvim_buf_delete(state.buf, { force = true })
  end
  state = {}
end

local function render()
  local diff = require('gemini_companion.review')
  state.reviews = diff.reviews()
  state.comments = require('gemini_companion.comments').list(true)
  if #state.reviews == 0 and #state.comments == 0 then
    close()
    require('gemini_companion.notify').say('no pending reviews')
    return
  end
  local lines = M.lines(state.reviews, os.time())
  if #state.comments > 0 then
    table.insert(lines, ('Open comments (%d):'):format(#state.comments))
    vim.list_extend(lines, comment_lines(state.comments))
  end
  local title = (' Pending reviews (%d) '):format(#state.reviews)
  -- The keys in the footer, and the float as wide as them: in the title they were cut off.
  local footer = ' <CR> go  a accept  r reject  c comment  s send comments  q close '
  local width = vim.fn.strdisplaywidth(footer) + 2
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l) + 2)
  end
  local config = {
    relative = 'editor',
    width = math.min(width, math.max(20, vim.o.columns - 4)),
    height = math.min(#lines, math.max(1, vim.o.lines - 6)),
    row = 2,
    col = math.max(0, math.floor((vim.o.columns - width) / 2)),
    style = 'minimal',
    border = 'rounded',
    title = title,
    title_pos = 'center',
    footer = footer,
    footer_pos = 'center',
  }
  vim.bo[state.buf].modifiable = true
  vim.api.nvim_buf_set_lines(state.buf, 0, -1, false, lines)
  vim.bo[state.buf].modifiable = false
  if state.win and vim.api.nvim_win_is_valid(state.win) then
    vim.api.nvim_win_set_config(state.win, config)
  else
    state.win = vim.api.nvim_open_win(state.buf, true, config)
    vim.wo[state.win][0].cursorline = true
  end
end

--- What the cursor's line shows: a review, or a comment (the line after the comments' heading).
local function chosen()
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local reviews = state.reviews or {}
  if row <= #reviews then
    return reviews[row], nil
  end
  return nil, (state.comments or {})[row - #reviews - 1]
end

local function map(lhs, fn, desc)
  vim.keymap.set('n', lhs, fn, { buffer = state.buf, nowait = true, desc = 'Gemini reviews: ' .. desc })
end

--- `c`: comment on the review under the cursor (on its first change), or edit the comment there.
local function comment()
  local comments = require('gemini_companion.comments')
  local d, c = chosen()
  local refresh = vim.schedule_wrap(M.show)
  if c then
    comments.rewrite(c, refresh)
  elseif d and vim.api.nvim_buf_is_valid(d.proposed) then
    local h = keys.current(d)[1]
    local first = h and math.max(1, h[3]) or 1
    local last = h and math.max(first, h[3] + h[4] - 1) or first
    comments.edit(d.proposed, first, last, d.key, refresh)
  end
end

--- Open (or refresh) the list.
function M.show()
  if not (state.win and vim.api.nvim_win_is_valid(state.win)) then
    close() -- closing a review's tab may have taken the float with it: start afresh
    state.buf = vim.api.nvim_create_buf(false, true)
    vim.bo[state.buf].bufhidden = 'wipe'
    vim.bo[state.buf].filetype = 'gemini_companion_reviews'
    map('<CR>', function()
      local d, c = chosen()
      close()
      if d then
        jump(d)
      elseif c then
        require('gemini_companion.comments').jump(c)
      end
    end, 'go to the review or comment')
    for lhs, outcome in pairs({ a = 'accepted', r = 'rejected' }) do
      map(lhs, function()
        local d = chosen()
        if d then
          require('gemini_companion.review').decide(d, outcome)
          vim.schedule(M.show) -- after the review's windows are closed
        end
      end, outcome == 'accepted' and 'accept' or 'reject')
    end
    map('c', comment, 'comment on the review (or edit the comment)')
    map('s', function()
      require('gemini_companion.comments').send()
      vim.schedule(function()
        -- Refreshed where it still is: a <CR> or q typed meanwhile closed it, and it stays closed.
        if state.win and vim.api.nvim_win_is_valid(state.win) then
          M.show()
        end
      end)
    end, 'send the open comments to the agent')
    map('q', close, 'close')
    map('<Esc>', close, 'close')
  end
  render()
end

return M
