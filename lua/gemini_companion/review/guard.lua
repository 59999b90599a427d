-- What a review must not take from the user (see review/init.lua): what they saved while it was
-- open (accept is refused until the review shows it), their file's line ends, a proposal's own
-- name, and a write that did not accept (it fails, so `:wq` keeps the proposal open).
local notify = require('gemini_companion.notify')
local disk = require('gemini_companion.review.disk')

local shown = require('gemini_companion.text.paths').shown

local M = {}

--- Accept only what the user has seen: if the file changed on disk since the review showed it
--- (they saved it, a formatter ran), it now compares with the new text, the user is told, and the
--- next accept goes ahead. Their edits to the proposal stay.
function M.disk_unchanged(d)
  local text, exists = disk.read(d.key)
  if text == nil then
    notify.say(('not accepted: cannot read %s to check it is unchanged: %s'):format(shown(d.key), exists), 'error')
    return false
  end
  if text == d.disk_text and exists == d.exists then
    return true
  end
  disk.refresh(d, text, exists)
  notify.say(
    ('not accepted: %s changed on disk since the proposal opened; the review now compares with the new text and your proposal is kept: check it and accept again'):format(
      shown(d.key)
    ),
    'warn'
  )
  return false
end

-- How many client tool calls are running now (bridge runs each through M.as_client). A client
-- may save a document (Claude's saveDocument), but a write it causes never accepts a review: only
-- the user does, so one agent cannot approve its own (or another session's) proposal.
local client_calls = 0

--- Run fn(...) as a client's tool call: writes it causes accept no review. Returns fn's results.
function M.as_client(fn, ...)
  client_calls = client_calls + 1
  local result = { pcall(fn, ...) }
  client_calls = client_calls - 1
  if not result[1] then
    error(result[2], 0)
  end
  return unpack(result, 2, table.maxn(result))
end

--- A write of proposal `d` that a client's tool call caused: refused (true), and the user is told.
function M.by_client(d)
  if client_calls == 0 then
    return false
  end
  notify.say(
    ('not accepted: a client tried to write the proposal for %s; only you accept a review (:w in it)'):format(
      shown(d.key)
    ),
    'warn'
  )
  M.modified_for_now(d.proposed)
  return true
end

--- Modified until the current command is done: `:x` and `:update` write only a modified buffer;
--- a buffer still modified after its BufWriteCmd fails the write (`:wq` does not quit).
function M.modified_for_now(buf)
  vim.bo[buf].modified = true
  vim.schedule(function()
    if vim.api.nvim_buf_is_valid(buf) then
      vim.bo[buf].modified = false
    end
  end)
end

--- The proposal has the name the plugin gave it again (after `:saveas`/`:file` renamed it).
local function restore_name(d)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if buf ~= d.proposed and vim.api.nvim_buf_get_name(buf) == d.name and not vim.api.nvim_buf_is_loaded(buf) then
      pcall(vim.api.nvim_buf_delete, buf, { force = true }) -- the alternate buffer `:saveas` left
    end
  end
  pcall(vim.api.nvim_buf_set_name, d.proposed, d.name)
end

--- A write to another name (`:w {file}`, `:saveas {file}`, `:w` after `:file {name}`) never
--- accepts: true if this is one (said; the write fails; the proposal gets its name back).
function M.other_name(d, ev)
  if ev.match == d.name then
    return false
  end
  notify.say(('not written: %s is a proposal, :w (without a file name) accepts it'):format(shown(d.key)), 'warn')
  if vim.api.nvim_buf_get_name(d.proposed) ~= d.name then
    vim.schedule(function()
      restore_name(d)
    end)
  end
  M.modified_for_now(d.proposed) -- a failed write: `:wq` keeps it open
  return true
end

--- Changing a proposal's 'fileformat' (or another option that decides how it is written) makes
--- Neovim count it modified, and `:wa` would write (accept) it: it stays unmodified, edited.
function M.watch_options(d, group)
  vim.api.nvim_create_autocmd('OptionSet', {
    group = group,
    pattern = { 'fileformat', 'endofline', 'fixendofline', 'bomb', 'fileencoding' },
    callback = function()
      if vim.api.nvim_get_current_buf() == d.proposed and not d.resolved then
        d.edited = true
        vim.bo[d.proposed].modified = false
      end
    end,
  })
end

--- Say at open when the proposal's line ends differ from the file's (the review keeps the file's).
function M.line_ends_note(d, proposal_ff, same_text)
  if not (d.disk_ff and proposal_ff and proposal_ff ~= d.disk_ff) then
    return
  end
  local name = { dos = 'CRLF', unix = 'LF' }
  notify.say(
    ('%s: the proposal %s line ends (%s; the file has %s), kept as the file has them (:set ff=%s in the proposal takes %s)'):format(
      shown(d.key),
      same_text and 'differs only in' or 'also changes',
      name[proposal_ff],
      name[d.disk_ff],
      proposal_ff,
      name[proposal_ff]
    )
  )
end

return M
