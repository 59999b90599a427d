-- A review's file on disk (see review/init.lua): the one check of a client's path, reading it
-- (at once, or off the main loop for a big review), the text the review compares with, the file
-- changing during the review, and reloading the user's buffers once the agent has written it.
local notify = require('gemini_companion.notify')
local hunks = require('gemini_companion.text.hunks')
local lines_of = require('gemini_companion.text.lines')
local paths = require('gemini_companion.text.paths')
local fill = require('gemini_companion.review.fill')
local buffers = require('gemini_companion.review.buffers')

local M = {}

--- Whether `path` exists and its size, or nil and why it cannot be reviewed. The one check of a
--- client's path (both protocols' openDiff reach here, and every accept): a plain file, never a
--- URL, a FIFO or /proc, in the workspace with tools.restrict_to_workspace.
function M.check(path)
  local checked, why = pcall(require('gemini_companion.builtin.util').client_path, path)
  if not checked then
    return nil, why
  end
  local stat = vim.uv.fs_stat(path)
  return stat ~= nil, stat and stat.size or 0
end

--- The file M.check checked (`exists`: its answer), read: its text ('' when it does not exist)
--- and whether it exists, or nil and why it cannot be read. Read here, as Neovim sees the path
--- (/proc/self/fd/N is Neovim's own), with a byte limit: a pipe, a device or a huge file must not
--- hang or exhaust Neovim.
function M.read_checked(path, exists)
  if not exists then
    return '', false
  end
  local ok, text = pcall(require('gemini_companion.builtin.util').read_file, path)
  if not ok then
    return nil, text
  end
  return text, true
end

--- The file as on disk: M.read_checked after M.check.
function M.read(path)
  local exists, why = M.check(path)
  if exists == nil then
    return nil, why
  end
  return M.read_checked(path, exists)
end

--- M.read_checked off the main loop: `done(text, exists)` or `done(nil, why)`.
function M.read_async(path, exists, done)
  if not exists then
    return done('', false)
  end
  require('gemini_companion.builtin.util').read_file_async(path, function(text, why)
    done(text, text and true or why)
  end)
end

--- Make `text` (the file on disk; '' when it does not `exists`) what review `d` compares with.
--- Returns its lines; `big`: not cut into lines (review/fill.lua does that in slices), returns
--- nil and whether it is CRLF throughout.
function M.set(d, text, exists, big)
  local lines, eol, dos
  if big then
    eol, dos = fill.shape(text)
    d.old_text = fill.compare_text(text, eol, dos)
  else
    lines, eol, dos = lines_of.split(text)
    d.old_text = hunks.text(lines)
  end
  d.disk_text, d.exists = text, exists
  d.disk_eol = eol or not exists
  d.disk_ff = lines_of.fileformat(text, dos)
  d.hunks_tick = nil -- the hunks are computed again
  return lines, dos
end

--- After an accept, Gemini CLI writes the file: reload the buffers showing it, unless they
--- hold unsaved changes (those are kept, and the user is told).
function M.reload_when_written(path)
  local before = vim.uv.fs_stat(path)
  local tries = 0
  local timer = vim.uv.new_timer()
  timer:start(
    100,
    100,
    vim.schedule_wrap(function()
      -- Ticks queued while Neovim was busy run after the one that closed the timer: done.
      if timer:is_closing() then
        return
      end
      tries = tries + 1
      local now = vim.uv.fs_stat(path)
      local changed = now
        and (
          not before
          or now.mtime.sec ~= before.mtime.sec
          or now.mtime.nsec ~= before.mtime.nsec
          or now.size ~= before.size
        )
      if not changed and tries < 100 then
        return
      end
      timer:stop()
      timer:close()
      if not changed then
        return
      end
      local buf = buffers.loaded(path)
      if not buf then
        return
      end
      if vim.bo[buf].modified then
        notify.say(
          ('%s was changed on disk; your unsaved changes in buffer %d were kept (:e! to load the new text)'):format(
            paths.shown(path),
            buf
          ),
          'warn'
        )
        return
      end
      local autoread = vim.bo[buf].autoread
      vim.bo[buf].autoread = true
      pcall(vim.cmd.checktime, buf)
      vim.bo[buf].autoread = autoread
    end)
  )
end

--- The file changed on disk during review `d`: it now compares with `text` (the hunks follow).
function M.refresh(d, text, exists)
  local old_ff = d.disk_ff
  local lines = M.set(d, text, exists)
  if d.disk_ff and vim.bo[d.proposed].fileformat == old_ff then
    vim.bo[d.proposed].fileformat = d.disk_ff -- the line ends still follow the file's
    vim.bo[d.proposed].modified = false
  end
  d.layout.refresh(d, lines, exists)
  if d.compare then
    d.compare() -- a big review: its hunks are found again off the main loop (review/fill.lua)
  end
end

return M
