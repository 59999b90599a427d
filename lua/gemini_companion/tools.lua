-- The Lua tool registry: what MCP clients can call in Neovim.
-- Python keeps a copy of the specs (pushed on every change), validates arguments against each
-- tool's schema, and calls `call()` (through bridge.call_tool); an asynchronous tool answers
-- later through `done`, which goes back through to_host.tool_done (docs/SEAM.md).

local to_host = require('gemini_companion.to_host')
local M = {}

---@class GeminiToolSpec
---@field name string
---@field description string|nil
---@field args table<string, {type: string|nil, description: string|nil, required: boolean|nil, default: any, enum: any[]|nil, items: table|nil, minimum: number|nil, maximum: number|nil}>|nil
---@field schema table|nil a full JSON Schema (type = 'object') instead of `args`
---@field execute fun(args: table, done: fun(result: any, err: string|nil)|nil, ctx: table|nil): any
---@field async boolean|nil default: true when `execute` takes a second parameter (`done`)
---@field timeout_ms integer|nil overrides the global tool_timeout_ms
---@field read_only boolean|nil

local registry = {} ---@type table<string, table>
local order = {} ---@type string[]
local calls = {} ---@type table<integer, table> in-flight asynchronous calls

--- Names the server itself uses.
local RESERVED = { openDiff = true, closeDiff = true, companion_status = true }
local MAX_NAME = 128

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
      to_host.send_tools(M.specs())
    end)
  )
end

local JSON_TYPES = { string = true, number = true, integer = true, boolean = true, array = true, object = true }

local function args_to_schema(args)
  local props, required = {}, {}
  for name, a in pairs(args) do
    if type(name) ~= 'string' or type(a) ~= 'table' then
      error(('argument %s: expected name = { type = ..., description = ... }'):format(vim.inspect(name)), 0)
    end
    local t = a.type or 'string'
    if not JSON_TYPES[t] then
      error(('argument %q: unknown type %q'):format(name, tostring(t)), 0)
    end
    props[name] = {
      type = t,
      description = a.description,
      default = a.default,
      enum = a.enum,
      items = a.items,
      minimum = a.minimum,
      maximum = a.maximum,
    }
    if a.required then
      table.insert(required, name)
    end
  end
  table.sort(required)
  local schema = {
    type = 'object',
    properties = next(props) and props or vim.empty_dict(),
    additionalProperties = false,
  }
  if #required > 0 then
    schema.required = required
  end
  return schema
end

--- Register (or replace) a tool. Errors on a bad spec or a clash with a built-in tool.
---@param spec GeminiToolSpec
---@param opts {builtin: boolean|nil, group: string|nil}|nil
function M.register(spec, opts)
  opts = opts or {}
  if type(spec) ~= 'table' then
    error('register: expected a table', 2)
  end
  local name = spec.name
  if type(name) ~= 'string' or #name == 0 or #name > MAX_NAME or not name:match('^[%w_.%-]+$') then
    error(('register: invalid tool name %s (1-128 characters: letters, digits, _ - .)'):format(vim.inspect(name)), 2)
  end
  if RESERVED[name] then
    error(('register: %q is a tool of the companion server itself; choose another name'):format(name), 2)
  end
  local existing = registry[name]
  if existing and existing.builtin and not opts.builtin then
    error(('register: %q is a built-in tool; choose another name'):format(name), 2)
  end
  if type(spec.execute) ~= 'function' then
    error(('register: tool %q needs an execute function'):format(name), 2)
  end
  local schema = spec.schema
  if schema ~= nil then
    if type(schema) ~= 'table' or schema.type ~= 'object' then
      error(('register: tool %q: schema must be a JSON Schema table with type = "object"'):format(name), 2)
    end
  else
    local ok, result = pcall(args_to_schema, spec.args or {})
    if not ok then
      error(('register: tool %q: %s'):format(name, result), 2)
    end
    schema = result
  end
  local async = spec.async
  if async == nil then
    async = debug.getinfo(spec.execute, 'u').nparams >= 2
  end
  if existing == nil then
    table.insert(order, name)
  end
  registry[name] = {
    name = name,
    description = spec.description or '',
    inputSchema = schema,
    execute = spec.execute,
    async = async,
    timeout_ms = spec.timeout_ms,
    readOnly = spec.read_only,
    group = opts.group or 'user',
    builtin = opts.builtin or false,
  }
  push_soon()
