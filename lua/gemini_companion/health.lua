-- :checkhealth gemini_companion
local M = {}

local function python_prog()
  local prog = vim.g.python3_host_prog
  if type(prog) == 'string' and prog ~= '' then
    return vim.fn.expand(prog)
  end
  local ok, found = pcall(vim.fn['provider#python3#Prog'])
  return ok and found ~= '' and found or nil
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
  local h = vim.health
  local bridge = require('gemini_companion.bridge')

  h.start('Neovim')
  if vim.fn.has('nvim-0.10') == 1 then
    h.ok('Neovim ' .. tostring(vim.version()))
  else
    h.error('Neovim 0.10 or newer is required')
  end

  h.start('Python host')
  local prog = python_prog()
  if not prog then
    h.error('no Python 3 provider found', { 'set vim.g.python3_host_prog to a Python with the package installed' })
  else
    local res = vim
      .system({ prog, '-c', 'import pynvim, aiohttp, mcp, pydantic, gemini_companion; print(mcp.__name__)' }, { text = true })
      :wait(15000)
    if res.code == 0 then
      h.ok(prog .. ': pynvim, aiohttp, mcp, pydantic and gemini_companion import')
    else
      h.error(prog .. ': the Python package or its dependencies are missing', {
        'install it into that Python: ' .. prog .. ' -m pip install <path to gemini-companion.nvim>',
        (res.stderr or ''):gsub('\n+$', ''):match('[^\n]*$'),
      })
    end
  end
  if bridge.registered() then
    h.ok('remote plugin registered (:UpdateRemotePlugins was run)')
  else
    h.error('remote plugin not registered', { 'run :UpdateRemotePlugins, then restart Neovim' })
  end

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
