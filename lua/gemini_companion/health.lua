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

--- What discovery.py refuses on the way to the discovery directory (a link, another user's
--- folder; for root too), as one line — or nil.
local function refused_on_the_way(dir)
  for _, path in ipairs({ vim.fs.dirname(dir), dir }) do
    local st = vim.uv.fs_lstat(path)
    local why = st and st.type == 'link' and 'is a symbolic link'
      or st and st.uid ~= vim.uv.getuid() and ('belongs to uid %d'):format(st.uid)
    if why then
      return ('%s %s: the server refuses to write its discovery file there'):format(path, why)
    end
  end
end
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
    h.ok('running at ' .. tostring(s.url) .. ' with ' .. tostring(s.tools) .. ' tools')
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
  local dir = require('gemini_companion.status').discovery_dir()
  local refused = refused_on_the_way(dir)
  if refused then
    h.error(refused, { 'remove it, or set $TMPDIR to a private directory for Neovim and gemini' })
  elseif vim.uv.fs_stat(dir) then
    if vim.uv.fs_access(dir, 'W') then
      h.ok('discovery directory ' .. dir .. ' is writable')
    else
      h.error('discovery directory ' .. dir .. ' is not writable')
    end
  else
    h.info('discovery directory ' .. dir .. ' will be created at start')
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
  return true
end

-- Connection: what `gemini` will see when it looks for this Neovim ===========================

--- JSON with // and /* */ comments, as gemini reads its settings (strip-json-comments).
local function read_jsonc(path)
  if not vim.uv.fs_stat(path) then
    return nil, nil
  end
  -- read_file, not io.open: a settings file in a hostile repository may be a FIFO (open would hang)
  local read_ok, text = pcall(require('gemini_companion.builtin.util').read_file, path)
  if not read_ok then
    return nil, text
  end
  local options = { luanil = { object = true, array = true } }
  local ok, value = pcall(vim.json.decode, text, options)
  if ok and type(value) == 'table' then
    return value, nil
  end
  local out, i, n, in_string = {}, 1, #text, false
  while i <= n do
    local c, two = text:sub(i, i), text:sub(i, i + 1)
    if in_string then
      table.insert(out, two:sub(1, c == '\\' and 2 or 1))
      i = i + (c == '\\' and 2 or 1)
      in_string = c ~= '"'
    elseif two == '//' then
      i = (text:find('\n', i, true) or n + 1)
    elseif two == '/*' then
      i = (select(2, text:find('*/', i + 2, true)) or n) + 1
    else
      in_string = c == '"'
      table.insert(out, c)
      i = i + 1
    end
  end
  ok, value = pcall(vim.json.decode, table.concat(out), options)
  if not ok or type(value) ~= 'table' then
    return nil, 'not valid JSON'
  end
  return value, nil
end

local function check_gemini(h)
  local exe = vim.fn.exepath('gemini')
  if exe == '' then
    h.warn('`gemini` is not on the PATH of Neovim (and of its :terminal)', {
      'install it: npm install -g @google/gemini-cli',
    })
    return
  end
  local res = vim.system({ exe, '--version' }, { text = true }):wait(20000)
  local major, minor = (res.stdout or ''):match('(%d+)%.(%d+)%.%d+')
  local version = major and (res.stdout:match('%d+%.%d+%.%d+[%w%.%-]*')) or nil
  local first = require('gemini_companion.status').GEMINI_SEPARATE_TERMINAL
  if not version then
    h.warn(('%s --version did not say its version (exit %s)'):format(exe, tostring(res.code)))
  elseif tonumber(major) > first[1] or (tonumber(major) == first[1] and tonumber(minor) >= first[2]) then
    h.ok(
      ('gemini %s (%s): finds this Neovim from its :terminal, and from a separate terminal by workspace'):format(
        version,
        exe
      )
    )
  else
    h.warn(('gemini %s (%s) finds Neovim only when started in its :terminal'):format(version, exe), {
      ('%d.%d and newer also find it from a separate terminal: npm install -g @google/gemini-cli@latest'):format(
        unpack(first)
      ),
    })
  end
end

local function ide_enabled_in(path)
  local settings, err = read_jsonc(path)
  if not settings then
    return nil, err
  end
  local ide = type(settings.ide) == 'table' and settings.ide or {}
  return ide.enabled, nil
end

