-- Built-in tools: diagnostics of one buffer or the whole workspace.
local util = require('gemini_companion.builtin.util')

local NAMES = { 'error', 'warning', 'info', 'hint' }
local LEVEL = { error = 1, warning = 2, info = 3, hint = 4 }

local function get(args)
  local buf = nil
  if args.bufnr ~= nil or args.path ~= nil then
    buf = util.buffer(args, false)
    if not buf then
      return { count = 0, diagnostics = {}, note = 'the file is not open in Neovim, so it has no diagnostics' }
    end
  end
  local opts = {}
  if args.severity then
    opts.severity = LEVEL[args.severity]
  elseif args.min_severity then
    opts.severity = { min = LEVEL[args.min_severity] }
  end
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(buf, opts)) do
    local path = vim.api.nvim_buf_get_name(d.bufnr)
    local text = util.line_text(d.bufnr, path, d.lnum + 1)
    local end_text = util.line_text(d.bufnr, path, (d.end_lnum or d.lnum) + 1)
    local code = d.code
    if code == nil and type(d.user_data) == 'table' and type(d.user_data.lsp) == 'table' then
      code = d.user_data.lsp.code
    end
    table.insert(out, {
      path = path,
      bufnr = d.bufnr,
      line = d.lnum + 1,
      column = util.char_col(text, d.col),
      end_line = (d.end_lnum or d.lnum) + 1,
      end_column = util.char_col(end_text, d.end_col or d.col),
      severity = NAMES[d.severity] or tostring(d.severity),
      message = d.message,
      source = d.source or vim.NIL,
      code = code ~= nil and tostring(code) or vim.NIL,
    })
  end
  table.sort(out, function(a, b)
    if a.path ~= b.path then
      return a.path < b.path
    end
    return a.line < b.line or (a.line == b.line and a.column < b.column)
  end)
  return { count = #out, diagnostics = out }
end

return {
  {
    name = 'get_diagnostics',
    description = 'Diagnostics (errors, warnings, ...) of one buffer or, without bufnr/path, of every buffer. '
      .. 'Positions are 1-based; columns count characters.',
    read_only = true,
    schema = {
      type = 'object',
      properties = {
        bufnr = util.BUFNR,
        path = { type = 'string', description = 'File path' },
        severity = { type = 'string', enum = NAMES, description = 'Only this severity' },
        min_severity = { type = 'string', enum = NAMES, description = 'This severity and worse' },
      },
      additionalProperties = false,
    },
    execute = get,
  },
}
