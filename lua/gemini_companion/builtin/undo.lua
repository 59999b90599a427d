-- Built-in tools: the undo tree, and the text of a buffer at any undo state — read through a
-- scratch copy, so the user's buffer, window, cursor and undo state are never touched.
local util = require('gemini_companion.builtin.util')

local function convert(entries)
  local out = {}
  for _, e in ipairs(entries or {}) do
    table.insert(out, {
      seq = e.seq,
      time = e.time,
      save = e.save or vim.NIL,
      current_head = e.curhead and true or vim.NIL,
      newest = e.newhead and true or vim.NIL,
      branches = e.alt and convert(e.alt) or vim.NIL,
    })
  end
  return out
end

--- Undo history exists only for a buffer: never load a file just to say it has none.
local function open_buffer(args)
  local buf = util.buffer(args, false)
  if not buf then
    error('the file is not open in Neovim, so it has no undo history', 0)
  end
  return buf
end

local function tree(args)
  local buf = open_buffer(args)
  local t = vim.fn.undotree(buf)
  return {
    bufnr = buf,
    path = util.name(buf) or '',
    seq_current = t.seq_cur,
    seq_last = t.seq_last,
    save_current = t.save_cur,
    save_last = t.save_last,
    time_current = t.time_cur,
    entries = convert(t.entries),
    note = 'entries are the main line, oldest first; branches hold the alternative changes that were undone',
  }
end

local function text_at(args)
  local buf = open_buffer(args)
  local t = vim.fn.undotree(buf)
  if args.seq < 0 or args.seq > t.seq_last then
    error(('no undo state %d (states are 0-%d)'):format(args.seq, t.seq_last), 0)
  end
  local current = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  if args.seq == t.seq_cur then
    return { seq = args.seq, line_count = #current, text = table.concat(current, '\n') }
  end
  local file = vim.fn.tempname()
  local scratch = vim.api.nvim_create_buf(false, true)
  local ok, err = pcall(function()
    vim.api.nvim_buf_call(buf, function()
      vim.cmd('silent wundo! ' .. vim.fn.fnameescape(file))
    end)
    vim.bo[scratch].undolevels = math.max(vim.go.undolevels, 1000)
    vim.api.nvim_buf_set_lines(scratch, 0, -1, false, current)
    vim.api.nvim_buf_call(scratch, function()
      vim.cmd('silent rundo ' .. vim.fn.fnameescape(file))
      vim.cmd('silent undo ' .. args.seq)
    end)
  end)
  local lines = ok and vim.api.nvim_buf_get_lines(scratch, 0, -1, false) or nil
  pcall(vim.api.nvim_buf_delete, scratch, { force = true })
  os.remove(file)
  if not ok then
    error('could not read that undo state: ' .. tostring(err), 0)
  end
  return { seq = args.seq, line_count = #lines, text = table.concat(lines, '\n') }
end

return {
  {
    name = 'undo_tree',
    description = 'The undo tree of a buffer: states (seq numbers, times, saves), branches and the current state.',
    read_only = true,
    args = {
      bufnr = util.BUFNR,
      path = { type = 'string', description = 'File path of an open buffer' },
    },
    execute = tree,
  },
  {
    name = 'undo_text_at',
    description = 'The text a buffer had at undo state `seq` (0 = before the first change). Read-only: the '
      .. 'buffer itself is not changed or undone.',
    read_only = true,
    args = {
      seq = { type = 'integer', description = 'Undo state number (see undo_tree)', required = true },
      bufnr = util.BUFNR,
      path = { type = 'string', description = 'File path of an open buffer' },
    },
    execute = text_at,
  },
}
