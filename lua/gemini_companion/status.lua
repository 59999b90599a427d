-- :GeminiStatus — everything about the server in one float (q or <Esc> closes it).
local to_host = require('gemini_companion.to_host')
local state = require('gemini_companion.state')
local env = require('gemini_companion.env')

local M = {}

--- In a container gemini dials host.docker.internal instead of 127.0.0.1 unless one of
--- env.CONTAINER_VARS is set. Neovim's own children get REMOTE_CONTAINERS from the plugin while
--- the server runs (env.lua); a gemini in a separate terminal needs this line.
---@return string|nil
function M.container_export()
  if not env.in_container() then
    return nil
  end
  for _, name in ipairs(env.CONTAINER_VARS) do
    local ours = name == 'REMOTE_CONTAINERS' and env.owns_remote_containers
    if (vim.env[name] or '') ~= '' and not ours then
      return nil -- the user's shell has it too (an ssh session, a devcontainer)
    end
  end
  return 'export REMOTE_CONTAINERS=1'
end

--- Node's os.tmpdir() as gemini computes it: where it looks for this Neovim's discovery file.
--- The Lua copy of agents/gemini/discovery.py's node_tmpdir (needed while the server is stopped too);
--- tests/lua/test_one_source.py fails when the two differ.
---@return string dir, string|nil var the variable it came from
function M.tmpdir()
  for _, name in ipairs({ 'TMPDIR', 'TMP', 'TEMP' }) do
    local value = vim.env[name]
    if value and value ~= '' then
      return (value:gsub('(.)/$', '%1')), name
    end
  end
  return '/tmp', nil
end

--- The log file: the host's, else where logsetup.py will put it (the file name is its
--- LOG_FILE_NAME; tests/lua/test_one_source.py checks that the two agree).
function M.log_file()
  return state.server.log_file or (vim.fn.stdpath('log') .. '/gemini_companion.log')
end

local function duration(seconds)
  seconds = math.max(0, math.floor(seconds))
  if seconds < 60 then
    return seconds .. 's'
  elseif seconds < 3600 then
    return ('%dm %02ds'):format(seconds / 60, seconds % 60)
  end
  return ('%dh %02dm'):format(seconds / 3600, (seconds % 3600) / 60)
end

--- One connected client, as a line of the status.
local function client_line(c)
  local agents = require('gemini_companion.agents')
  return ('  • %s %s  %s, protocol %s  since %s%s'):format(
    agents.client_title(c.name),
    c.version,
    c.transport == 'ws' and (agents.client_title(c.name) .. ' IDE (WebSocket)') or 'MCP over HTTP',
    c.protocol_version,
    os.date('%H:%M:%S', math.floor(c.connected_at)),
    (c.stream_open or c.transport == 'ws') and '' or '  (no event stream)'
  )
end

--- The host imports the tools' machinery only when the first client connects: none counted before.
local function tools_line(s)
  return s.serving == false and 'loaded when the first client connects' or tostring(s.tools or 0)
end

--- The lines of a running server `s`: its address, clients, reviews, and how to connect.
local function running_lines(s, add, lines)
  add('Shown as', s.display_name or 'Neovim')
  add('URL', s.url)
  add('Auth token', s.token_set and 'set (bearer; value not shown)' or 'none')
  add('Discovery', s.discovery_file or ('not written: ' .. tostring(s.discovery_error)))
  add('Workspace', table.concat(s.workspace or {}, ', '))
  add('Tools', tools_line(s))
  add('Uptime', duration(os.time() - (s.started_at or os.time())))
  local clients = s.clients or {}
  add('Clients', #clients == 0 and 'none connected' or tostring(#clients))
  for _, c in ipairs(clients) do
    table.insert(lines, client_line(c))
  end
  local reviews = require('gemini_companion.review').pending()
  add('Reviews', #reviews == 0 and 'none pending' or (#reviews .. ' pending (:w accepts, :q rejects)'))
  for _, r in ipairs(reviews) do
    table.insert(lines, '  • ' .. vim.fn.fnamemodify(r.path, ':~:.'))
  end
  -- Each agent's own lines: how it finds this Neovim (its profile's `status`).
  local agents = require('gemini_companion.agents')
  for _, name in ipairs(agents.with('status')) do
    require(agents.profiles[name].status).status(s, add, lines)
  end
end

--- The status as lines of text (also used by tests and :checkhealth).
function M.lines()
  local s = state.server
  local lines = {}
  local function add(label, value)
    table.insert(lines, ('%-14s %s'):format(label, value))
  end
  local now = s.state or 'stopped'
  if state.channel and not to_host.host_alive() then
    now = 'failed'
    s = vim.tbl_extend('force', s, { error = 'the Python host process has exited (killed or crashed)' })
  end
  add('State', now .. (s.error and (' — ' .. s.error) or ''))
  if now == 'running' then
    running_lines(s, add, lines)
  elseif now == 'stopped' then
    add('', 'start it with :GeminiStart')
  end
  add('Log file', M.log_file())
  return lines
end

function M.show()
  local lines = M.lines()
  local width = 20
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l) + 2)
  end
  width = math.min(width, math.max(20, vim.o.columns - 4))
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].filetype = 'gemini_companion_status'
  local win = vim.api.nvim_open_win(buf, true, {
    relative = 'editor',
    width = width,
    height = #lines,
    row = math.max(0, math.floor((vim.o.lines - #lines) / 2) - 1),
    col = math.max(0, math.floor((vim.o.columns - width) / 2)),
    style = 'minimal',
    border = 'rounded',
    title = ' Gemini companion ',
    title_pos = 'center',
  })
  for _, key in ipairs({ 'q', '<Esc>' }) do
    vim.keymap.set('n', key, function()
      pcall(vim.api.nvim_win_close, win, true)
    end, { buffer = buf, nowait = true })
  end
  return buf, win
end

return M
