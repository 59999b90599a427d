" Many lines moved between a text and a buffer by Vim itself (see lua/gemini_companion/bulk_lines.lua,
" which calls these): one string per few thousand lines crosses into Lua, never one per line.

" Append the lines of `text` (joined by `sep`, no final separator) to buffer `buf`.
" (`text` never holds NUL: Lua cuts such texts itself.)
function! gemini_companion#bulk_lines#append(buf, text, sep) abort
  return appendbufline(a:buf, '$', split(a:text, a:sep, 1))
endfunction

" Lines `first`..`last` (1-based) of buffer `buf` joined by `sep`, or v:null when one holds a NUL
" (Vim shows a NUL in a line as a NL: Lua reads those lines itself).
function! gemini_companion#bulk_lines#get(buf, first, last, sep) abort
  let lines = getbufline(a:buf, a:first, a:last)
  if match(lines, "\n") >= 0
    return v:null
  endif
  return join(lines, a:sep)
endfunction
