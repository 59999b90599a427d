-- The Lua tool registry: what MCP clients can call in Neovim.
-- Python keeps a copy of the specs (pushed on every change) and calls `call()` per request.
local bridge = require('gemini_companion.bridge')

local M = {}

---@class GeminiTool
---@field name string
---@field description string
---@field inputSchema table
---@field execute fun(args: table): any
---@field timeout_ms integer|nil
---@field readOnly boolean|nil

---@type table<string, GeminiTool>
local registry = {}
local order = {}

local push_timer = nil

--- Tell Python the registry changed (debounced, so a burst of registrations is one update).
local function push_soon()
  if push_timer then
    push_timer:stop()
  else
    push_timer = vim.uv.new_timer()
  end
  push_timer:start(
    20,
    0,
    vim.schedule_wrap(function()
      bridge.send({ type = 'tools', tools = M.specs() })
    end)
  )
end

function M.add(tool)
  if registry[tool.name] == nil then
    table.insert(order, tool.name)
  end
  registry[tool.name] = tool
  push_soon()
end

function M.remove(name)
  if registry[name] == nil then
    return false
  end
  registry[name] = nil
  for i, n in ipairs(order) do
    if n == name then
      table.remove(order, i)
      break
    end
  end
  push_soon()
  return true
end

function M.get(name)
  return registry[name]
end

function M.specs()
  local out = {}
  for _, name in ipairs(order) do
    local t = registry[name]
    table.insert(out, {
      name = t.name,
      description = t.description,
      inputSchema = t.inputSchema,
      timeout_ms = t.timeout_ms,
      readOnly = t.readOnly,
    })
  end
  return out
end

--- Called by Python for each tools/call: returns {ok=true, result=...} or {ok=false, error=...}.
function M.call(name, args)
  local tool = registry[name]
  if not tool then
    return { ok = false, error = ('unknown tool %q'):format(name) }
  end
  local ok, result = pcall(tool.execute, args or {})
  if not ok then
    return { ok = false, error = tostring(result) }
  end
  return { ok = true, result = result }
end

-- vim.version() rebuilds the API metadata on every call (~0.5 ms): compute it once.
local nvim_version = tostring(vim.version())

-- Built-in: cheap facts about this Neovim (also the benchmark's trivial Neovim-bound tool).
M.add({
  name = 'nvim_info',
  description = 'Facts about the running Neovim: version, pid, cwd, mode, number of buffers.',
  inputSchema = { type = 'object', properties = vim.empty_dict(), additionalProperties = false },
  readOnly = true,
  execute = function()
    return {
      version = nvim_version,
      pid = vim.fn.getpid(),
      cwd = vim.fn.getcwd(-1, -1),
      mode = vim.api.nvim_get_mode().mode,
      buffers = #vim.api.nvim_list_bufs(),
    }
  end,
})

return M
