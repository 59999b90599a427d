-- The seam between Lua and the Python host: what each side tells the other.
-- Python -> Lua: host_hello, start_info, on_state, on_ready, notify (all via exec_lua).
-- Lua -> Python: send() = vim.rpcnotify to the host's `gemini_companion_event` handler.
local config = require('gemini_companion.config')

local M = {}

---@type integer|nil the Python host's channel, once it said hello
M.channel = nil
---@type number|nil how long starting the Python host blocked Neovim (the first call), in ms
M.boot_block_ms = nil
--- Last state pushed by Python (see CompanionService.snapshot).
M.server = { state = 'stopped' }

local ENV_VARS = {
  'GEMINI_CLI_IDE_SERVER_PORT',
  'GEMINI_CLI_IDE_PID',
  'GEMINI_CLI_IDE_WORKSPACE_PATH',
  'GEMINI_CLI_IDE_AUTH_TOKEN',
}

function M.notify(msg, level)
  vim.notify('gemini-companion: ' .. msg, vim.log.levels[(level or 'info'):upper()] or vim.log.levels.INFO)
end

function M.host_alive()
  if not M.channel then
    return false
  end
  local ok, info = pcall(vim.api.nvim_get_chan_info, M.channel)
  return ok and info ~= nil and next(info) ~= nil
end

function M.send(event)
  if M.host_alive() then
    pcall(vim.rpcnotify, M.channel, 'gemini_companion_event', event)
  end
end

function M.host_hello(channel)
  M.channel = channel
  return { log_dir = vim.fn.stdpath('log') }
end

function M.start_info()
  local ok_tools, tools = pcall(function()
    require('gemini_companion.builtin')
    return require('gemini_companion.tools').specs()
  end)
  if not ok_tools then
    M.notify('built-in tools failed to load: ' .. tostring(tools), 'error')
  end
  return {
    config = config.raw(),
    cwd = vim.fn.getcwd(-1, -1),
    pid = vim.fn.getpid(),
    ppid = vim.uv.os_getppid(),
    env = {
      TMPDIR = vim.env.TMPDIR,
      TMP = vim.env.TMP,
      TEMP = vim.env.TEMP,
      OPENCODE_SERVER_PASSWORD = vim.env.OPENCODE_SERVER_PASSWORD,
      OPENCODE_SERVER_USERNAME = vim.env.OPENCODE_SERVER_USERNAME,
    },
    state_dir = vim.fn.stdpath('state'),
    tools = ok_tools and tools or {},
    servername = vim.v.servername,
  }
end

local function clear_env()
  for _, name in ipairs(ENV_VARS) do
    vim.env[name] = nil
  end
end

local watch_timer = nil

