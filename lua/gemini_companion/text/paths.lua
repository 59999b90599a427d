-- Paths as the plugin keys them and as the user reads them: shared by reviews (review/) and
-- :GeminiChanges (changes/).
local M = {}

--- `path` as the user would type it (relative to the current directory where possible).
function M.shown(path)
  return vim.fn.fnamemodify(path, ':~:.')
end

--- Absolute, without `.`, `..` and doubled slashes: how reviews are keyed (as Python does).
function M.normalise(path)
  local full = vim.fs.normalize(vim.fn.fnamemodify(path, ':p'))
  return (full:gsub('^//+', '/'))
end

return M
