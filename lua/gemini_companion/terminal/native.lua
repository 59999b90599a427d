-- The agent's terminal with Neovim's own :terminal: a split or a float, kept alive while hidden.
-- One entry per key (the tab page, or 'global'); terminal/init.lua decides the key.
local M = {}

---@type table<any, {buf: integer, job: integer, prev_win: integer|nil}>
M.terms = {}

local function running(t)
  return t ~= nil and vim.api.nvim_buf_is_valid(t.buf) and vim.fn.jobwait({ t.job }, 0)[1] == -1
end

--- The windows of the current tab page showing `buf`.
local function windows(buf)
  return vim.tbl_filter(function(win)
    return vim.api.nvim_win_get_buf(win) == buf
  end, vim.api.nvim_tabpage_list_wins(0))
end

--- A size below 1 is a fraction of `total`, else a count of columns or lines; always fits.
local function cells(size, total)
  local n = size < 1 and math.floor(total * size) or math.floor(size)
  return math.max(1, math.min(n, total - 2))
end

local SPLIT = { left = 'left', right = 'right', top = 'above', bottom = 'below' }

local function open_window(buf, s)
  local win
  if s.position == 'float' then
    local lines = vim.o.lines - vim.o.cmdheight
    local width, height = cells(s.size, vim.o.columns), cells(s.size, lines)
    win = vim.api.nvim_open_win(buf, true, {
      relative = 'editor',
      width = width,
      height = height,
      row = math.floor((lines - height) / 2),
      col = math.floor((vim.o.columns - width) / 2),
      border = 'rounded',
    })
  else
    local vertical = s.position == 'left' or s.position == 'right'
    local cfg = { split = SPLIT[s.position], win = -1 } -- win -1: along the whole edge of the tab
    if vertical then
      cfg.width = cells(s.size, vim.o.columns)
    else
      cfg.height = cells(s.size, vim.o.lines - vim.o.cmdheight)
    end
    win = vim.api.nvim_open_win(buf, true, cfg)
    vim.wo[win][0][vertical and 'winfixwidth' or 'winfixheight'] = true
  end
  -- [0]: local to this window (as :setlocal); vim.wo[win].x would also set the user's global value,
  -- and every window opened later (reviews too) would lose its numbers and sign column.
  local wo = vim.wo[win][0]
  wo.number, wo.relativenumber, wo.signcolumn = false, false, 'no'
  return win
end

local function show(t, s)
  t.prev_win = vim.api.nvim_get_current_win()
  open_window(t.buf, s)
  vim.cmd.startinsert()
end

--- Close the terminal's windows in this tab; the job runs on. The last window of a tab cannot
--- close: it shows the alternate buffer (or an empty one) instead.
local function hide(t)
  local was_in_it = vim.api.nvim_get_current_buf() == t.buf
  for _, win in ipairs(windows(t.buf)) do
    if #vim.api.nvim_tabpage_list_wins(0) > 1 then
      vim.api.nvim_win_close(win, true)
    else
      vim.api.nvim_win_call(win, function()
        local alt = vim.fn.bufnr('#')
        if alt > 0 and alt ~= t.buf and vim.api.nvim_buf_is_valid(alt) then
          vim.api.nvim_win_set_buf(win, alt)
        else
          vim.cmd.enew()
        end
      end)
    end
  end
  if
    was_in_it
    and t.prev_win
    and vim.api.nvim_win_is_valid(t.prev_win)
    and vim.api.nvim_win_get_buf(t.prev_win) ~= t.buf
  then
    vim.api.nvim_set_current_win(t.prev_win)
  end
end

local function start(key, s)
  local old = M.terms[key]
  if old and vim.api.nvim_buf_is_valid(old.buf) then
    vim.api.nvim_buf_delete(old.buf, { force = true }) -- its agent exited: start afresh
  end
  local buf = vim.api.nvim_create_buf(false, false)
  local t = { buf = buf, job = 0 }
  show(t, s)
  local opts = {
    cwd = s.cwd,
    on_exit = vim.schedule_wrap(function(_, code)
      -- The agent quit (/quit): its windows go too. A failure stays on screen to be read.
      if code == 0 and vim.api.nvim_buf_is_valid(buf) then
        hide(t)
        vim.api.nvim_buf_delete(buf, { force = true })
      end
    end),
  }
  local ok, job
  if vim.fn.has('nvim-0.11') == 1 then
    opts.term = true
    ok, job = pcall(vim.fn.jobstart, s.cmd, opts)
  else
    ok, job = pcall(vim.fn.termopen, s.cmd, opts)
  end
  if not ok or job <= 0 then
    hide(t)
    vim.api.nvim_buf_delete(buf, { force = true })
    vim.cmd.stopinsert()
    return nil, ('cannot start %s: %s'):format(vim.inspect(s.cmd), ok and 'not an executable' or job)
  end
  t.job = job
  vim.bo[buf].bufhidden, vim.bo[buf].buflisted = 'hide', false
  vim.b[buf].gemini_companion_agent = true
  M.terms[key] = t
  return t
end

--- Show or hide the agent of `key`, starting it when it is not running.
function M.toggle(key, s)
  local t = M.terms[key]
  if not running(t) then
    local _, err = start(key, s)
    return err
  end
  if #windows(t.buf) > 0 then
    hide(t)
  else
    show(t, s)
  end
end

--- Go to the agent of `key` (showing or starting it); from inside it, hide it.
function M.focus(key, s)
  local t = M.terms[key]
  if not running(t) then
    local _, err = start(key, s)
    return err
  end
  local wins = windows(t.buf)
  if vim.api.nvim_get_current_buf() == t.buf then
    hide(t)
  else
    -- Shown in another tab page (focus asked from a review's tab): go there, never squeeze a
    -- second window of it into this tab.
    local win = wins[1] or vim.fn.win_findbuf(t.buf)[1]
    if not win then
      return show(t, s)
    end
    t.prev_win = vim.api.nvim_get_current_win()
    vim.api.nvim_set_current_win(win)
    vim.cmd.startinsert()
  end
end

function M.hide(key)
  local t = M.terms[key]
  if running(t) then
    hide(t)
  end
end

--- The running agent's terminal buffer for `key`, or nil.
function M.buffer(key)
  local t = M.terms[key]
  return running(t) and t.buf or nil
end

--- Show the agent of `key` if it is hidden, without moving the cursor.
function M.reveal(key, s)
  local t = M.terms[key]
  if running(t) and #windows(t.buf) == 0 then
    local here = vim.api.nvim_get_current_win()
    open_window(t.buf, s)
    vim.api.nvim_set_current_win(here)
  end
end

--- End the agent of `key` (its tab page closed).
function M.stop(key)
  local t = M.terms[key]
  M.terms[key] = nil
  if t and vim.api.nvim_buf_is_valid(t.buf) then
    pcall(vim.fn.jobstop, t.job)
    vim.api.nvim_buf_delete(t.buf, { force = true })
  end
end

return M
