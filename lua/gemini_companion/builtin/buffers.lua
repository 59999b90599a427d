-- Built-in tools: buffers (list them, read a buffer or a file range).
local util = require('gemini_companion.builtin.util')

local function list_buffers(args)
  local out = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local listed = vim.bo[buf].buflisted
    if listed or args.all then
      local loaded = vim.api.nvim_buf_is_loaded(buf)
      table.insert(out, {
        bufnr = buf,
        name = util.name(buf) or '',
        filetype = vim.bo[buf].filetype,
        buftype = vim.bo[buf].buftype,
        modified = vim.bo[buf].modified,
        loaded = loaded,
        listed = listed,
        line_count = loaded and vim.api.nvim_buf_line_count(buf) or vim.NIL,
        windows = vim.fn.win_findbuf(buf),
      })
    end
  end
  return { buffers = out, count = #out }
end

local function read(args)
  local buf, path = util.buffer(args, false)
  local lines, source
  if buf and vim.api.nvim_buf_is_loaded(buf) then
    lines, source, path = vim.api.nvim_buf_get_lines(buf, 0, -1, false), 'buffer', util.name(buf)
  else
    path = path or util.name(buf)
    if not path then
      error('this buffer has no file to read', 0)
    end
    local data = util.read_file(path)
    if data:find('\0', 1, true) then
      error(('%s looks like a binary file'):format(path), 0)
    end
    lines, source = util.split_lines(data), 'disk'
  end
  local total = #lines
  local first = args.start_line or 1
  local last = args.end_line or total
  if last < 0 then
    last = total + 1 + last
  end
  if first < 1 then
    error(('start_line must be at least 1, got %d'):format(first), 0)
  end
  if total > 0 and first > total then
    error(('start_line %d is past the end (%d lines)'):format(first, total), 0)
  end
  last = math.min(last, total)
  local chunk, size, shown = {}, 0, first - 1
  for i = first, last do
    size = size + #lines[i] + 1
    if size > args.max_bytes and i > first then
      break
    end
    table.insert(chunk, lines[i])
    shown = i
  end
  local truncated = shown < last
  local text = table.concat(chunk, '\n')
  if truncated then
    text = text
      .. ('\n[truncated: lines %d-%d not shown; read again with start_line = %d]'):format(shown + 1, last, shown + 1)
  end
  return {
    path = path or '',
    bufnr = buf or vim.NIL,
    source = source,
    modified = buf and vim.bo[buf].modified or false,
    start_line = first,
    end_line = shown,
    total_lines = total,
    truncated = truncated,
    next_start_line = truncated and shown + 1 or vim.NIL,
    text = text,
  }
end

return {
  {
    name = 'list_buffers',
    description = 'List buffers: number, name, filetype, modified, loaded, line count, windows showing it.',
    read_only = true,
    args = { all = { type = 'boolean', description = 'Include unlisted buffers', default = false } },
    execute = list_buffers,
  },
  {
    name = 'read_buffer',
    description = 'Read lines of a buffer (by number, 0 = current) or of a file (by path; an open buffer, '
      .. 'with its unsaved changes, wins over the disk). Lines are 1-based and inclusive; long reads are '
      .. 'cut at max_bytes with a clear truncation marker.',
    read_only = true,
    args = {
      bufnr = util.BUFNR,
      path = { type = 'string', description = 'File path (absolute, or relative to the cwd)' },
      start_line = { type = 'integer', description = 'First line (1-based)', default = 1 },
      end_line = { type = 'integer', description = 'Last line (inclusive); -1 = the last line' },
      max_bytes = { type = 'integer', description = 'Cap on the text returned', default = 100000 },
    },
    execute = read,
  },
}
