-- The server as Neovim knows it: the state Python pushed last (see ServerLifecycle.snapshot), the
-- validated settings it sent when ready, and whether a start is on its way. Read by every
-- feature; written only by bridge.lua, which receives them.
local M = {}

---@type integer|nil the Python host's channel, once it said hello (bridge.host_hello)
M.channel = nil

--- Last state pushed by Python.
M.server = { state = 'stopped' }
---@type table|nil the validated settings (on_ready), for the editor half: context, diff, ...
M.settings = nil
--- A start was asked for and Python has not yet reported how it went (terminal/init.lua waits
--- for it before starting an agent, so the agent gets the server's variables).
M.start_pending = false
M.booted = false -- the automatic start at Neovim's start (auto_start) was asked for

return M
