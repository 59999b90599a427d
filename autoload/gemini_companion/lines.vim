" Lines of big reviews moved between text and buffer by Vim itself (lua/gemini_companion/review/fill.lua):
" a line kept as a Lua string is interned, and a million of them make LuaJIT grow its string table
" and collect them in single steps of 50-270 ms (measured at 1 M lines); Vim's own strings are
" freed as soon as the list is. These take and give one string per few thousand lines.

" Append the lines of `text` (joined by `sep`, no final separator) to buffer `buf`.
" (`text` never holds NUL: Lua cuts such texts itself.)
function! gemini_companion#lines#append(buf, text, sep) abort
  return appendbufline(a:buf, '$', split(a:text, a:sep, 1))
endfunction

" Lines `first`..`last` (1-based) of buffer `buf` joined by `sep`, or v:null when one holds a NUL
" (Vim shows a NUL in a line as a NL: Lua reads those lines itself).
function! gemini_companion#lines#get(buf, first, last, sep) abort
  let lines = getbufline(a:buf, a:first, a:last)
  if match(lines, "\n") >= 0
    return v:null
  endif
  return join(lines, a:sep)
endfunction
