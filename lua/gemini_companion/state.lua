-- The server as Neovim knows it: the state Python pushed last (see ServerLifecycle.snapshot), the
-- validated settings it sent when ready, and whether a start is on its way. Read by every
-- feature; written only by bridge.lua, which receives them and publishes what changed to the
-- features that subscribed (plugin/gemini_companion.lua wires them): bridge requires none of them.
-- One feature's event goes the same way: a review accepted (review/ publishes, changes/ hears it).
local M = {}

---@type integer|nil the Python host's channel, once it said hello (bridge.host_hello)
M.channel = nil

--- Last state pushed by Python.
M.server = { state = 'stopped' }
---@type table|nil the validated settings (on_ready), for the editor half: context, review, changes, renamed (old keys set), ...
M.settings = nil
--- A start was asked for and Python has not yet reported how it went (terminal/init.lua waits
--- for it before starting an agent, so the agent gets the server's variables).
M.start_pending = false
M.booted = false -- the automatic start at Neovim's start (auto_start) was asked for

local subscribers = {} ---@type table<string, function[]>

--- Call `fn(...)` whenever `event` is published: 'ready' (settings), 'clients' (count), 'stopped'
--- (bridge.lua publishes these); 'review_accepted' (path, text: review/init.lua, for changes/).
function M.subscribe(event, fn)
  subscribers[event] = subscribers[event] or {}
  table.insert(subscribers[event], fn)
end

--- Tell the subscribers of `event`; one that fails is said, the others still run.
function M.publish(event, ...)
  for _, fn in ipairs(subscribers[event] or {}) do
    local ok, err = pcall(fn, ...)
    if not ok then
      require('gemini_companion.notify').say(('%s: %s'):format(event, tostring(err)), 'error')
    end
  end
end

return M
