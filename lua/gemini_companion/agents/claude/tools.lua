-- Claude Code's editor-shaped IDE tools (getDiagnostics, openFile, selections, open editors,
-- dirty/save), called from Python's claude_ide.py through bridge.agent_tool with arguments already
-- checked against their schema. Each returns the JSON value Claude Code reads, or {error = why}.
local context = require('gemini_companion.context')
local util = require('gemini_companion.builtin.util')

local M = {}

local SEVERITY = { 'Error', 'Warning', 'Info', 'Hint' }

local function uri(path)
  return vim.uri_from_fname(path)
end

--- The user's loaded buffer of file `path` (absolute or relative to the working directory, as
--- given or resolved), or nil. Only a file's own buffer: never a review's proposal or "(on disk)"
--- side, which a client must not save (only the user accepts a review).
local function buffer_of(path, resolved)
  local names = { [vim.fn.fnamemodify(path, ':p')] = true, [resolved or ''] = true }
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if
      vim.api.nvim_buf_is_loaded(buf)
      and vim.bo[buf].buftype == ''
      and not vim.b[buf].gemini_diff
      and names[vim.api.nvim_buf_get_name(buf)]
    then
      return buf
    end
  end
  return nil
end

--- `path` through the one check of a client's path (util.client_path): the resolved path and
--- whether it exists, or nil and why not.
local function checked(path)
  local ok, resolved, exists = pcall(util.client_path, path)
  if not ok then
    return nil, resolved
  end
  return resolved, exists
end

local function file_buffers()
  return vim.tbl_filter(function(buf)
    return vim.api.nvim_buf_is_loaded(buf)
      and vim.bo[buf].buflisted
      and vim.bo[buf].buftype == ''
      and vim.api.nvim_buf_get_name(buf) ~= ''
  end, vim.api.nvim_list_bufs())
end

function M.getDiagnostics(args)
  local only = nil
  if args.uri then
    local ok, path = pcall(vim.uri_to_fname, args.uri)
    local resolved = ok and checked(path)
    only = resolved and buffer_of(path, resolved) or nil
    if not only then
      return { { uri = args.uri, diagnostics = {} } } -- not open: nothing known about it
    end
  end
  local by_file, order = {}, {}
  for _, d in ipairs(vim.diagnostic.get(only)) do
    local path = vim.api.nvim_buf_get_name(d.bufnr)
    -- Files only: a review's proposal buffer ("x.py (proposed)") is no file claude could read.
    if path ~= '' and vim.bo[d.bufnr].buftype == '' and not vim.b[d.bufnr].gemini_diff then
      if not by_file[path] then
        by_file[path] = { uri = uri(path), diagnostics = {} }
        table.insert(order, path)
      end
      table.insert(by_file[path].diagnostics, {
        message = d.message,
        severity = SEVERITY[d.severity] or 'Info',
        source = d.source,
        range = {
          start = { line = d.lnum, character = d.col },
          ['end'] = { line = d.end_lnum or d.lnum, character = d.end_col or d.col },
        },
      })
    end
  end
  return vim.tbl_map(function(path)
    return by_file[path]
  end, order)
end

