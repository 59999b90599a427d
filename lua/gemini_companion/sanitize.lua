-- The one filter for text we type or paste into an agent (its terminal, a tmux pane, a Claude
-- at-mention): file contents, file names, diagnostics and selections come from files anyone may
-- have written, and a terminal application reads control characters in its input as keys. A
-- paste end (ESC[201~) inside a bracketed paste lets the rest act as typed keys: Ctrl-Y switched
-- the real gemini to YOLO mode, `!` to its shell mode. So no control character passes but tab
-- and newline: ESC itself goes, whatever follows it, so no sequence can be rebuilt from the rest.
local M = {}

-- C0 controls but tab (9) and newline (10), and DEL.
local C0 = '[%z\1-\8\11-\31\127]'
-- C1 controls as UTF-8 (U+0080-U+009F): some terminals take U+009B as CSI, an escape by itself.
local C1 = '\194[\128-\159]'

--- `text` with nothing in it that a terminal application could read as a key or an escape
--- sequence. Line ends become LF: a CR is Enter to an agent's prompt (CRLF files too).
---@param text string
---@return string
function M.agent_text(text)
  return (text:gsub('\r\n', '\n'):gsub(C0, ''):gsub(C1, ''))
end

return M
