-- The plugin never changes an option of the user's (issue 25 item 1; was
-- tests/integration/test_users_options.py): the agent terminal, reviews and the review list set
-- their options local to the windows they made. `vim.wo[win].number = false` acts like `:set` and
-- also changed the global value, so after `:Gemini` every new window, reviews included, had no
-- line numbers and no sign column, and the ✓ that `dp` places was invisible. The host is stubbed
-- (host_stub.lua); the agent is the stand-in in a real terminal (tests/fixtures/agent_standin).
local t = ...
local H = require('host_stub')

local USERS = { number = true, relativenumber = true, signcolumn = 'yes', cursorline = false, wrap = true }

local function globals()
  local found = { scb = vim.go.scrollbind }
  for name in pairs(USERS) do
    found[name] = vim.go[name]
  end
  return found
end

local function window_options(win)
  return { number = vim.wo[win].number, signcolumn = vim.wo[win].signcolumn }
end

--- Run an agent-terminal command (`:Gemini`, `:GeminiFocus`) and wait for its terminal (a first
--- start waits for the server to settle), let it take the keys as it would (it starts Terminal
--- mode), then leave Terminal mode as the user does.
local function in_terminal(command)
  vim.cmd(command)
  t.wait_for(function()
    return vim.bo.buftype == 'terminal'
  end, 'in the agent terminal')
  H.type('<C-\\><C-n>')
end

H.test(t, "the user's options survive the terminal, a review and the list", function(ws)
  local record = vim.fn.tempname()
  local agent = t.root .. '/tests/fixtures/agent_standin/agent.py'
  vim.g.gemini_companion = { terminal = { cmd = { 'python3', agent, record } } }
  vim.cmd('set number relativenumber signcolumn=yes nocursorline wrap')
  -- Neovim keeps an option's global value per window, and a new window takes the current one's:
  -- they are looked at from the agent's window too, where a review arrives while the user types.
  local expected = vim.tbl_extend('error', USERS, { scb = false })
  H.write_file(ws .. '/notes.txt', 'one\ntwo\n')
  vim.cmd('edit notes.txt')
  in_terminal('Gemini') -- show
  t.wait_for(function()
    return H.read_file(record .. '/env.json') ~= nil
  end, 'the agent started')
  t.eq(globals(), expected)
  vim.cmd('Gemini') -- hide
  in_terminal('Gemini') -- show again
  t.eq(globals(), expected)
  vim.cmd('GeminiFocus') -- from inside the agent: hides it
  t.eq(globals(), expected)
  vim.cmd('new') -- a window the user opens now has the user's options
  t.eq(window_options(0), { number = true, signcolumn = 'yes' })
  vim.cmd('close')

  in_terminal('GeminiFocus') -- the user is in the agent when the review arrives
  local proposed = H.open(ws .. '/notes.txt', 'one\nTWO\n')
  local review_tab = vim.api.nvim_win_get_tabpage(vim.fn.win_findbuf(proposed)[1])
  local review_windows = vim.api.nvim_tabpage_list_wins(review_tab)
  t.eq(#review_windows, 2)
  for _, win in ipairs(review_windows) do -- the review's windows have numbers and a sign column for the ✓
    t.eq(window_options(win), { number = true, signcolumn = 'yes' })
  end
  vim.cmd('GeminiReviews')
  H.type('q')
  t.eq(globals(), expected)
  vim.cmd('GeminiRejectAll')
  t.eq(H.result(t), { status = 'rejected', path = ws .. '/notes.txt' })
  H.view_closed(t)
  t.eq(globals(), expected)
  vim.cmd('set number& relativenumber& signcolumn& cursorline& wrap&')
end)