--- The first window showing a file (not a terminal, not a review), to open files in; with none
--- (e.g. only claude's terminal), a new split beside the current window: the terminal stays.
local function editor_window()
  local current = vim.api.nvim_get_current_win()
  for _, win in ipairs({ current, unpack(vim.api.nvim_tabpage_list_wins(0)) }) do
    local buf = vim.api.nvim_win_get_buf(win)
    if vim.bo[buf].buftype == '' and not vim.b[buf].gemini_diff and vim.api.nvim_win_get_config(win).relative == '' then
      return win
    end
  end
  return vim.api.nvim_win_call(current, function()
    vim.cmd('leftabove vsplit')
    return vim.api.nvim_get_current_win()
  end)
end

--- The line (1-based) where `text` first occurs at or after line `from`, or nil.
local function find_line(buf, text, from)
  for lnum, line in ipairs(vim.api.nvim_buf_get_lines(buf, from - 1, -1, false)) do
    if line:find(text, 1, true) then
      return lnum + from - 1
    end
  end
  return nil
end

function M.openFile(args)
  -- Never :edit what the client wrote: a term:// name runs a command, a FIFO hangs Neovim, and a
  -- .gz or an archive runs another plugin's reader (util.load_file reads it as its bytes).
  local path, exists = checked(args.filePath)
  if not path then
    return { error = exists }
  end
  local open = buffer_of(args.filePath, path)
  if not exists and not open then
    return { error = 'no such file: ' .. path }
  end
  local loaded
  if not open then
    local ok, buf = pcall(util.load_file, path)
    if not ok then
      return { error = buf }
    end
    loaded = buf
    vim.bo[loaded].buflisted = true -- as :edit lists it
  end
  local win = editor_window()
  vim.api.nvim_win_call(win, function()
    if open then
      vim.api.nvim_win_set_buf(win, open)
    else
      vim.cmd.buffer(loaded) -- as :edit: the alternate file, the jump list
    end
  end)
  if args.makeFrontmost ~= false then
    vim.api.nvim_set_current_win(win)
  end
  local buf = vim.api.nvim_win_get_buf(win)
  local first = args.startText and args.startText ~= '' and find_line(buf, args.startText, 1)
  if first then
    local last = args.endText and args.endText ~= '' and find_line(buf, args.endText, first) or first
    vim.api.nvim_win_set_cursor(win, { first, 0 })
    if last ~= first and vim.api.nvim_get_current_win() == win then
      vim.cmd('normal! V' .. (last - first) .. 'j')
    end
  end
  return 'Opened file: ' .. path
end

local function selection_reply(found)
  if not found then
    return { success = false, message = 'No selection available' }
  end
  return {
    success = true,
    text = found.text,
    filePath = found.path,
    fileUrl = uri(found.path),
    selection = vim.tbl_extend('force', found.selection or {}, { isEmpty = found.text == '' }),
  }
end

function M.getCurrentSelection()
  local snapshot = context.snapshot()
  for _, file in ipairs(snapshot.openFiles) do
    if file.isActive then
      local cursor = file.cursor or { line = 1, character = 1 }
      local here = { line = cursor.line - 1, character = cursor.character - 1 }
      return selection_reply({
        path = file.path,
        text = file.selectedText or '',
        selection = file.selection or { start = here, ['end'] = here },
      })
    end
  end
  return selection_reply(nil)
end

function M.getLatestSelection()
  return selection_reply(context.latest_selection)
end

function M.getOpenEditors()
  local current = vim.api.nvim_get_current_buf()
  local tabs = {}
  for _, buf in ipairs(file_buffers()) do
    local path = vim.api.nvim_buf_get_name(buf)
    table.insert(tabs, {
      uri = uri(path),
      isActive = buf == current,
      label = vim.fn.fnamemodify(path, ':t'),
      languageId = vim.bo[buf].filetype ~= '' and vim.bo[buf].filetype or 'plaintext',
      isDirty = vim.bo[buf].modified,
    })
  end
  return { tabs = tabs }
end

--- The user's buffer of a client's filePath, or nil and the answer saying why not.
local function document(file_path)
  local path, why = checked(file_path)
  if not path then
    return nil, { success = false, filePath = file_path, message = why }
  end
  local buf = buffer_of(file_path, path)
  if not buf then
    return nil, { success = false, message = 'Document not open: ' .. file_path }
  end
  return buf
end

function M.checkDocumentDirty(args)
  local buf, refused = document(args.filePath)
  if not buf then
    return refused
  end
  return { success = true, filePath = args.filePath, isDirty = vim.bo[buf].modified, isUntitled = false }
end

function M.saveDocument(args)
  local buf, refused = document(args.filePath)
  if not buf then
    return refused
  end
  local ok, err = pcall(vim.api.nvim_buf_call, buf, function()
    vim.cmd.write()
  end)
  if not ok then
    return { success = false, filePath = args.filePath, message = 'Failed to save file: ' .. tostring(err) }
  end
  return { success = true, filePath = args.filePath, saved = true, message = 'Document saved successfully' }
end

function M.call(name, args)
  local tool = M[name]
  if name == 'call' or type(tool) ~= 'function' then
    return { error = 'unknown Claude Code tool ' .. tostring(name) }
  end
  local ok, result = pcall(tool, args or {})
  if not ok then
    return { error = name .. ' failed: ' .. tostring(result) }
  end
  return result
end

return M