end

--- Remove a tool; false if there was none. Built-in tools cannot be removed (disable their group).
function M.unregister(name)
  local tool = registry[name]
  if tool == nil then
    return false
  end
  if tool.builtin then
    error(('unregister: %q is a built-in tool; disable its group in setup() instead'):format(name), 2)
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
      group = t.group,
      async = t.async,
    })
  end
  return out
end

--- What users see from `require('gemini_companion').list()`.
function M.list()
  local out = {}
  for _, name in ipairs(order) do
    local t = registry[name]
    table.insert(out, { name = name, description = t.description, group = t.group, async = t.async })
  end
  return out
end

--- A tool result as it travels to Python: text as is, anything else as JSON (checked here, so a
--- function, userdata or cycle becomes a clear error instead of a failed RPC).
local function encode(result)
  if result == nil then
    return { ok = true, text = '' }
  end
  if type(result) == 'string' then
    return { ok = true, text = result }
  end
  local ok, json = pcall(vim.json.encode, result)
  if not ok then
    return { ok = false, error = 'the tool returned a value that cannot be sent as JSON: ' .. tostring(json) }
  end
  return { ok = true, json = json }
end

local function message(err)
  if type(err) == 'string' then
    return err
  end
  local ok, text = pcall(vim.inspect, err)
  return ok and text or tostring(err)
end

--- Called by Python (bridge.call_tool) for each tools/call (arguments already validated, defaults applied).
--- Returns {ok=true, text|json=...}, {ok=false, error=...} or {pending=true} (async: `done` later).
function M.call(name, args, id)
  local tool = registry[name]
  if not tool then
    return { ok = false, error = ('unknown tool %q'):format(name) }
  end
  if not tool.async then
    local ok, result = pcall(tool.execute, args)
    if not ok then
      return { ok = false, error = message(result) }
    end
    return encode(result)
  end
  local call = { finished = false, cancelled = false, on_cancel = {} }
  local immediate = nil
  local inside = true
  local function done(result, err)
    if call.finished or call.cancelled then
      return -- a second or late answer (after a timeout or a cancellation) is ignored
    end
    call.finished = true
    calls[id] = nil
    local reply = err ~= nil and { ok = false, error = message(err) } or encode(result)
    if inside then
      immediate = reply
    else
      to_host.tool_done(id, reply)
    end
  end
  local ctx = {
    id = id,
    cancelled = function()
      return call.cancelled
    end,
    on_cancel = function(fn)
      table.insert(call.on_cancel, fn)
    end,
  }
  calls[id] = call
  local ok, err = pcall(tool.execute, args, done, ctx)
  inside = false
  if not ok and not call.finished then
    call.finished = true
    calls[id] = nil
    return { ok = false, error = message(err) }
  end
  return immediate or { pending = true }
end

--- The client cancelled, or the call timed out: tell the tool, ignore its answer from now on.
function M.cancel(id, reason)
  local call = calls[id]
  if not call then
    return
  end
  calls[id] = nil
  call.cancelled = true
  for _, fn in ipairs(call.on_cancel) do
    pcall(fn, reason)
  end
end

function M.in_flight()
  return vim.tbl_count(calls)
end

-- vim.version() rebuilds the API metadata on every call (~0.5 ms): compute it once.
local nvim_version = tostring(vim.version())

M.register({
  name = 'nvim_info',
  description = 'Facts about the running Neovim: version, pid, cwd, mode, number of buffers.',
  read_only = true,
  execute = function()
    return {
      version = nvim_version,
      pid = vim.fn.getpid(),
      cwd = vim.fn.getcwd(-1, -1),
      mode = vim.api.nvim_get_mode().mode,
      buffers = #vim.api.nvim_list_bufs(),
    }
  end,
}, { builtin = true, group = 'editor' })

return M
