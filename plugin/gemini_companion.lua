-- gemini-companion.nvim: commands and autocommands. The Python side (a remote plugin) is only
-- touched after the first screen is drawn, so it never delays startup.
local to_host = require('gemini_companion.to_host')
local notify = require('gemini_companion.notify')
if vim.g.loaded_gemini_companion then
  return
end
vim.g.loaded_gemini_companion = 1

if vim.fn.has('nvim-0.10') ~= 1 then
  -- Too old (Debian bookworm ships 0.7.2): say so once, after startup (so no hit-enter prompt),
  -- and define nothing else. Only APIs that exist in Neovim 0.7 in this block.
  local function too_old()
    local v = vim.version()
    -- Short: a longer message right after startup stops at a hit-enter prompt.
    local msg = 'gemini-companion needs Neovim >= 0.10 (this is %d.%d.%d)'
    vim.notify(msg:format(v.major, v.minor, v.patch), vim.log.levels.WARN)
  end
  if vim.v.vim_did_enter == 1 or not vim.api.nvim_create_autocmd then
    vim.schedule(too_old)
  else
    vim.api.nvim_create_autocmd('VimEnter', { once = true, callback = vim.schedule_wrap(too_old) })
  end
  return
end

-- What follows the server's state: bridge.lua publishes it (state.lua), these features act on it.
local state = require('gemini_companion.state')
state.subscribe('ready', function(settings)
  require('gemini_companion.review').configure(settings.review)
  require('gemini_companion.changes').start() -- what changes without a review, from now on
  require('gemini_companion.context').start(settings.context)
  require('gemini_companion.typing').watch() -- a review waits for a pause in the agent's terminal
  -- An agent's bundle that holds this start's address (agy's plugin with its MCP entry) follows it.
  for _, name in ipairs(require('gemini_companion.agents').with_extension()) do
    local ext = require(require('gemini_companion.agents').profiles[name].extension)
    if ext.server_started then
      ext.server_started()
    end
  end
end)
state.subscribe('clients', function(count)
  require('gemini_companion.changes').clients(count) -- an agent connected: the workspace snapshot
  if count > 0 then -- an agent connected: if its settings switch its hooks off, the review gate is off too
    require('gemini_companion.agents.gate_off').connected(state.server.clients or {})
  end
end)
state.subscribe('review_accepted', function(path, text)
  -- The agent writes this text: no change made without a review. (remember compares the text as
  -- text/hunks.lua does, CRLF and final newline aside.)
  require('gemini_companion.changes').remember(path, text)
end)
state.subscribe('stopped', function()
  require('gemini_companion.context').stop()
  require('gemini_companion.changes').stop()
  require('gemini_companion.review').close_all()
end)

local commands = {
  GeminiStart = { 'start', 'Start the companion server' },
  GeminiStop = { 'stop', 'Stop the companion server and remove its discovery file' },
  GeminiRestart = { 'restart', 'Restart the companion server (new port and token)' },
}
for name, spec in pairs(commands) do
  vim.api.nvim_create_user_command(name, function()
    to_host.call(spec[1])
  end, { desc = spec[2] })
end
vim.api.nvim_create_user_command('GeminiInstall', function()
  require('gemini_companion').install()
end, { desc = "Create or update the plugin's Python environment, then start the server" })
vim.api.nvim_create_user_command('GeminiStatus', function()
  require('gemini_companion.status').show()
end, { desc = 'Show the companion server status' })

local function diff()
  return require('gemini_companion.review')
end
vim.api.nvim_create_user_command('GeminiAccept', function(o)
  diff().accept(o.args)
end, { nargs = '?', complete = 'file', desc = 'Accept the proposed edit for [file] (like :w in its buffer)' })
vim.api.nvim_create_user_command('GeminiReject', function(o)
  diff().reject(o.args)
end, { nargs = '?', complete = 'file', desc = 'Reject the proposed edit for [file]' })
vim.api.nvim_create_user_command('GeminiRejectAll', function()
  local n = diff().reject_all()
  notify.say(n == 0 and 'no pending reviews' or ('rejected %d review%s'):format(n, n == 1 and '' or 's'))
end, { desc = 'Reject every pending proposed edit' })
vim.api.nvim_create_user_command('GeminiReviews', function()
  require('gemini_companion.review.list').show()
end, { desc = 'List every pending review (<CR> go, a accept, r reject)' })

vim.api.nvim_create_user_command('GeminiChanges', function(o)
  require('gemini_companion.changes.view').command(o.args, o.bang)
end, {
  nargs = '?',
  bang = true,
  complete = 'file',
  desc = 'Show files changed on disk without a review (do reverts a change); ! counts from now on',
})

vim.api.nvim_create_user_command('GeminiComments', function()
  require('gemini_companion.comments').quickfix()
end, { desc = 'The open review comments, in the quickfix list' })
vim.api.nvim_create_user_command('GeminiCommentsSend', function(o)
  require('gemini_companion.comments').send(o.bang)
end, { bang = true, desc = 'Send the open review comments to the agent as one prompt (!: clear the sent ones)' })
vim.api.nvim_create_user_command('GeminiTurn', function()
  require('gemini_companion.changes.view').turn()
end, { desc = "Show what the agent's last turn changed without a review" })
vim.api.nvim_create_user_command('GeminiMcpConfig', function(o)
  require('gemini_companion.mcp_config').command(o)
end, {
  nargs = '?',
  bang = true,
  complete = function()
    return require('gemini_companion.mcp_config').formats()
  end,
  desc = 'Print (and yank) MCP client config for this server; ! includes the token',
})

-- An agent's own commands: its profile's `commands` (lua/gemini_companion/agents/init.lua).
local agents = require('gemini_companion.agents')
for _, name in ipairs(agents.with('commands')) do
  for _, c in ipairs(agents.profiles[name].commands) do
    vim.api.nvim_create_user_command(c.name, function(o)
      require(c.module)[c.call](o)
    end, { nargs = c.nargs, desc = c.desc })
  end
end

-- The agent beside the editor (lua/gemini_companion/terminal/).
vim.api.nvim_create_user_command('Gemini', function(o)
  require('gemini_companion.terminal').toggle(o.args ~= '' and o.args or nil)
end, {
  nargs = '?',
  complete = function(lead)
    return vim.tbl_filter(function(name)
      return vim.startswith(name, lead)
    end, require('gemini_companion.agents').names)
  end,
  desc = 'Show or hide the agent terminal (terminal.cmd, or [cmd] from now on), starting it the first time',
})
vim.api.nvim_create_user_command('GeminiFocus', function()
  require('gemini_companion.terminal').focus()
end, { desc = 'Go to the agent terminal (showing or starting it); from inside it, hide it' })
vim.api.nvim_create_user_command('GeminiSend', function(o)
  require('gemini_companion.terminal.send').send(o)
end, { range = true, desc = "Paste the lines (Visual selection, range, or cursor line) into the agent's prompt" })
vim.api.nvim_create_user_command('GeminiAdd', function(o)
  require('gemini_companion.terminal.send').add(o)
end, {
  nargs = '?',
  range = true,
  complete = function(lead)
    return require('gemini_companion.terminal.send').complete(lead)
  end,
  desc = "Add an @mention of [file] (default: this buffer's, or in a file tree the entries on the lines)",
})
vim.api.nvim_create_user_command('GeminiSendDiagnostics', function(o)
  require('gemini_companion.terminal.send').diagnostics(o)
end, { range = true, desc = "Paste this buffer's diagnostics (with a range: of those lines) into the agent's prompt" })

-- The review gate: an agent's file edits open as reviews through its own pre-tool hook.
vim.api.nvim_create_user_command('GeminiGate', function(o)
  require('gemini_companion').gate(unpack(o.fargs))
end, {
  nargs = '*',
  complete = function(lead, line)
    local words = #vim.split(vim.trim(line:sub(1, #line - #lead)), '%s+')
    local choices = ({ { 'install', 'remove' }, agents.with_gate(), { 'user', 'project' } })[words] or {}
    return vim.tbl_filter(function(c)
      return vim.startswith(c, lead)
    end, choices)
  end,
  desc = "Install or remove the review gate in an agent's settings: {install|remove} "
    .. agents.choices(agents.with_gate(), agents.gate_default)
    .. ' [user|project]',
})

-- Our tools for an agent's model: a bundle of ours in its config (gemini's extension, agy's plugin),
-- its profile's `extension` module (lua/gemini_companion/agents/init.lua).
local function extension(o)
  local agent = o.args ~= '' and o.args or agents.with_extension()[1]
  local module = agents.profile(agent).extension
  if not module then
    local known = table.concat(agents.with_extension(), ', ')
    return notify.say(('no extension for %q (agents: %s)'):format(agent, known), 'error')
  end
  return require(module)
end
local function extension_agents(lead)
  return vim.tbl_filter(function(name)
    return vim.startswith(name, lead)
  end, agents.with_extension())
end
vim.api.nvim_create_user_command('GeminiExtensionInstall', function(o)
  local ext = extension(o)
  if ext then
    ext.command_install(o.bang)
  end
end, {
  nargs = '?',
  bang = true,
  complete = extension_agents,
  desc = "Install (or update) what gives an agent Neovim's tools, its extension or plugin (! with the MCP entry): "
    .. agents.choices(agents.with_extension(), agents.with_extension()[1]),
})
vim.api.nvim_create_user_command('GeminiExtensionUninstall', function(o)
  local ext = extension(o)
  if ext then
    ext.command_uninstall()
  end
end, {
  nargs = '?',
  complete = extension_agents,
  desc = "Remove an agent's extension or plugin: "
    .. agents.choices(agents.with_extension(), agents.with_extension()[1]),
})

local group = vim.api.nvim_create_augroup('gemini_companion', { clear = true })

local function on_enter()
  -- What an agent follows from the start (its profile's `watch`), when its setting says so.
  for _, name in ipairs(agents.with('watch')) do
    local watch = agents.profiles[name].watch
    if require('gemini_companion.config').get_in(unpack(watch.setting)) == true then
      require(watch.module).watch()
    end
  end
  if require('gemini_companion.config').get('auto_start') == false then
    return
  end
  -- Just after the first paint, so the editor shows at once.
  vim.defer_fn(function()
    to_host.call('boot')
  end, 10)
end

if vim.v.vim_did_enter == 1 then
  -- Lazy-loaded (lazy.nvim's VeryLazy, cmd, keys): VimEnter has already fired.
  on_enter()
else
  vim.api.nvim_create_autocmd('VimEnter', { group = group, once = true, callback = on_enter })
end

vim.api.nvim_create_autocmd('VimLeavePre', {
  group = group,
  callback = function()
    to_host.shutdown_host()
  end,
})

-- An agent the user starts in a terminal of their own (`:terminal claude`): the server loads what
-- serves clients now, as for one :Gemini starts, not while the agent's first connection waits (a
-- second or more, in which claude 2.1 may give up on that connection and, after a restart, on us).
vim.api.nvim_create_autocmd('TermOpen', {
  group = group,
  callback = function(ev)
    local cmd = vim.api.nvim_buf_get_name(ev.buf):match('^term://.-//%d+:(.*)$')
    local program = cmd and require('gemini_companion.terminal').agent_name({ cmd = cmd })
    if program and require('gemini_companion.agents').profiles[program] then
      to_host.agent_starting()
    end
  end,
})

vim.api.nvim_create_autocmd('DirChanged', {
  group = group,
  pattern = 'global',
  callback = function()
    to_host.dirchanged(vim.fn.getcwd(-1, -1))
  end,
})
