-- How the adapter's answers become tool answers: error texts, capped values, frames, code around
-- a line. Pure functions of their arguments (and the buffers or files they read).
local util = require('gemini_companion.builtin.util')

local M = {}

M.VALUE_MAX = 2000 -- bytes of a value shown before it is cut

--- The adapter's own error text when it gave one, else something readable.
function M.err_text(err)
  if type(err) == 'table' then
    local body = err.body and err.body.error
    if body and body.format then
      return body.format
    end
    return tostring(err.message or vim.inspect(err))
  end
  return tostring(err)
end

--- A value cut at VALUE_MAX bytes, saying how much was left out.
function M.cap(value)
  if type(value) == 'string' and #value > M.VALUE_MAX then
    return value:sub(1, M.VALUE_MAX) .. ('… [%d more bytes]'):format(#value - M.VALUE_MAX)
  end
  return value
end

--- Lines around `line` of `path` (from its buffer when loaded, else from disk), `>` marking it.
function M.code_around(path, line, radius)
  if not path or not line then
    return vim.NIL
  end
  local buf = vim.fn.bufnr(path)
  local lines
  if buf > 0 and vim.api.nvim_buf_is_loaded(buf) then
    lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  else
    local ok, read = pcall(util.read_lines, path)
    lines = ok and read or {}
  end
  local out = {}
  for i = math.max(1, line - radius), math.min(#lines, line + radius) do
    table.insert(out, ('%s%4d  %s'):format(i == line and '>' or ' ', i, lines[i]))
  end
  return table.concat(out, '\n')
end

function M.frame_info(frame)
  if not frame then
    return vim.NIL
  end
  local source = frame.source or {}
  return {
    id = frame.id,
    ['function'] = frame.name,
    file = source.path or source.name or vim.NIL,
    line = frame.line,
    column = frame.column,
  }
end

--- The names of the capabilities that are on, sorted.
function M.capabilities_on(caps)
  local on = {}
  for k, v in pairs(caps or {}) do
    if v == true then
      table.insert(on, k)
    end
  end
  table.sort(on)
  return on
end

--- The configuration named `name` in `configurations` (dap.configurations) and its filetype.
function M.find_config(configurations, name)
  for ft, list in pairs(configurations or {}) do
    for _, c in ipairs(list) do
      if c.name == name then
        return c, ft
      end
    end
  end
end

--- Every configuration name in `configurations`, sorted.
function M.config_names(configurations)
  local names = {}
  for _, list in pairs(configurations or {}) do
    for _, c in ipairs(list) do
      table.insert(names, c.name)
    end
  end
  table.sort(names)
  return names
end

return M
