-- The plugin's own Python environment: a virtualenv under stdpath('data') that the plugin creates,
-- owns and starts its host from. Why our own and not Neovim's Python: Debian/Ubuntu's python3
-- refuses `pip install` (PEP 668), and every python3 remote plugin shares one host process whose
-- packages would have to satisfy all of them at once.
--
-- Self-contained on purpose (no require() of other plugin modules): lazy.nvim runs build.lua,
-- which dofile()s this file, before the plugin is on 'runtimepath'.
local M = {}

--- Requirement stated in README and help; older versions get one message and nothing else.
M.MIN_NVIM = '0.10'
M.MIN_PYTHON = { 3, 10 }

local is_windows = vim.fn.has('win32') == 1

--- The plugin checkout this file belongs to (so Lua and Python always come from one place).
function M.root()
  local source = debug.getinfo(1, 'S').source:gsub('^@', '')
  return vim.fn.fnamemodify(source, ':p:h:h:h')
end

function M.requirements_file()
  return M.root() .. '/requirements.txt'
end

--- The directory pynvim's host loads as our remote plugin.
function M.rplugin_path()
  return M.root() .. '/rplugin/python3/gemini_companion'
end

function M.venv_dir()
  return vim.fn.stdpath('data') .. '/gemini_companion/venv'
end

function M.venv_python(venv)
  venv = venv or M.venv_dir()
  return venv .. (is_windows and '/Scripts/python.exe' or '/bin/python')
end

local function stamp_file(venv)
  return (venv or M.venv_dir()) .. '/gemini_companion.json'
end

local function requirements_digest()
  local lines = vim.fn.readfile(M.requirements_file())
  return vim.fn.sha256(table.concat(lines, '\n'))
end

--- What install() recorded: {requirements = sha256, python = 'X.Y', at = epoch} or nil.
function M.stamp()
  local ok, data = pcall(function()
    return vim.json.decode(table.concat(vim.fn.readfile(stamp_file()), '\n'))
  end)
  return ok and type(data) == 'table' and data or nil
end

--- 'installed', 'missing' (never built) or 'broken' (built, but its Python is gone), and a reason.
function M.state()
  if vim.fn.executable(M.venv_python()) == 1 then
    return 'installed'
  end
  if vim.fn.isdirectory(M.venv_dir()) == 1 then
    return 'broken', M.venv_dir() .. ' has no working Python (was its Python removed or upgraded?)'
  end
  return 'missing'
end

--- Whether requirements.txt changed since the last install (the plugin was updated without a build).
function M.outdated()
  local stamp = M.stamp()
  return stamp ~= nil and stamp.requirements ~= requirements_digest()
end

-- The distributions named in requirements.txt (checked by name, so no import-name mapping is needed).
function M.required_distributions()
  local names = {}
  for _, line in ipairs(vim.fn.readfile(M.requirements_file())) do
    local name = line:match('^%s*([%w][%w._-]*)')
    if name then
      table.insert(names, name)
    end
  end
  return names
end

