-- The agent beside the editor: `:Gemini` (toggle) and `:GeminiFocus` for a terminal running
-- `terminal.cmd`, through a provider (native :terminal, snacks.nvim, or none for an agent the
-- user runs elsewhere). The agent inherits Neovim's environment, so it finds this Neovim's server
-- through the GEMINI_CLI_IDE_* variables bridge.on_ready sets.
local notify = require('gemini_companion.notify')
local state = require('gemini_companion.state')
local config = require('gemini_companion.config')

local M = {}

local CHOICES = {
  provider = { 'native', 'snacks', 'none' },
  position = { 'right', 'left', 'bottom', 'top', 'float' },
  scope = { 'global', 'tab' },
}

local function valid_cmd(cmd)
  if type(cmd) == 'string' then
    return vim.trim(cmd) ~= ''
  end
  return type(cmd) == 'table'
    and #cmd > 0
    and vim.iter(cmd):all(function(word)
      return type(word) == 'string' and word ~= ''
    end)
end

--- Which agent the current tab page means: its own (scope tab) or the one for all.
local function key_of(s)
  return s.scope == 'tab' and vim.api.nvim_get_current_tabpage() or 'global'
end

-- Per key: the command `:Gemini {cmd}` chose, over terminal.cmd, until another is chosen.
local chosen = {}

