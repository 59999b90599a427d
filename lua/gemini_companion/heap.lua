-- Neovim's C heap, where a big review's texts leave their memory (glibc only, through LuaJIT's FFI;
-- elsewhere nothing is done). The plugin host does the same for its own (heap.py).
--
-- glibc moves two limits as big blocks are freed: the size from which a block is mapped on its own
-- (up to 32 MiB) and how much free memory a heap keeps at its top (twice that). A thread's heap is
-- given back only past the second: the thread comparing a 1 M-line review kept ~43 MiB so
-- (measured). `keep_big_blocks_apart` fixes them at 1 MiB and glibc's default, 128 KiB: a big
-- block goes back to the system when freed. The price: a big text's pages are mapped afresh each
-- time (sending an accepted 1 M-line text to the host takes ~40 ms instead of 10-20, measured).
-- And threads started from then on (the one comparing a big review) allocate from the main heap:
-- a thread's own heap kept ~2 MiB of freed pages that malloc_trim does not give back (it trims
-- only the main heap's top), measured. Neovim's other threads rarely allocate.
-- What stays inside the heaps `give_back` returns (malloc_trim).
local M = {}

local M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8 -- mallopt's parameters (malloc.h)
M.BIG_BLOCK_BYTES = 1024 * 1024
M.TOP_KEPT_BYTES = 128 * 1024

--- glibc's functions through the FFI, or nil (not LuaJIT, not Linux, not glibc).
local glibc = (function()
  local ok, ffi = pcall(require, 'ffi')
  if not (ok and jit and jit.os == 'Linux') then
    return nil
  end
  pcall(ffi.cdef, 'int mallopt(int param, int value); int malloc_trim(size_t pad);')
  local found = pcall(function()
    return ffi.C.mallopt and ffi.C.malloc_trim
  end)
  return found and ffi.C or nil
end)()

local apart = false

--- From the first big review on (process-wide settings, made once): blocks of BIG_BLOCK_BYTES or
--- more are mapped on their own, a heap keeps at most TOP_KEPT_BYTES free at its top, and new
--- threads share the main heap.
function M.keep_big_blocks_apart()
  if glibc and not apart then
    apart = true
    glibc.mallopt(M_MMAP_THRESHOLD, M.BIG_BLOCK_BYTES)
    glibc.mallopt(M_TRIM_THRESHOLD, M.TOP_KEPT_BYTES)
    glibc.mallopt(M_ARENA_MAX, 1)
  end
end

--- Give freed pages inside the heaps back to the system (~10-30 ms after a 1 M-line review).
function M.give_back()
  if glibc then
    glibc.malloc_trim(0)
  end
end

return M
