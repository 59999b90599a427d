-- :checkhealth gemini_companion
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
import pynvim, gemini_companion, gemini_companion.server
print(gemini_companion.__file__)
]]

local function verify_python(h, python, label)
  local install = require('gemini_companion.install')
  local plugin_dir = install.rplugin_path()
  local res = vim.system({ python, '-c', VERIFY, vim.fn.fnamemodify(plugin_dir, ':h') }, { text = true }):wait(30000)
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
  local bridge = require('gemini_companion.bridge')
  local state, why = install.state()
  if state == 'installed' then
    verify_python(h, install.venv_python(), "the plugin's Python environment")
    if install.outdated() then
      h.warn('requirements.txt changed since the last install (the plugin was updated)', { 'run :GeminiInstall' })
    end
  elseif state == 'broken' then
    h.error(why, { 'run :GeminiInstall' })
  elseif bridge.registered() then
    h.info("the plugin's own Python environment is not installed: using Neovim's python3 host")
    local prog = vim.g.python3_host_prog
    local python = type(prog) == 'string' and prog ~= '' and vim.fn.exepath(vim.fn.expand(prog)) or nil
    if not python then
      local ok, found = pcall(function()
        return require('vim.provider.python').detect_by_module('neovim')
      end)
      python = ok and found or nil
    end
    if not python or python == '' then
      h.error('no usable Python for the python3 host (vim.g.python3_host_prog)', { 'run :GeminiInstall' })
    else
      verify_python(h, python, 'python3_host_prog')
    end
  else
    h.error('not installed', { 'run :GeminiInstall (creates ' .. install.venv_dir() .. ')' })
  end
  if bridge.registered() then
    h.ok('remote plugin registered (:UpdateRemotePlugins was run)')
  else
    h.info('remote plugin not registered by :UpdateRemotePlugins: not needed, the plugin starts its own host')
  end
  if bridge.mode == 'own' and bridge.own_host then
    h.info('the running host was started by the plugin from ' .. bridge.own_host.python)
  end
  return true
end

local function discovery_dir()
  local tmp = vim.env.TMPDIR
  if not tmp or tmp == '' then
    tmp = (vim.env.TMP and vim.env.TMP ~= '') and vim.env.TMP or vim.env.TEMP
  end
  if not tmp or tmp == '' then
    tmp = '/tmp'
  end
  return (tmp:gsub('(.)/$', '%1')) .. '/gemini/ide'
end

function M.check()
  local h = reporter()
  if not M.check_install(h) then
    return
  end
  local bridge = require('gemini_companion.bridge')

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
  local s = bridge.server
  if bridge.channel and not bridge.host_alive() then
    h.error(
      'the Python host has exited (killed or crashed)',
      { ':GeminiRestart starts a new one; the log file may say why' }
    )
  elseif s.state == 'running' then
    h.ok('running at ' .. tostring(s.url) .. ' with ' .. tostring(s.tools) .. ' tools')
  elseif bridge.problem then
    h.error(s.state .. ': ' .. tostring(bridge.problem.error))
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
  local dir = discovery_dir()
  local stat = vim.uv.fs_stat(dir)
  if stat then
    if stat.uid ~= vim.uv.getuid() and vim.uv.getuid() ~= 0 then
      h.warn(dir .. ' belongs to another user', { 'set $TMPDIR to a private directory for Neovim and gemini' })
    elseif vim.uv.fs_access(dir, 'W') then
      h.ok('discovery directory ' .. dir .. ' is writable')
    else
      h.error('discovery directory ' .. dir .. ' is not writable')
    end
  else
    h.info('discovery directory ' .. dir .. ' will be created at start')
  end
  h.info('log file: ' .. (s.log_file or (vim.fn.stdpath('log') .. '/gemini_companion.log')))
end

return M
