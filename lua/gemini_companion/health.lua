-- :checkhealth gemini_companion
local to_host = require('gemini_companion.to_host')
local state = require('gemini_companion.state')
local M = {}

-- The health API of this Neovim; 0.7/0.8 have only the Vimscript one, enough to say "too old".
local function reporter()
  if vim.health and vim.health.start then
    return vim.health
  end
  local function report(kind)
    return function(msg, advice)
      if kind == 'start' or kind == 'ok' or kind == 'info' then
        vim.fn['health#report_' .. kind](msg)
      else
        vim.fn['health#report_' .. kind](msg, advice or {})
      end
    end
  end
  return {
    start = report('start'),
    ok = report('ok'),
    info = report('info'),
    warn = report('warn'),
    error = report('error'),
  }
end

-- Imports exactly what the host will: the same Python, the same plugin directory appended to
-- sys.path the way pynvim's host does, and the modules the server thread imports.
local VERIFY = [[
import sys
sys.path = [p for p in sys.path if p != ""]
sys.path.append(sys.argv[1])
import pynvim, gemini_companion, gemini_companion.instance
print(gemini_companion.__file__)
]]

local function verify_python(h, python, label)
  local install = require('gemini_companion.install')
  local plugin_dir = install.rplugin_path()
  local argv = { python, '-c', VERIFY, vim.fn.fnamemodify(plugin_dir, ':h') }
  local res = vim.system(argv, { text = true, cwd = install.SAFE_CWD }):wait(30000)
  if res.code ~= 0 then
    local last = vim.trim(res.stderr or ''):match('[^\n]*$')
    h.error(('%s (%s) cannot import the plugin: %s'):format(label, python, last ~= '' and last or res.code), {
      "run :GeminiInstall (creates or repairs the plugin's own Python environment)",
    })
    return
  end
  local loaded = vim.fs.normalize(vim.fn.fnamemodify(vim.trim(res.stdout), ':h'))
  if loaded ~= vim.fs.normalize(plugin_dir) then
    h.warn(('%s imports gemini_companion from %s, not from this plugin (%s)'):format(label, loaded, plugin_dir), {
      'an installed copy shadows the plugin: ' .. python .. ' -m pip uninstall gemini-companion-nvim',
    })
    return
  end
  h.ok(('%s (%s): pynvim, aiohttp, mcp, pydantic and gemini_companion import'):format(label, python))
end

--- Prerequisites: Neovim's version, and the Python the host runs (what :GeminiInstall sets up).
--- Returns false when Neovim is too old for anything else to be checked.
function M.check_install(h)
  h.start('Neovim')
  local v = vim.version()
  if vim.fn.has('nvim-0.10') ~= 1 then
    h.error(('Neovim 0.10 or newer is required; this is %d.%d.%d'):format(v.major, v.minor, v.patch), {
      'install a newer Neovim (https://github.com/neovim/neovim/releases)',
    })
    return false
  end
  h.ok(('Neovim %d.%d.%d'):format(v.major, v.minor, v.patch))

  h.start('Python host')
  local install = require('gemini_companion.install')
  local host = require('gemini_companion.host')
  local installed, why = install.state()
  if installed == 'installed' then
    verify_python(h, install.venv_python(), "the plugin's Python environment")
    if install.outdated() then
      h.warn('requirements.txt changed since the last install (the plugin was updated)', { 'run :GeminiInstall' })
    end
  elseif installed == 'broken' then
    h.error(why, { 'run :GeminiInstall' })
  elseif host.registered() then
    h.info("the plugin's own Python environment is not installed: its host runs from Neovim's Python")
    -- The Python the host would start with (host.lua decides; health only reports it).
    local python = host.neovims_python()
    if not python then
      h.error('no usable Python for the host (vim.g.python3_host_prog)', { 'run :GeminiInstall' })
    else
      verify_python(h, python, vim.g.python3_host_prog and 'python3_host_prog' or "Neovim's Python")
    end
  else
    h.error('not installed', { 'run :GeminiInstall (creates ' .. install.venv_dir() .. ')' })
  end
  if host.registered() then
    h.ok('remote plugin registered (:UpdateRemotePlugins was run)')
  else
    h.info('remote plugin not registered by :UpdateRemotePlugins: not needed, the plugin starts its own host')
  end
  if host.process then
    -- Never Neovim's shared python3 host: the plugin starts its own process, without blocking.
    h.info('the running host is a process of its own, started by the plugin from ' .. host.process.python)
  end
  return true