local function check_ide_setting(h)
  local home = vim.env.GEMINI_CLI_HOME
  home = (home and home ~= '') and home or vim.uv.os_homedir()
  local user_file = home .. '/.gemini/settings.json'
  local root = (state.server.workspace or {})[1] or vim.fn.getcwd(-1, -1)
  local workspace_file = root .. '/.gemini/settings.json'
  local enabled, err = ide_enabled_in(user_file)
  local where = user_file
  local ws_enabled, ws_err = ide_enabled_in(workspace_file)
  if ws_enabled ~= nil then -- the project's settings win over the user's
    enabled, where = ws_enabled, workspace_file
  end
  err = err or ws_err
  if err then
    h.warn(('%s: %s (gemini will refuse to start)'):format(err == ws_err and workspace_file or user_file, err))
  end
  if enabled == true then
    h.ok('IDE mode is on (ide.enabled in ' .. where .. '): gemini connects as it starts')
  else
    h.warn(('IDE mode is off (no `"ide": {"enabled": true}` in %s)'):format(where), {
      'gemini asks "Do you want to connect Neovim to Gemini CLI?": answer No (Yes runs /ide install, '
        .. 'which cannot work for Neovim), then type /ide enable',
      'or put {"ide": {"enabled": true}} in ' .. user_file,
    })
  end
end

--- Whether a directory could be inside both workspaces (gemini picks a file whose
--- workspacePath contains its working directory).
local function overlaps(a, b)
  local function under(x, y)
    return x == y or vim.startswith(x, y:gsub('/$', '') .. '/')
  end
  return under(a, b) or under(b, a)
end

local function pid_alive(pid)
  if type(pid) ~= 'number' or pid <= 0 then
    return false
  end
  local ok, err = vim.uv.kill(pid, 0)
  return ok == 0 or err == 'EPERM' or (type(err) == 'string' and err:find('EPERM') ~= nil)
end

--- The root of `workspace_path` (':'-separated) that overlaps one of `ours`, if any.
local function shared_root(workspace_path, ours)
  for _, theirs in ipairs(vim.split(workspace_path, ':', { trimempty = true })) do
    for _, mine in ipairs(ours) do
      if overlaps(mine, theirs) then
        return theirs
      end
    end
  end
end

local function check_other_neovims(h)
  local s = state.server
  local ours = s.workspace or { vim.fn.getcwd(-1, -1) }
  local dir = require('gemini_companion.status').discovery_dir()
  local found = false
  for name, kind in vim.fs.dir(dir) do
    local path = dir .. '/' .. name
    local file_pid = tonumber(name:match('^gemini%-ide%-server%-(%d+)%-%d+%.json$'))
    local stat = file_pid and kind == 'file' and vim.uv.fs_stat(path)
    -- gemini reads only files of its own user
    local info = stat and stat.uid == vim.uv.getuid() and read_jsonc(path) or {}
    local owner = type(info.hostPid) == 'number' and info.hostPid or file_pid
    local root = info.port ~= s.port -- (not ours, however $TMPDIR spells the path)
      and type(info.workspacePath) == 'string'
      and pid_alive(owner)
      and shared_root(info.workspacePath, ours)
    if root then
      found = true
      local who = ((info.ideInfo or {}).displayName or 'another IDE') .. ' (PID ' .. file_pid .. ')'
      h.warn(
        ('%s also serves %s: a gemini started in a separate terminal there connects to one of you (the newest PID)'):format(
          who,
          root
        ),
        { "start gemini in each Neovim's :terminal (it finds its own Neovim), or open each Neovim in its own project" }
      )
    end
  end
  if not found then
    h.ok('no other running editor serves this workspace to gemini')
  end
end

local function check_clients(h)
  local s = state.server
  if s.state ~= 'running' then
    return
  end
  local clients = s.clients or {}
  if #clients == 0 then
    h.info('no client is connected now (in gemini, /ide status says why)')
  end
  for _, c in ipairs(clients) do
    h.ok(
      ('connected now: %s %s over %s, since %s%s'):format(
        require('gemini_companion.agents').client_title(c.name),
        c.version,
        c.transport == 'ws' and "Claude Code's IDE WebSocket" or 'MCP over HTTP',
        os.date('%H:%M:%S', math.floor(c.connected_at)),
        (c.stream_open or c.transport == 'ws') and '' or ' (no event stream: it does not hear about the editor)'
      )
    )
  end
end

local function check_terminals(h)
  local status = require('gemini_companion.status')
  local dir, var = status.tmpdir()
  h.info(
    ('discovery files are in %s/gemini/ide (from %s): a gemini in a separate terminal looks there only if it has the same %s'):format(
      dir,
      var and ('$' .. var) or 'the default, as no TMPDIR is set',
      var and ('$' .. var) or 'default (no TMPDIR)'
    )
  )
  local export = status.container_export()
  if export then
    h.info(
      'Neovim runs in a container: gemini in its :terminal is told to dial 127.0.0.1; in a separate terminal run `'
        .. export
        .. '` first, or gemini dials host.docker.internal and fails ("Failed to connect to IDE companion extension")'
    )
  end
  h.info('from a separate terminal:\n    ' .. table.concat(status.separate_terminal_lines(), '\n    '))
end

local function check_connection()
  local h = vim.health
  h.start('Connection (what gemini will see)')
  check_gemini(h)
  check_ide_setting(h)
  check_clients(h)
  check_other_neovims(h)
  check_terminals(h)
  require('gemini_companion.claude_health').check(h, state.server)
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
