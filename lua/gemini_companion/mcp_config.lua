-- :GeminiMcpConfig — ready-to-paste configuration for other MCP clients.
-- By default the token is not in it: the snippets read port and token from the environment
-- Neovim gives its :terminal (GEMINI_CLI_IDE_SERVER_PORT / _AUTH_TOKEN), when the client starts,
-- so they keep working across restarts. With `!` they carry this start's literal values; those
-- are printed but never yanked: registers are written to disk by ShaDa, and + / * reach the
-- system clipboard.
local notify = require('gemini_companion.notify')
local state = require('gemini_companion.state')
local config = require('gemini_companion.config')

local M = {}

M.formats = { 'gemini', 'opencode', 'claude', 'agy', 'json' }

local function values(literal, s)
  if literal then
    return {
      url = s.url,
      auth = 'Bearer ' .. (vim.env.GEMINI_CLI_IDE_AUTH_TOKEN or ''),
    }
  end
  return {
    gemini_url = 'http://127.0.0.1:${GEMINI_CLI_IDE_SERVER_PORT}/mcp',
    gemini_auth = 'Bearer ${GEMINI_CLI_IDE_AUTH_TOKEN}',
    opencode_url = 'http://127.0.0.1:{env:GEMINI_CLI_IDE_SERVER_PORT}/mcp',
    opencode_auth = 'Bearer {env:GEMINI_CLI_IDE_AUTH_TOKEN}',
    shell_url = 'http://127.0.0.1:$GEMINI_CLI_IDE_SERVER_PORT/mcp',
    shell_auth = 'Bearer $GEMINI_CLI_IDE_AUTH_TOKEN',
  }
end

--- JSON indented by two spaces, keys sorted (our snippets are objects of strings and booleans).
local function json(value, indent)
  if type(value) ~= 'table' then
    -- vim.json.encode escapes '/'; keep URLs readable.
    return (vim.json.encode(value):gsub('\\/', '/'))
  end
  indent = indent or ''
  local inner = indent .. '  '
  local keys = vim.tbl_keys(value)
  table.sort(keys)
  local members = {}
  for _, key in ipairs(keys) do
    members[#members + 1] = ('%s%s: %s'):format(inner, json(key), json(value[key], inner))
  end
  return ('{\n%s\n%s}'):format(table.concat(members, ',\n'), indent)
end

--- The snippet for `format` (one of M.formats); nil, why and how loudly when there is none.
--- `server`: the server's state (default state.server).
function M.render(format, literal, name, server)
  server = server or state.server
  if server.state ~= 'running' then
    return nil, 'the server is not running (:GeminiStart)'
  end
  name = name or 'nvim'
  local v = values(literal, server)
  if format == 'gemini' then
    return json({
      mcpServers = {
        [name] = { httpUrl = v.url or v.gemini_url, headers = { Authorization = v.auth or v.gemini_auth } },
      },
    })
  elseif format == 'opencode' then
    return json({
      ['$schema'] = 'https://opencode.ai/config.json',
      mcp = {
        [name] = {
          type = 'remote',
          url = v.url or v.opencode_url,
          enabled = true,
          oauth = false,
          headers = { Authorization = v.auth or v.opencode_auth },
        },
      },
    })
  elseif format == 'claude' and literal then
    return ('claude mcp add --transport http %s %s --header "Authorization: %s"'):format(name, v.url, v.auth)
  elseif format == 'claude' then
    -- `claude mcp add` would store the values the shell expands now, dead at our next start;
    -- Claude Code expands ${VAR} in a project's .mcp.json each time it starts.
    return json({
      mcpServers = {
        [name] = { type = 'http', url = v.gemini_url, headers = { Authorization = v.gemini_auth } },
      },
    })
  elseif format == 'agy' and literal then
    -- `serverUrl`: the key both of agy's docs accept (one also names `url`, the other `httpUrl`).
    return json({ mcpServers = { [name] = { serverUrl = v.url, headers = { Authorization = v.auth } } } })
  elseif format == 'agy' then
    -- agy's docs name no ${VAR} expansion in mcp_config.json: an entry that works holds the token.
    return nil,
      "agy's mcp_config.json reads no environment variables (its docs name none), so an entry that works "
        .. 'holds the token itself: :GeminiMcpConfig! agy prints one (not yanked), best with '
        .. 'setup({ port = <n>, token_file = true }) so that the port stays',
      'warn'
  elseif format == 'json' then
    return json({
      url = v.url or v.shell_url,
      transport = 'streamable-http',
      headers = { Authorization = v.auth or v.shell_auth },
    })
  end
  return nil, ('unknown format %q (one of: %s)'):format(tostring(format), table.concat(M.formats, ', '))
end

local WHERE = {
  gemini = 'in ~/.gemini/settings.json',
  opencode = 'in opencode.json',
  claude = "in .mcp.json at your project's root (not `claude mcp add`: it would keep this start's port and token)",
  agy = "in agy's ~/.gemini/config/mcp_config.json or the workspace's .agents/mcp_config.json",
  json = 'in your client',
}

--- What keeps the literal values valid, for the note under them.
local function lifetime()
  local settings = state.settings or {}
  local port = tonumber(config.get('port')) or 0
  if settings.token_file and port ~= 0 then
    return ('the port stays (port = %d); the token stays valid across :GeminiRestart, and is new in each Neovim: read it from %s/gemini_companion/token'):format(
      port,
      vim.fn.stdpath('state')
    )
  end
  return 'they stop working at the next start; for a lasting setup use setup({ port = <n>, token_file = true })'
    .. (
      settings.token_file and ' (the token already stays in ' .. vim.fn.stdpath('state') .. '/gemini_companion/token)'
      or ''
    )
end

function M.command(opts)
  local format = opts.args ~= '' and opts.args or 'gemini'
  local text, err, level = M.render(format, opts.bang)
  if not text then
    notify.say(err, level or 'error')
    return
  end
  local note
  if opts.bang then
    note = (
      'Not yanked: it holds the live token, and registers are saved to disk (ShaDa) while + and * '
      .. 'reach the system clipboard. These are literal values: %s.'
    ):format(lifetime())
    if WHERE[format] and format == 'agy' then
      note = ('Use it %s. %s'):format(WHERE[format], note)
    end
  else
    vim.fn.setreg('"', text)
    local clipboard = vim.fn.has('clipboard') == 1 and pcall(vim.fn.setreg, '+', text)
    note = (
      'Yanked to ""%s. Use it %s.\nStart the client from Neovim\'s :terminal: it reads port and token '
      .. 'from the environment there, so it keeps working after restarts (:GeminiMcpConfig! gives literal values).'
    ):format(clipboard and ' and +' or '', WHERE[format])
  end
  notify.say(('%s config:\n%s\n\n%s'):format(format, text, note))
end

return M