end

function M.check()
  local h = reporter()
  if not M.check_install(h) then
    return false
  end
  local host = require('gemini_companion.host')

  h.start('Debugging (nvim-dap)')
  local ok_dap = pcall(require, 'dap')
  if ok_dap then
    local n = 0
    for _, t in ipairs(require('gemini_companion.tools').list()) do
      if t.group == 'dap' then
        n = n + 1
      end
    end
    h.ok(('nvim-dap is loaded: %d dap_* tools are offered'):format(n))
  else
    h.info('nvim-dap is not installed: the dap_* tools are not offered (install mfussenegger/nvim-dap and an adapter)')
  end

  h.start('Server')
  local s = state.server
  if state.channel and not to_host.host_alive() then
    h.error(
      'the Python host has exited (killed or crashed)',
      { ':GeminiRestart starts a new one; the log file may say why' }
    )
  elseif s.state == 'running' then
    local tools = s.serving == false and ' (tools load when the first client connects)'
      or (' with ' .. tostring(s.tools) .. ' tools')
    h.ok('running at ' .. tostring(s.url) .. tools)
  elseif host.problem then
    h.error(s.state .. ': ' .. tostring(host.problem.error))
  elseif s.state == 'failed' then
    h.error('failed: ' .. tostring(s.error), { 'see the log file: ' .. tostring(s.log_file) })
  else
    h.info('state: ' .. tostring(s.state) .. ' (:GeminiStart starts it)')
  end
  if s.discovery_error then
    h.error(s.discovery_error)
  elseif s.discovery_file then
    h.ok('discovery file: ' .. s.discovery_file)
  end
  if (state.settings or {}).token_file then
    h.info(
      ('token_file: the token is in %s only while this server holds its port; it is new at every Neovim start and after :GeminiStop (kept by :GeminiRestart), so clients outside Neovim read it when they start'):format(
        vim.fn.stdpath('state') .. '/gemini_companion/token'
      ),
      {
        'on a machine others use, a fixed port can be taken by another user while Neovim is closed: '
          .. 'a client configured with it then sends that user an old token, which no server accepts any more',
      }
    )
  end
  h.info('log file: ' .. require('gemini_companion.status').log_file())
  -- Settings renamed while nothing was released: config.py still reads the old keys the user set.
  for _, names in ipairs((state.settings or {}).renamed or {}) do
    h.warn(('the setting %s is renamed %s'):format(names[1], names[2]), {
      ('set %s instead (the old name is still read, for now)'):format(names[2]),
    })
  end
  return true
end

local function check_clients(h)
  local s = state.server
  if s.state ~= 'running' then
    return
  end
  local clients = s.clients or {}
  if #clients == 0 then
    local agents = require('gemini_companion.agents')
    local hints = vim.tbl_map(function(name)
      return agents.profiles[name].not_connected
    end, agents.with('not_connected'))
    h.info('no client is connected now' .. (#hints > 0 and (' (' .. table.concat(hints, '; ') .. ')') or ''))
  end
  for _, c in ipairs(clients) do
    h.ok(
      ('connected now: %s %s over %s, since %s%s'):format(
        require('gemini_companion.agents').client_title(c.name),
        c.version,
        c.transport == 'ws' and (require('gemini_companion.agents').client_title(c.name) .. "'s IDE WebSocket")
          or 'MCP over HTTP',
        os.date('%H:%M:%S', math.floor(c.connected_at)),
        (c.stream_open or c.transport == 'ws') and '' or ' (no event stream: it does not hear about the editor)'
      )
    )
  end
end

--- Each agent's own section (its profile's `health` module), then who is connected now.
local function check_connection()
  local h = vim.health
  local agents = require('gemini_companion.agents')
  for _, name in ipairs(agents.names) do
    local module = agents.profiles[name].health
    if module then
      require(module).check(h, state.server)
    end
  end
  h.start('Clients')
  check_clients(h)
end

local check_setup = M.check
function M.check()
  -- Without a working install (or on a Neovim too old for vim.health) there is no connection to check.
  if check_setup() then
    check_connection()
  end
  if vim.health and vim.health.start then -- the agent's terminal needs no Python
    require('gemini_companion.terminal').check_health(vim.health)
  end
end

return M
