-- Built-in tools: editor state (current file, cursor, mode, selection, cwd, windows, tabs).
local util = require('gemini_companion.builtin.util')

local VISUAL = { v = true, V = true, ['\22'] = true }

local function region(from, to, mode)
  local ok, lines = pcall(vim.fn.getregion, from, to, { type = mode })
  if not ok then
    return nil
  end
  local a, b = from, to
  if a[2] > b[2] or (a[2] == b[2] and a[3] > b[3]) then
    a, b = b, a
  end
  local buf = vim.api.nvim_get_current_buf()
  local function pos(p)
    local text = vim.api.nvim_buf_get_lines(buf, p[2] - 1, p[2], false)[1] or ''
    return { line = p[2], column = util.char_col(text, p[3] - 1) }
  end
  return { text = table.concat(lines, '\n'), start = pos(a), ['end'] = pos(b), mode = mode }
end

local function state()
  local buf = vim.api.nvim_get_current_buf()
  local win = vim.api.nvim_get_current_win()
  local mode = vim.api.nvim_get_mode().mode
  local cursor = vim.api.nvim_win_get_cursor(win)
  local line = vim.api.nvim_buf_get_lines(buf, cursor[1] - 1, cursor[1], false)[1] or ''
  local selection = vim.NIL
  if VISUAL[mode] then
    selection = region(vim.fn.getpos('v'), vim.fn.getpos('.'), mode) or vim.NIL
    if selection ~= vim.NIL then
      selection.active = true
    end
  elseif vim.fn.getpos("'<")[2] > 0 then
    selection = region(vim.fn.getpos("'<"), vim.fn.getpos("'>"), vim.fn.visualmode()) or vim.NIL
    if selection ~= vim.NIL then
      selection.active = false -- the last selection, not a live one
    end
  end
  local windows = {}
  for _, tab in ipairs(vim.api.nvim_list_tabpages()) do
    for _, w in ipairs(vim.api.nvim_tabpage_list_wins(tab)) do
      local b = vim.api.nvim_win_get_buf(w)
      table.insert(windows, {
        winid = w,
        tab = vim.api.nvim_tabpage_get_number(tab),
        bufnr = b,
        name = util.name(b) or '',
        buftype = vim.bo[b].buftype,
        current = w == win,
        floating = vim.api.nvim_win_get_config(w).relative ~= '',
      })
    end
  end
  return {
    file = util.name(buf) or '',
    bufnr = buf,
    filetype = vim.bo[buf].filetype,
    modified = vim.bo[buf].modified,
    cursor = { line = cursor[1], column = util.char_col(line, cursor[2]) },
    mode = mode,
    selection = selection,
    cwd = vim.fn.getcwd(),
    windows = windows,
    tabs = { count = #vim.api.nvim_list_tabpages(), current = vim.api.nvim_tabpage_get_number(0) },
  }
end

--- What Gemini CLI gets pushed as `ide/contextUpdate`, for an agent that can only pull (any MCP
--- client: the Antigravity CLI has no IDE channel): the file the user last focused (not the
--- agent's terminal, where the user types to it), its cursor and selection, the recent files.
local function editor_context()
  local context = require('gemini_companion.context')
  if not context.running() then
    error('editor context is off (context.enabled = false in the plugin settings)', 0)
  end
  local files = context.snapshot().openFiles
  local active = vim.iter(files):find(function(f)
    return f.isActive
  end)
  return {
    active_file = active and {
      path = active.path,
      cursor = active.cursor and { line = active.cursor.line, column = active.cursor.character } or vim.NIL,
      selected_text = active.selectedText or vim.NIL,
    } or vim.NIL,
    recent_files = vim.tbl_map(function(f)
      return f.path
    end, files),
  }
end

return {
  {
    name = 'get_editor_context',
    description = 'What the user is working on in Neovim: the file they last focused, its cursor (1-based) '
      .. 'and selected text (cut at 16 384 characters), and the files they focused recently, newest '
      .. 'first. Call it when the user says "this", "here" or "the selection", or before editing code '
      .. 'they are looking at.',
    read_only = true,
    args = {},
    execute = editor_context,
  },
  {
    name = 'get_editor_state',
    description = 'The current file, cursor (1-based line and column), mode, Visual selection (live, or the '
      .. 'last one with active = false) with its text and range, cwd, windows and tabs.',
    read_only = true,
    args = {},
    execute = state,
  },
}
