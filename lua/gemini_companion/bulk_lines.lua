-- Many lines between a buffer and one text, moved by Vim (autoload/gemini_companion/bulk_lines.vim):
-- a line kept as a Lua string is interned, and a million of them make LuaJIT grow its string
-- table and collect them in single steps of 50-270 ms (measured at 1 M lines); Vim's own strings
-- are freed as soon as their list is. Big reviews fill and read their buffers so, and :GeminiSend
-- reads so what it streams.
local M = {}

--- Append the lines of `text`, joined by `sep` with none after the last, to buffer `buf`. `text`
--- must hold no NUL (Vim's strings cannot carry one: such texts are cut by Lua).
function M.append(buf, text, sep)
  vim.fn['gemini_companion#bulk_lines#append'](buf, text, sep)
end

--- Lines `from`..`to` (0-based, end exclusive) of `buf` joined by `sep`: by Vim, or by Lua when a
--- line holds a NUL (Vim shows it as a NL, nvim_buf_get_lines gives it right).
function M.get(buf, from, to, sep)
  local joined = vim.fn['gemini_companion#bulk_lines#get'](buf, from + 1, to, sep)
  if joined == vim.NIL then
    return table.concat(vim.api.nvim_buf_get_lines(buf, from, to, false), sep)
  end
  return joined
end

return M
