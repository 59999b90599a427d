-- The agent's terminal through snacks.nvim's (folke/snacks.nvim, lua/snacks/terminal.lua):
-- `Snacks.terminal.toggle/focus/get(cmd, opts)`, which keys a terminal on cmd, cwd, env and count,
-- and returns a snacks.win (`buf`, `:hide()`, `:show()`, `:valid()`, `:buf_valid()`).
local M = {}

local function snacks_terminal()
  local ok, snacks = pcall(require, 'snacks')
  return ok and type(snacks) == 'table' and snacks.terminal or nil
end

function M.available()
  return snacks_terminal() ~= nil
end

--- snacks' options for the agent of `key`: the same count and cwd every time, so snacks finds
--- the same terminal again (its id is made of them).
local function opts(key, s, extra)
  local vertical = s.position == 'left' or s.position == 'right'
  local win = { position = s.position }
  if s.position == 'float' then
    win.width, win.height = s.size, s.size
  elseif vertical then
    win.width = s.size
  else
    win.height = s.size
  end
  return vim.tbl_extend('force', { cwd = s.cwd, count = key == 'global' and 1 or key, win = win }, extra or {})
end

function M.toggle(key, s)
  snacks_terminal().toggle(s.cmd, opts(key, s))
end

function M.focus(key, s)
  snacks_terminal().focus(s.cmd, opts(key, s))
end

local function existing(key, s)
  local term = snacks_terminal().get(s.cmd, opts(key, s, { create = false }))
  return term and term:buf_valid() and term or nil
end

function M.hide(key, s)
  local term = existing(key, s)
  if term and term:valid() then
    term:hide()
  end
end

function M.buffer(key, s)
  local term = existing(key, s)
  return term and term.buf or nil
end

function M.reveal(key, s)
  local term = existing(key, s)
  if term and not term:valid() then
    local here = vim.api.nvim_get_current_win()
    term:show()
    if vim.api.nvim_win_is_valid(here) then
      vim.api.nvim_set_current_win(here)
    end
  end
end

function M.stop(key, s)
  local term = existing(key, s)
  if term then
    vim.api.nvim_buf_delete(term.buf, { force = true })
  end
end

return M
