-- User settings as given: `setup(opts)` over `vim.g.gemini_companion`.
-- Validation happens in Python (pydantic); Lua only keeps the raw tables and the callbacks.
local M = {}

--- The few defaults Lua needs before Python has validated anything (at VimEnter, before the host
--- runs). config.py owns every default; these are copies kept here alone, and
--- tests/lua/test_one_source.py fails when they differ from config.py's. Everything else Lua
--- reads from the validated settings Python sends (`bridge.on_ready`, `bridge.configure_tools`).
M.defaults = {
  -- The agent's terminal is Lua's alone (lua/gemini_companion/terminal/), usable before the server runs.
  terminal = {
    cmd = 'gemini',
    provider = 'native',
    position = 'right',
    size = 0.4,
    scope = 'global',
    tmux_target = '',
  },
  auto_start = true,
  integrations = { opencode = false, opencode_url = 'http://127.0.0.1:4096' },
  claude = { enabled = true },
  -- The review keys (review/keys.lua), for a review opened before the settings arrive (and specs).
  review = {
    keymaps = {
      accept = false,
      reject = false,
      keep_hunk = 'dp',
      drop_hunk = 'do',
      keep_all = 'dP',
      drop_all = 'dO',
      next_hunk = ']c',
      prev_hunk = '[c',
      comment = '<LocalLeader>c',
    },
  },
  -- :GeminiChanges' caps (changes/init.lua), for specs and before the settings arrive.
  changes = { max_bytes = 32 * 1024 * 1024, max_file_bytes = 1024 * 1024, max_files = 20000 },
}

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

--- A setting's raw value as the user gave it, else its default from M.defaults, else nil (for
--- the few decisions Lua makes before Python runs; unvalidated, so callers compare with the
--- value they act on, e.g. `~= false`).
function M.get(key)
  if M.user and M.user[key] ~= nil then
    return M.user[key]
  end
  local g = vim.g.gemini_companion
  if type(g) == 'table' and g[key] ~= nil then
    return g[key]
  end
  return M.defaults[key]
end

--- `section.key` as the user gave it, else its default from M.defaults.
function M.get_in(section, key)
  local given = M.get(section)
  if type(given) == 'table' and given[key] ~= nil then
    return given[key]
  end
  return M.defaults[section][key]
end

function M.hook(name)
  local fn = M.get(name)
  return type(fn) == 'function' and fn or nil
end

return M