-- Prints "<major>.<minor>" then the required distributions that are not installed, one a line.
-- Where every Python we start runs. `python -m venv` and `python -m pip` put the working
-- directory first on sys.path, so a venv.py or pip.py in the repository Neovim has open would run
-- (the red-team's N3): those also run isolated (-I); the -c programs drop "" from sys.path.
M.SAFE_CWD = '/'

local PROBE = [[
import sys
sys.path = [p for p in sys.path if p != ""]  # as the host does
from importlib import metadata
print("%d.%d" % sys.version_info[:2])
for name in sys.argv[1:]:
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        print(name)
]]

--- Check a Python for the plugin's needs without importing anything heavy (~50 ms).
--- Calls done(nil) when it is usable, else done(reason, short) — short has no path and fits in
--- a startup message, e.g. "lacks mcp". Synchronous when done is nil (returns reason, short).
function M.probe(python, done)
  local function judge(res)
    if res.code ~= 0 then
      local last = vim.trim(res.stderr or ''):match('[^\n]*$')
      return ('%s does not run (%s)'):format(python, last ~= '' and last or ('exit ' .. res.code)), 'fails to run'
    end
    local lines = vim.split(vim.trim(res.stdout or ''), '\n')
    local major, minor = (lines[1] or ''):match('^(%d+)%.(%d+)$')
    if not major or tonumber(major) * 100 + tonumber(minor) < M.MIN_PYTHON[1] * 100 + M.MIN_PYTHON[2] then
      local short = 'is Python ' .. (lines[1] or '?')
      return ('%s %s, not >= %d.%d'):format(python, short, M.MIN_PYTHON[1], M.MIN_PYTHON[2]), short
    end
    if #lines > 1 then
      local missing = vim.list_slice(lines, 2)
      return ('%s lacks %s'):format(python, table.concat(missing, ', ')), 'lacks ' .. missing[1]
    end
    return nil
  end
  local argv = vim.list_extend({ python, '-c', PROBE }, M.required_distributions())
  local ok, proc = pcall(vim.system, argv, { text = true, cwd = M.SAFE_CWD }, done and vim.schedule_wrap(function(res)
    done(judge(res))
  end) or nil)
  if not ok then
    local reason = ('%s cannot be started (%s)'):format(python, tostring(proc):match('[^\n]*$'))
    if not done then
      return reason, 'fails to run'
    end
    vim.schedule(function()
      done(reason, 'fails to run')
    end)
    return
  end
  if not done then
    return judge(proc:wait())
  end
end

local function python_version(python)
  if vim.fn.executable(python) ~= 1 then
    return nil
  end
  local version = 'import sys; print("%d.%d" % sys.version_info[:2])'
  local res = vim.system({ python, '-I', '-c', version }, { cwd = M.SAFE_CWD }):wait()
  local major, minor = vim.trim(res.stdout or ''):match('^(%d+)%.(%d+)$')
  if res.code ~= 0 or not major then
    return nil
  end
  return tonumber(major), tonumber(minor)
end

--- The Python to create the virtualenv with: vim.g.gemini_companion_python, or the first
--- python3 on PATH that is new enough.
function M.base_python()
  local wanted = vim.g.gemini_companion_python
  local candidates = { 'python3', 'python3.14', 'python3.13', 'python3.12', 'python3.11', 'python3.10', 'python' }
  if type(wanted) == 'string' and wanted ~= '' then
    candidates = { vim.fn.expand(wanted) }
  end
  local seen = {}
  for _, name in ipairs(candidates) do
    local major, minor = python_version(name)
    if major and major * 100 + minor >= M.MIN_PYTHON[1] * 100 + M.MIN_PYTHON[2] then
      return vim.fn.exepath(name) ~= '' and vim.fn.exepath(name) or name
    end
    table.insert(seen, major and ('%s is %d.%d'):format(name, major, minor) or (name .. ' not found'))
  end
  error(
    ('gemini-companion: Python >= %d.%d is required (%s); set vim.g.gemini_companion_python to one'):format(
      M.MIN_PYTHON[1],
      M.MIN_PYTHON[2],
      table.concat(seen, ', ')
    ),
    0
  )
end

local function tail(text, n)
  local lines = vim.split(vim.trim(text), '\n')
  return table.concat(vim.list_slice(lines, math.max(1, #lines - n + 1)), '\n')
end

local function run_step(what, argv)
  local res = vim.system(argv, { text = true, cwd = M.SAFE_CWD, env = { PIP_REQUIRE_VIRTUALENV = '1' } }):wait()
  if res.code ~= 0 then
    error(
      ('gemini-companion: %s failed (exit %d):\n%s'):format(
        what,
        res.code,
        tail((res.stdout or '') .. '\n' .. (res.stderr or ''), 12)
      ),
      0
    )
  end
  return res
end

--- Create (or bring up to date) the plugin's virtualenv with requirements.txt. Synchronous; raises
--- error() with the failing tool's last lines, so plugin managers show them. Returns a summary.
function M.run()
  if vim.fn.has('nvim-' .. M.MIN_NVIM) ~= 1 then
    error('gemini-companion: Neovim >= ' .. M.MIN_NVIM .. ' is required', 0)
  end
  local venv = M.venv_dir()
  local python = M.venv_python(venv)
  local created = false
  if M.state() ~= 'installed' then
    -- Missing or broken: start from nothing, and leave nothing behind if this fails.
    vim.fn.delete(venv, 'rf')
    vim.fn.mkdir(vim.fn.fnamemodify(venv, ':h'), 'p')
    local base = M.base_python()
    local ok, err = pcall(run_step, 'creating a virtualenv with ' .. base, { base, '-I', '-m', 'venv', venv })
    if not ok then
      vim.fn.delete(venv, 'rf')
      error(err, 0)
    end
    created = true
  end
  local ok, err = pcall(run_step, 'pip install -r requirements.txt', {
    python,
    '-I',
    '-m',
    'pip',
    'install',
    '--disable-pip-version-check',
    '--no-input',
    '--progress-bar',
    'off',
    '-r',
    M.requirements_file(),
  })
  if ok then
    local missing = M.probe(python)
    if missing then
      ok, err = false, 'gemini-companion: the install finished but ' .. missing
    end
  end
  if not ok then
    if created then
      vim.fn.delete(venv, 'rf')
    end
    error(err, 0)
  end
  local major, minor = python_version(python)
  vim.fn.writefile({
    vim.json.encode({ requirements = requirements_digest(), python = ('%d.%d'):format(major, minor), at = os.time() }),
  }, stamp_file(venv))
  return ('installed into %s (Python %d.%d)'):format(venv, major, minor)
end

return M
