-- A file's text as lines and line ends, cut as Neovim reads a file: shared by reviews (review/)
-- and :GeminiChanges (changes/); text/hunks.lua compares what this cuts.
local M = {}

--- Lines of `text`, whether it ended with a newline, and whether it used CRLF throughout.
function M.split(text)
  local lines = vim.split(text, '\n', { plain = true })
  local eol = false
  if #lines > 1 and lines[#lines] == '' then
    table.remove(lines)
    eol = true
  end
  -- Only a line a newline ends can end in CRLF: a CR at the very end of text without a final
  -- newline is the text's own ("\r" alone is one character, not an empty line).
  local ended = eol and #lines or #lines - 1
  local dos = ended > 0
  for i = 1, ended do
    if lines[i]:sub(-1) ~= '\r' then
      dos = false
      break
    end
  end
  if dos then
    for i = 1, ended do
      lines[i] = lines[i]:sub(1, -2)
    end
  end
  return lines, eol, dos
end

--- The line-end style of `text` ('dos' or 'unix'; split's `dos`), nil without any line break.
function M.fileformat(text, dos)
  return text:find('\n', 1, true) and (dos and 'dos' or 'unix') or nil
end

return M
