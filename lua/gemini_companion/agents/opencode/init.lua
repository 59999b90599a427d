-- OpenCode: register this server with OpenCode servers, by hand (:GeminiOpencodeRegister) or by
-- following sudo-tee/opencode.nvim's server as it starts and stops.
local to_host = require('gemini_companion.to_host')
local config = require('gemini_companion.config')

local M = {}

local watching = false
local current = nil ---@type string|nil the opencode.nvim server we registered with

--- Register with the OpenCode server at `url` (default: integrations.opencode_url).
function M.register(url, announce)
  url = (url and url ~= '') and url or config.get_in('integrations', 'opencode_url')
  url = url:gsub('/+$', '') -- one target per server, however it is spelled
  return to_host.call('opencode_register', url, announce ~= false)
end

--- :GeminiOpencodeRegister [url] (its profile's `commands`): the result is announced.
function M.command_register(opts)
  return M.register(opts.args, true)
end

--- Its :GeminiStatus lines: each OpenCode server we registered with, and how that went.
function M.status(s, add)
  for _, o in ipairs(s.opencode or {}) do
    add('OpenCode', ('%s: %s%s'):format(o.url, o.status, o.error and (' — ' .. o.error) or ''))
  end
end

local function on_ready(url)
  if type(url) ~= 'string' or url == '' or url == current then
    return
  end
  if current then
    to_host.call('opencode_forget', current)
  end
  current = url
  M.register(url, false)
end

local function on_stopped()
  if current then
    to_host.call('opencode_forget', current)
    current = nil
  end
end

--- Follow opencode.nvim: its state store (when it has one) and its `User OpencodeEvent:*` events.
function M.watch()
  if watching then
    return
  end
  watching = true
  local group = vim.api.nvim_create_augroup('gemini_companion_opencode', { clear = true })
  vim.api.nvim_create_autocmd('User', {
    group = group,
    pattern = 'OpencodeEvent:custom.server_ready',
    callback = function(ev)
      local data = type(ev.data) == 'table' and ev.data or {}
      on_ready(data.url or (data.port and ('http://127.0.0.1:' .. data.port)))
    end,
  })
  vim.api.nvim_create_autocmd('User', {
    group = group,
    pattern = 'OpencodeEvent:custom.server_stopped',
    callback = on_stopped,
  })
  local ok, state = pcall(require, 'opencode.state')
  if not ok or type(state) ~= 'table' then
    return
  end
  -- `state.store.subscribe` today; the top-level `state.subscribe` was removed in 2026-03.
  local subscribe = type(state.store) == 'table' and state.store.subscribe or state.subscribe
  if type(subscribe) ~= 'function' then
    return
  end
  pcall(subscribe, 'opencode_server', function(_, new)
    if new and new.url then
      on_ready(new.url)
    else
      on_stopped()
    end
  end)
  -- A server that was already up before we subscribed.
  local server = (type(state.store) == 'table' and state.store.opencode_server) or state.opencode_server
  if type(server) == 'table' and server.url then
    on_ready(server.url)
  end
end

return M
