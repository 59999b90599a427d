-- A review that arrives while the user types leaves their Insert whole (issue 25 item 6; was in
-- tests/integration/test_review_while_typing.py, which keeps the Terminal-mode case: a `nvim -l`
-- spec cannot wait idle in Terminal mode for the user's pause). The host is stubbed
-- (host_stub.lua): the review arrives from a timer while Neovim waits for the user's next key in
-- Insert mode, as the host's request does between two keys.
-- (The old test's a.py is a.txt here: setting the python filetype in `nvim --clean` probes the
-- Python provider, ~3 s, which is not this case's concern.)
local t = ...
local H = require('host_stub')

--- Type `keys` and stay in the mode they leave Neovim in (Insert) until later keys end
--- it: `meanwhile()` runs from the event loop once Neovim waits there for the next key.
local function typing(keys, meanwhile)
  vim.defer_fn(meanwhile, 0)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), 'xt!', false)
end

--- Type `keys` from inside `meanwhile` (they are taken once it returns).
local function type_on(keys)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), 't', false)
end

H.test(t, 'a review arriving mid-insert keeps the insert one undo step', function(ws)
  H.write_file(ws .. '/mine.txt', 'first\n')
  local target = ws .. '/a.txt'
  H.write_file(target, 'x = 1\n')
  vim.cmd('edit mine.txt')
  local mode_when_it_arrived
  typing('Go with one', function()
    mode_when_it_arrived = vim.api.nvim_get_mode().mode
    H.open(target, 'x = 2\n') -- the review arrives while the user types
    type_on(' with two<Esc>')
  end)
  t.eq(mode_when_it_arrived, 'i')
  H.type('u')
  t.eq(vim.api.nvim_get_mode().mode, 'n')
  t.eq(vim.api.nvim_buf_get_name(0), ws .. '/mine.txt')
  t.eq(vim.api.nvim_buf_get_lines(0, 0, -1, false), { 'first' }) -- the whole inserted line undone at once
  vim.cmd('GeminiReject')
  t.eq(H.result(t), { status = 'rejected', path = target })
end)
