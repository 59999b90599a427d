-- A review's buffers (see review/init.lua): the editable proposal and the read-only on-disk side
-- (the split layout's), made with the file's line ends, filled at once or in slices
-- (review/fill.lua), and the proposal's text as Neovim would write it.
local lines_of = require('gemini_companion.text.lines')
local fill = require('gemini_companion.review.fill')
local diffmode = require('gemini_companion.diffmode')

local M = {}

--- The review's buffers: the proposal, then the on-disk side if its layout has one.
---@param d GeminiCompanionReview
function M.of(d)
  return { d.proposed, d.original }
end

--- The proposed buffer's text as Neovim would write it ('eol'/'fixeol', 'fileformat').
function M.buffer_text(d)
  local lines = vim.api.nvim_buf_get_lines(d.proposed, 0, -1, false)
  local nl = vim.bo[d.proposed].fileformat == 'dos' and '\r\n' or '\n'
  if #lines == 1 and lines[1] == '' then
    -- Like :w: a buffer with no line at all (the user deleted everything) is written empty; one
    -- empty line is a newline if it had one (a proposal of "\n").
    local no_line = vim.api.nvim_buf_call(d.proposed, function()
      return vim.fn.wordcount().bytes == 0
    end)
    return (vim.bo[d.proposed].eol and not no_line) and nl or ''
  end
  local text = table.concat(lines, nl)
  if vim.bo[d.proposed].eol or vim.bo[d.proposed].fixeol then
    text = text .. nl
  end
  return text
end

--- The loaded buffer of file `path`, if any.
function M.loaded(path)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.api.nvim_buf_get_name(buf) == path then
      return buf
    end
  end
end

--- The proposal's buffer, written with the file's line ends (the proposal's own for a file without
--- any). Returns it, its lines and the proposal's own line ends (nil: no line break), and whether
--- it is CRLF throughout. `big`: left empty and unmodifiable, with no undo and no filetype, for
--- review/fill.lua to fill (then M.filled); its lines are nil.
function M.proposal(d, content, exists, ft, big)
  local lines, eol, dos
  if big then
    eol, dos = fill.shape(content)
  else
    lines, eol, dos = lines_of.split(content)
  end
  local user_buf = M.loaded(d.key)
  local buf = vim.api.nvim_create_buf(false, false)
  vim.bo[buf].buftype = 'acwrite'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  vim.bo[buf].undolevels = -1 -- `u` must not go back to an empty buffer
  if not big then
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    vim.bo[buf].undolevels = -123456 -- back to the global value
  end
  d.name = diffmode.unique_name(buf, d.key .. (exists and ' (proposed)' or ' (new file)'))
  local proposal_ff = lines_of.fileformat(content, dos)
  vim.bo[buf].fileformat = d.disk_ff or proposal_ff or 'unix'
  vim.bo[buf].eol = eol
  vim.bo[buf].fixeol = user_buf and vim.bo[user_buf].fixeol or vim.go.fixeol
  if ft and not big then
    vim.bo[buf].filetype = ft
  end
  vim.bo[buf].modified = false
  vim.bo[buf].modifiable = not big
  vim.b[buf].gemini_diff = { role = 'proposed', path = d.key }
  return buf, lines, proposal_ff, dos
end

--- A big review's file was read (after its buffers were made): they take its line ends.
function M.disk_line_ends(d)
  for _, buf in ipairs(M.of(d)) do
    if d.disk_ff and vim.api.nvim_buf_is_valid(buf) then
      local bo = vim.bo[buf]
      local modifiable, readonly = bo.modifiable, bo.readonly
      bo.modifiable, bo.readonly = true, false
      bo.fileformat = d.disk_ff
      bo.modifiable, bo.readonly, bo.modified = modifiable, readonly, false
    end
  end
end

--- A big review's buffers are filled (review/fill.lua): editable, with undo and filetypes, as
--- M.proposal and M.original make them at once for smaller ones.
function M.filled(d, ft)
  local bo = vim.bo[d.proposed]
  bo.modifiable = true
  bo.undolevels = -123456 -- back to the global value
  if ft then
    for _, buf in ipairs(M.of(d)) do
      if vim.api.nvim_buf_is_valid(buf) then
        vim.bo[buf].filetype = ft
      end
    end
  end
  bo.modified = false
end

return M