--- Neovim announces no host exit: while a server runs, look once a second whether the host is
--- still there, so that state, environment and status line all say it is gone (and children
--- started from now on do not get a dead server's token).
local function watch_host()
  if watch_timer then
    return
  end
  watch_timer = vim.uv.new_timer()
  watch_timer:start(
    1000,
    1000,
    vim.schedule_wrap(function()
      local state = M.server.state
      if state ~= 'running' and state ~= 'starting' then
        if watch_timer then
          watch_timer:close()
          watch_timer = nil
        end
      elseif M.channel and not M.host_alive() then
        M.on_state({ state = 'failed', error = 'the Python host process has exited (killed or crashed)' })
      end
    end)
  )
end

function M.on_state(snapshot)
  local was_running = M.server.state == 'running'
  if snapshot.state == 'running' or snapshot.state == 'starting' then
    watch_host()
  end
  snapshot.received_at = vim.uv.now()
  M.server = snapshot
  if snapshot.state == 'running' and snapshot.workspace_path then
    vim.env.GEMINI_CLI_IDE_WORKSPACE_PATH = snapshot.workspace_path
  end
  if was_running and snapshot.state ~= 'running' then
    clear_env()
    require('gemini_companion.context').stop()
    require('gemini_companion.diff').close_all()
    local hook = config.hook('on_stop')
    if hook then
      pcall(hook)
    end
    vim.api.nvim_exec_autocmds(
      'User',
      { pattern = 'GeminiServerStopped', modeline = false, data = { state = snapshot.state } }
    )
  end
  pcall(vim.cmd.redrawstatus)
end

function M.on_ready(details)
  local settings = details.settings or {}
  M.settings = settings
  require('gemini_companion.diff').configure(settings.diff)
  require('gemini_companion.context').start(settings.context)
  -- Children started from now on (:terminal, jobstart) find this server even without the file.
  vim.env.GEMINI_CLI_IDE_SERVER_PORT = tostring(details.port)
  vim.env.GEMINI_CLI_IDE_PID = tostring(details.pid)
  vim.env.GEMINI_CLI_IDE_WORKSPACE_PATH = details.workspace_path
  vim.env.GEMINI_CLI_IDE_AUTH_TOKEN = details.token
  local public = {
    url = details.url,
    port = details.port,
    pid = details.pid,
    discovery_file = details.discovery_file,
    workspace = details.workspace,
  }
  local hook = config.hook('on_ready')
  if hook then
    pcall(hook, vim.deepcopy(public))
  end
  vim.api.nvim_exec_autocmds('User', { pattern = 'GeminiServerReady', modeline = false, data = public })
  if not details.quiet then
    M.notify('server running at ' .. details.url)
  end
end

--- Whether :UpdateRemotePlugins registered us (the function is defined lazily, on FuncUndefined).
function M.registered()
  return vim.fn.exists('*GeminiCompanionCall') == 1 or vim.fn.exists('#FuncUndefined#GeminiCompanionCall') == 1
end

---@type {channel: integer, method: string}|nil a host we started ourselves after the first one died
M.own_host = nil

local HOST_CODE = 'import sys; sys.path = [p for p in sys.path if p != ""]; import neovim; neovim.start_host()'

--- Start a new Python host for this plugin, the way Neovim's provider does. Needed because
--- Neovim keeps a dead host's channel forever, so the registered function can never work again.
local function start_own_host()
  local path = nil
  for _, plugin in ipairs(vim.fn['remote#host#PluginsForHost']('python3')) do
    if plugin.path:match('gemini_companion$') then
      path = plugin.path
    end
  end
  local prog = vim.g.python3_host_prog
  if type(prog) ~= 'string' or prog == '' then
    local ok, detected = pcall(function()
      return require('vim.provider.python').detect_by_module('neovim')
    end)
    prog = ok and detected or nil
  end
  if not path or not prog then
    return nil, 'cannot find the plugin or its Python'
  end
  local ok, chan = pcall(
    vim.fn['provider#Poll'],
    { vim.fn.expand(prog), '-c', HOST_CODE, path },
    'python3',
    '$NVIM_PYTHON_LOG_FILE',
    { overlapped = true }
  )
  if not ok or chan == 0 then
    return nil, tostring(chan)
  end
  M.own_host = { channel = chan, method = path .. ':function:GeminiCompanionCall' }
  return M.own_host
end

--- Ask the Python side to do something; starts the host on first use (and again if it died).
function M.call(action, ...)
  if not M.registered() then
    M.notify('the remote plugin is not registered: run :UpdateRemotePlugins and restart Neovim', 'error')
    return false
  end
  if M.channel and not M.host_alive() then
    if action ~= 'start' and action ~= 'restart' and action ~= 'boot' then
      M.notify('the Python host has exited; :GeminiRestart starts a new one', 'error')
      return false
    end
    local host, err = start_own_host()
    if not host then
      M.notify('could not start a new Python host: ' .. tostring(err), 'error')
      return false
    end
    M.server = { state = 'stopped' }
  end
  if M.own_host then
    return pcall(vim.rpcnotify, M.own_host.channel, M.own_host.method, { action, ... })
  end
  local first = M.boot_block_ms == nil
  local t0 = vim.uv.hrtime()
  local ok, err = pcall(vim.fn.GeminiCompanionCall, action, ...)
  if first then
    -- The first call starts the Python host synchronously: how long Neovim was blocked.
    M.boot_block_ms = (vim.uv.hrtime() - t0) / 1e6
  end
  if not ok then
    M.notify('could not reach the Python host: ' .. tostring(err), 'error')
  end
  return ok
end

return M
