-- Which Python runs the plugin's host, and starting it. Decided at the first call (see
-- how_to_host): always a host process this plugin starts itself (jobstart; nothing waits for it), from
-- the plugin's own virtualenv (:GeminiInstall) or, when :UpdateRemotePlugins registered the plugin
-- instead, from the Python Neovim's provider would use. Never Neovim's shared python3 host: Neovim
-- starts that one synchronously (~70 ms of a frozen editor), and one crash there stops every plugin's.
-- Talking to the host is to_host.lua's: it queues calls until prepare() says ready.
local notify = require('gemini_companion.notify')
local state = require('gemini_companion.state')

local M = {}

---@type {channel: integer, method: string, python: string, exited: string|nil}|nil the host process we started
M.process = nil
---@type number|nil how long starting the host (jobstart) blocked Neovim, in ms (bench reads it)
M.start_block_ms = nil
--- Why the Python side cannot run (shown by :GeminiStatus, :checkhealth and the status line):
--- {state = 'not installed'|'failed', error = long reason, headline = one short line}.
M.problem = nil

local preparing = false
local problem_told = false
--- What to_host does when the Python side cannot run (set by prepare).
local on_problem = function(_) end

-- No TLS anywhere in the host (loopback HTTP only), yet asyncio, pynvim's loop, imports `ssl` when it
-- can: OpenSSL is ~4 MiB of an idle host's memory (issue 29: at most 40 MiB before a client). aiohttp
-- and asyncio take a Python without `ssl` as it is.
local HOST_CODE = 'import sys; sys.path = [p for p in sys.path if p != ""]; sys.modules["ssl"] = sys.modules["_hashlib"] = None; '
  .. 'import pynvim; pynvim.start_host()'

local function install()
  return require('gemini_companion.install')
end

--- Whether :UpdateRemotePlugins registered us (the function is defined lazily, on FuncUndefined):
--- then Neovim's Python is meant to run the plugin. Checking never starts Neovim's shared host.
function M.registered()
  return vim.fn.exists('*GeminiCompanionCall') == 1 or vim.fn.exists('#FuncUndefined#GeminiCompanionCall') == 1
end

--- Neovim's own Python 3 provider (the documented :UpdateRemotePlugins path): python — or nil, problem.
function M.neovims_python()
  local prog = vim.g.python3_host_prog
  if type(prog) == 'string' and prog ~= '' then
    local found = vim.fn.exepath(vim.fn.expand(prog))
    if found == '' then
      return nil,
        {
          state = 'failed',
          error = ('vim.g.python3_host_prog (%s) is not an executable: fix it, or run :GeminiInstall'):format(prog),
          headline = 'python3_host_prog not found: run :GeminiInstall',
        }
    end
    return found
  end
  local ok, detected = pcall(function()
    return require('vim.provider.python').detect_by_module('neovim')
  end)
  if not (ok and detected) then
    return nil,
      {
        state = 'failed',
        error = 'Neovim finds no Python 3 with pynvim: run :GeminiInstall',
        headline = 'no Python with pynvim: run :GeminiInstall',
      }
  end
  return detected
end

--- Which Python runs the host: returns python — or nil, problem.
local function how_to_host()
  local installed, broken = install().state()
  if installed == 'installed' then
    return install().venv_python()
  elseif installed == 'broken' then
    return nil,
      {
        state = 'failed',
        error = broken .. ': run :GeminiInstall',
        headline = 'its Python is gone: run :GeminiInstall',
      }
  end
  if not M.registered() then
    return nil,
      {
        state = 'not installed',
        error = 'the Python part is not installed: run :GeminiInstall',
        headline = 'not installed: run :GeminiInstall',
      }
  end
  return M.neovims_python()
end

--- `tell`: say it even when a problem was already said since the user last asked.
local function fail(problem, tell)
  M.problem = problem
  on_problem(problem)
  if tell or not problem_told then
    problem_told = true
    notify.say(problem.headline, problem.state == 'failed' and 'error' or 'warn')
  end
  pcall(vim.cmd.redrawstatus)
end

local function exited(host)
  return { state = 'failed', error = host.exited, headline = 'the Python host exited: run :GeminiInstall' }
end

--- Start a Python host for this plugin, the way Neovim's provider does, but without blocking:
--- calls sent before it has loaded the plugin wait in its input.
local function start_host(python)
  local path = vim.fs.normalize(install().rplugin_path())
  local stderr = {}
  local host = { python = python, method = path .. ':function:GeminiCompanionCall' }
  local t0 = vim.uv.hrtime()
  local ok, chan = pcall(vim.fn.jobstart, { python, '-c', HOST_CODE, path }, {
    rpc = true,
    cwd = install().SAFE_CWD, -- nothing of the open repository on its path (it gets Neovim's cwd by RPC)
    on_stderr = function(_, data)
      for _, line in ipairs(data) do
        if line ~= '' then
          table.insert(stderr, line)
          if #stderr > 20 then
            table.remove(stderr, 1)
          end
        end
      end
    end,
    on_exit = function(_, code)
      host.exited = ('the Python host (%s) exited: %s'):format(python, stderr[#stderr] or ('exit code ' .. code))
      if M.process == host and state.channel == nil then
        -- Died before it said hello: it could not even load the plugin.
        M.process = nil
        fail(exited(host), true)
      end
    end,
  })
  M.start_block_ms = (vim.uv.hrtime() - t0) / 1e6
  if not ok or chan <= 0 then
    return nil, ('cannot start %s: %s'):format(python, tostring(chan))
  end
  host.channel = chan
  return host
end

--- Whether prepare() is still checking the chosen Python.
function M.preparing()
  return preparing
end

--- The user asked again: say the problem again, even if it was said before.
function M.tell_problems_again()
  problem_told = false
end

--- The host died (Neovim raises no event): forget it, so the next start makes a new one.
function M.forget_dead_host()
  M.process = nil
end

--- Check the chosen Python (in the background) and start the host; then `on_ready()` (M.process
--- is set), or `on_failure(problem)` (M.problem is set) — also later, if the host dies before hello.
function M.prepare(on_ready, on_failure)
  on_problem = on_failure
  M.problem = nil
  local python, why = how_to_host()
  if not python then
    return fail(why --[[@as table]], false)
  end
  preparing = true
  -- The host starts while the probe checks the same Python: each is ~0.1 s of a Python starting,
  -- and one after the other they were a third of the time to the discovery file. The host only
  -- loads pynvim and waits; nothing is sent to it until the probe found its Python fit.
  local host, start_error = start_host(python)
  install().probe(python, function(problem, short)
    preparing = false
    if problem then
      if host then
        pcall(vim.fn.jobstop, host.channel) -- never M.process: its exit says nothing more
      end
      -- Headlines stay within 68 columns: longer messages at startup stop at a hit-enter prompt.
      local whose = python == install().venv_python() and 'environment '
        or (vim.g.python3_host_prog and 'python3_host_prog ' or "Neovim's Python ")
      return fail({
        state = 'failed',
        error = problem .. ': run :GeminiInstall',
        headline = whose .. short .. ': run :GeminiInstall',
      }, false)
    end
    if not host then
      return fail({ state = 'failed', error = start_error, headline = 'could not start the Python host' }, true)
    elseif host.exited then
      return fail(exited(host), true)
    end
    M.process, M.problem = host, nil
    on_ready()
  end)
end

return M