--- Whether the user set terminal.cmd (else the agents' profiles choose the default).
local function cmd_given()
  local given = config.get('terminal')
  return given ~= config.defaults.terminal and type(given) == 'table' and given.cmd ~= nil
end

--- The terminal settings (user's over config.lua's defaults), or nil and what is wrong. Lua
--- checks them itself: the terminal works before, and without, the Python host. `cmd` is the one
--- `:Gemini {cmd}` chose, else terminal.cmd, else the first default agent on $PATH (gemini, agy).
function M.settings()
  local s = {}
  for key in pairs(config.defaults.terminal) do
    s[key] = config.get_in('terminal', key)
  end
  for key, allowed in pairs(CHOICES) do
    if not vim.tbl_contains(allowed, s[key]) then
      return nil,
        ('terminal.%s must be one of %s (got %s)'):format(key, table.concat(allowed, ', '), vim.inspect(s[key]))
    end
  end
  if type(s.size) ~= 'number' or s.size <= 0 then
    return nil, ('terminal.size must be a number above 0 (got %s)'):format(vim.inspect(s.size))
  end
  if not valid_cmd(s.cmd) then
    return nil, ('terminal.cmd must be a command: a string or a list of words (got %s)'):format(vim.inspect(s.cmd))
  end
  if type(s.tmux_target) ~= 'string' then
    return nil, ('terminal.tmux_target must be a string (got %s)'):format(vim.inspect(s.tmux_target))
  end
  if not cmd_given() then
    s.cmd = require('gemini_companion.agents').terminal_default(s.cmd)
  end
  s.cmd = chosen[key_of(s)] or s.cmd
  return s
end

--- The agent's program name (`claude` for `{'claude', '--resume'}` or '/usr/bin/claude -c').
function M.agent_name(s)
  local first = type(s.cmd) == 'table' and s.cmd[1] or vim.split(vim.trim(s.cmd), '%s+')[1]
  return vim.fs.basename(first)
end

-- Where each agent started: the same cwd every time lets snacks find its terminal again.
local cwds = {}

local function provider(s)
  if s.provider == 'snacks' then
    local snacks = require('gemini_companion.terminal.snacks')
    if not snacks.available() then
      return nil, "terminal.provider is 'snacks' but snacks.nvim is not installed (require('snacks') failed)"
    end
    return snacks
  end
  return require('gemini_companion.terminal.native')
end

--- Settings, key and provider for an action, or nil after telling the user what is wrong.
local function prepare()
  local s, err = M.settings()
  if not s then
    notify.say(err, 'error')
    return nil
  end
  if s.provider == 'none' then
    notify.say(
      (
        "terminal.provider is 'none': run %s in your own terminal (:GeminiStatus shows what a separate "
        .. 'terminal needs to find this Neovim)'
      ):format(vim.inspect(s.cmd)),
      'warn'
    )
    return nil
  end
  local impl, perr = provider(s)
  if not impl then
    notify.say(perr, 'error')
    return nil
  end
  local key = key_of(s)
  s.cwd = cwds[key]
  if not s.cwd or not impl.buffer(key, s) then -- a new agent starts in the current directory
    s.cwd = vim.fn.getcwd(-1, s.scope == 'tab' and 0 or -1)
    cwds[key] = s.cwd
  end
  return s, key, impl
end

local SETTLE_MS = 10000 -- the longest an agent waits for a starting server (then starts anyway)

local function settling()
  return state.server.state == 'starting'
    or state.start_pending
    -- Neovim is starting and so will the server (e.g. :Gemini in the user's own VimEnter autocmd)
    or (not state.booted and config.get('auto_start') ~= false)
end

--- Call `done(true)` once `ready()` holds (checked every `every_ms`), or `done(false)` when
--- `limit_ms` passed without it.
function M.when(ready, every_ms, limit_ms, done)
  local waited, timer = 0, vim.uv.new_timer()
  timer:start(
    every_ms,
    every_ms,
    vim.schedule_wrap(function()
      waited = waited + every_ms
      if timer:is_closing() then
        return
      end
      local met = ready() and true or false
      if met or waited >= limit_ms then
        timer:close()
        done(met)
      end
    end)
  )
end

--- Run `action` now, or once a starting server is up (or failed): an agent started earlier would
--- not get the server's variables, and gemini decides once, at its start, whether it has an IDE.
local function when_server_settled(action)
  if not settling() then
    return action()
  end
  M.when(function()
    return not settling()
  end, 50, SETTLE_MS, action)
  return true
end

local starting = {} -- keys whose agent waits for the server: asking again changes nothing

--- true unless the action failed at once (and said why).
local function run(method)
  local s, key, impl = prepare()
  if not s then
    return false
  end
  if starting[key] then
    return true
  end
  local function act()
    starting[key] = nil
    local err = impl[method](key, s)
    if err then
      notify.say(err, 'error')
    end
    return err == nil
  end
  if impl.buffer(key, s) then
    return act() -- a running agent is shown or hidden at once
  end
  starting[key] = true
  require('gemini_companion.to_host').agent_starting()
  require('gemini_companion.agents.gate_off').notice(M.agent_name(s), s.cwd)
  -- The agent's own questions before its first start (gemini: turn its IDE mode on?).
  local before = require('gemini_companion.agents').profile(M.agent_name(s)).before_start
  return when_server_settled(before and function()
    return require(before).before_start(act)
  end or act)
end

--- `:Gemini {cmd}`: `cmd` is this tab page's (or every tab's) agent from now on; refused while
--- another agent runs there (its terminal would be taken for the new one). true when chosen.
local function choose(cmd)
  local s, err = M.settings()
  if not s then
    notify.say(err, 'error')
    return false
  end
  local key = key_of(s)
  local impl = s.provider ~= 'none' and provider(s)
  local running = impl and cwds[key] and impl.buffer(key, vim.tbl_extend('force', s, { cwd = cwds[key] }))
  if running and not vim.deep_equal(s.cmd, cmd) then
    notify.say(
      ('%s runs in the agent terminal: quit it first, then :Gemini %s'):format(vim.inspect(s.cmd), cmd),
      'error'
    )
    return false
  end
  chosen[key] = cmd
  return true
end

--- :Gemini [cmd] — show or hide the agent, starting it the first time (`cmd`: run that instead of
--- terminal.cmd, here from now on). false when that failed at once.
function M.toggle(cmd)
  if cmd and not choose(cmd) then
    return false
  end
  return run('toggle')
end

--- :GeminiFocus — go to the agent (showing or starting it); from inside it, hide it.
function M.focus()
  run('focus')
end

--- Hide the agent's windows in this tab page; it keeps running.
function M.hide()
  local s, key, impl = prepare()
  if s then
    impl.hide(key, s)
  end
end

--- The agent the current tab page means, for sending to it: its terminal buffer (nil if not
--- running), the settings and the provider; nil, message when there is no terminal provider.
function M.target()
  local s, err = M.settings()
  if not s then
    return nil, err
  end
  if s.provider == 'none' then
    return { settings = s }
  end
  local impl, perr = provider(s)
  if not impl then
    return nil, perr
  end
  local key = key_of(s)
  s.cwd = cwds[key] or vim.fn.getcwd(-1, s.scope == 'tab' and 0 or -1)
  return {
    settings = s,
    buf = impl.buffer(key, s),
    reveal = function()
      impl.reveal(key, s)
    end,
  }
end

-- A tab page's own agent ends with its tab page.
vim.api.nvim_create_autocmd('TabClosed', {
  group = vim.api.nvim_create_augroup('gemini_companion_terminal', { clear = true }),
  -- Scheduled: during TabClosed the closed tab page's handle is still valid.
  callback = vim.schedule_wrap(function()
    local s = M.settings()
    local impl = s and provider(s)
    for key, cwd in pairs(cwds) do
      if key ~= 'global' and not vim.api.nvim_tabpage_is_valid(key) then
        if impl then
          impl.stop(key, vim.tbl_extend('force', s, { cwd = cwd }))
        end
        cwds[key] = nil
        chosen[key] = nil
      end
    end
  end),
})

--- :checkhealth's section: the settings, the agent program, the provider, the extension.
function M.check_health(h)
  h.start('Agent beside the editor (:Gemini, :GeminiSend, :GeminiExtensionInstall)')
  local s, err = M.settings()
  if not s then
    return h.error(err)
  end
  local program = type(s.cmd) == 'table' and s.cmd[1] or vim.split(vim.trim(s.cmd), '%s+')[1]
  if s.provider == 'none' then
    h.info("terminal.provider is 'none': you run the agent yourself")
  elseif vim.fn.executable(program) == 1 then
    h.ok(('the agent %s is %s'):format(vim.inspect(s.cmd), vim.fn.exepath(program)))
  else
    h.warn(('the agent %s: %s is not an executable on $PATH'):format(vim.inspect(s.cmd), program))
  end
  local _, perr = provider(s)
  if perr then
    h.error(perr)
  end
  -- Whether each agent's model has Neovim's tools (an extension module's `check_health`, if any).
  local agents = require('gemini_companion.agents')
  for _, name in ipairs(agents.with_extension()) do
    local extension = require(agents.profiles[name].extension)
    if extension.check_health then
      extension.check_health(h)
    end
  end
end

return M
