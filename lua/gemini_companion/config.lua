-- User settings as given: `setup(opts)` over `vim.g.gemini_companion`.
-- Validation happens in Python (pydantic); Lua only keeps the raw tables and the callbacks.
local M = {}

---@type table|nil
M.user = nil

--- Keys whose values are Lua callbacks: kept here, never sent to Python.
M.hook_keys = { on_ready = true, on_stop = true }

function M.set(opts)
  M.user = opts or {}
end

local function sanitize(value, seen)
  local kind = type(value)
  if kind == 'function' or kind == 'userdata' or kind == 'thread' then
    return '<' .. kind .. '>' -- reported by the validator as a wrong type
  end
  if kind ~= 'table' then
    return value
  end
  seen = seen or {}
  if seen[value] then
    return '<cycle>'
  end
  seen[value] = true
  local out = {}
  for k, v in pairs(value) do
    out[k] = sanitize(v, seen)
  end
  seen[value] = nil
  return out
end

--- The merged settings, without hooks, safe to send over RPC.
function M.raw()
  local merged = vim.tbl_deep_extend(
    'force',
    {},
    type(vim.g.gemini_companion) == 'table' and vim.g.gemini_companion or {},
    M.user or {}
  )
  for key in pairs(M.hook_keys) do
    merged[key] = nil
  end
  return sanitize(merged)
end

--- A setting's raw value (for the few decisions Lua makes before Python runs).
function M.get(key)
  if M.user and M.user[key] ~= nil then
    return M.user[key]
  end
  local g = vim.g.gemini_companion
  if type(g) == 'table' then
    return g[key]
  end
  return nil
end

function M.hook(name)
  local fn = M.get(name)
  return type(fn) == 'function' and fn or nil
end

return M
