-- When the user last typed in a terminal (an agent's, usually): a review that arrives while they
-- type there takes focus only once they pause, so no key in flight lands in the review.
local M = {}

M.PAUSE_MS = 500

local last_key = nil ---@type integer|nil uv.now() of the last key typed in Terminal mode
local ns = nil

--- Start noticing keys (once; cheap: one comparison per key).
function M.watch()
  if ns then
    return
  end
  ns = vim.api.nvim_create_namespace('gemini_companion_typing')
  vim.on_key(function()
    if vim.api.nvim_get_mode().mode == 't' then
      last_key = vim.uv.now()
    end
  end, ns)
end

--- Whether a key was typed in Terminal mode within the last `ms` (PAUSE_MS).
function M.recent(ms)
  return last_key ~= nil and vim.uv.now() - last_key < (ms or M.PAUSE_MS)
end

--- Call `fn()` once the user has not typed in a terminal for PAUSE_MS.
function M.after_pause(fn)
  local timer = vim.uv.new_timer()
  timer:start(
    100,
    100,
    vim.schedule_wrap(function()
      if not timer:is_closing() and not M.recent() then
        timer:close()
        fn()
      end
    end)
  )
end

return M
