-- gemini-companion.nvim: public Lua API.
local to_host = require('gemini_companion.to_host')
local notify = require('gemini_companion.notify')
local state = require('gemini_companion.state')
local config = require('gemini_companion.config')

local M = {}

--- Configure the plugin. Settings are validated by the Python side when the server starts;
--- a bad key or value is reported once and its default is used.
---@param opts table|nil
function M.setup(opts)
  config.set(opts)
  if state.server.state == 'running' then
    notify.say('settings changed: they apply at the next start (:GeminiRestart)')
  end
end

--- The last known server state (a copy): state, url, port, clients, tools, ...
function M.status()
  return vim.deepcopy(state.server)
end

--- Register a tool that MCP clients can call (see :help gemini-companion-register).
--- Synchronous: `execute = function(args) return value end` (error() to fail).
--- Asynchronous: `execute = function(args, done, ctx) ... done(result) / done(nil, 'message') end`.
function M.register(spec)
  require('gemini_companion.tools').register(spec)
end

--- Remove a tool registered with register(); false if there was none.
function M.unregister(name)
  return require('gemini_companion.tools').unregister(name)
end

--- The registered tools: { {name, description, group, async}, ... }
function M.list()
  return require('gemini_companion.tools').list()
end

--- " + Claude" for each agent connected over its IDE channel (its profile's title, first word: the
--- status line is short).
local function connected_over_channel()
  local agents, text = require('gemini_companion.agents'), ''
  for _, name in ipairs(agents.names) do
    local profile = agents.profiles[name]
    if profile.mention and require(profile.mention).connected() then
      text = text .. ' + ' .. profile.title:match('%S+')
    end
  end
  return text
end

--- For the status line: "Gemini ● 2" (running, 2 clients; "Gemini ● 2 · 3 reviews" with 3 pending), "Gemini ○" (stopped), "Gemini …"
--- (starting), "Gemini ✗" (failed), "Gemini not installed" (:GeminiInstall not run yet).
--- Reads only Lua state: cheap enough for every redraw.
function M.statusline()
  local now = state.server.state
  if state.channel and not to_host.host_alive() then
    return 'Gemini ✗'
  end
  if now == 'running' then
    local diff = package.loaded['gemini_companion.review'] -- no review was ever opened without it
    local reviews = diff and diff.count() or 0
    local pending = reviews == 0 and '' or (' · %d review%s'):format(reviews, reviews == 1 and '' or 's')
    return 'Gemini ● ' .. tostring(state.server.client_count or 0) .. connected_over_channel() .. pending
  elseif now == 'starting' then
    return 'Gemini …'
  elseif now == 'failed' then
    return 'Gemini ✗'
  elseif now == 'not installed' then
    return 'Gemini not installed'
  end
  return 'Gemini ○'
end

--- This server as an ACP `mcpServers` entry ({type = 'http', name, url, headers}), nil while it
--- is not running (see :help gemini-companion-acp).
function M.acp_mcp_server(name)
  return require('gemini_companion.acp').mcp_server(name)
end

function M.start()
  return to_host.call('start')
end

function M.stop()
  return to_host.call('stop')
end

function M.restart()
  return to_host.call('restart')
end

--- :GeminiInstall: build the plugin's Python environment, then start the server from it.
--- :GeminiGate {install|remove} [agent] [scope]: the agent's review gate in its settings
--- (Python merges the entry into the user's file; agents/hook_entries.py).
function M.gate(op, agent, scope)
  local agents = require('gemini_companion.agents')
  local gated = agents.with_gate()
  agent = agent or agents.gate_default
  local profile = agents.profiles[agent]
  if op ~= 'install' and op ~= 'remove' then
    return require('gemini_companion.notify').say(
      ('usage: :GeminiGate {install|remove} [%s] [user|project]'):format(table.concat(gated, '|')),
      'error'
    )
  end
  if not (profile and profile.hook_entry) then
    return require('gemini_companion.notify').say(
      ('no review gate for %q: :GeminiGate knows %s'):format(agent, table.concat(gated, ', ')),
      'error'
    )
  end
  local env = { HOME = vim.env.HOME or vim.uv.os_homedir() }
  for _, name in ipairs(gated) do -- where each gate's agent keeps its settings
    for _, var in ipairs(require(agents.profiles[name].hook_entry).env or {}) do
      env[var] = vim.env[var]
    end
  end
  require('gemini_companion.to_host').call('gate', op, agent, scope or 'user', vim.fn.getcwd(-1, -1), env)
end

function M.install()
  local host, install = require('gemini_companion.host'), require('gemini_companion.install')
  notify.say('installing the Python part into ' .. vim.fn.fnamemodify(install.venv_dir(), ':~') .. ' …')
  vim.cmd.redraw()
  local ok, result = pcall(install.run)
  if not ok then
    notify.say(tostring(result):gsub('^gemini%-companion: ', ''), 'error')
    return false
  end
  if host.process and host.process.python ~= install.venv_python() and to_host.host_alive() then
    notify.say(result .. '; it is used from the next Neovim start')
  elseif host.process == nil and not host.preparing() and config.get('auto_start') ~= false then
    notify.say(result .. '; starting the server')
    to_host.call('start')
  else
    notify.say(result)
  end
  return true
end

return M
