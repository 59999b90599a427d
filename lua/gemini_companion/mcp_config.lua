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

--- Each agent's snippet is its profile's `mcp_config` module (agents/<name>/mcp_config.lua);
--- `json` is ours, for any other client.
local JSON = {
  variables = '$%s',
  where = 'in your client',
  snippet = function(c)
    return c.json({ url = c.url, transport = 'streamable-http', headers = { Authorization = c.auth } })
  end,
}

local function modules()
  local agents = require('gemini_companion.agents')
  local found, names = {}, {}
  for _, name in ipairs(agents.with('mcp_config')) do
    found[name] = require(agents.profiles[name].mcp_config)
    names[#names + 1] = name
  end
  found.json = JSON
  names[#names + 1] = 'json'
  return found, names
end

--- The formats :GeminiMcpConfig knows, the first its default: each agent's, then `json`.
function M.formats()
  return select(2, modules())
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

--- The snippet for `format` (one of M.formats()); nil, why and how loudly when there is none.
--- `server`: the server's state (default state.server).
function M.render(format, literal, name, server)
  server = server or state.server
  if server.state ~= 'running' then
    return nil, 'the server is not running (:GeminiStart)'
  end
  local found, names = modules()
  local module = found[format]
  if not module then
    return nil, ('unknown format %q (one of: %s)'):format(tostring(format), table.concat(names, ', '))
  end
  -- Without `!` the snippet names the variables Neovim gives its :terminal, in the client's syntax.
  local variable = module.variables or '%s'
  return module.snippet({
    name = name or 'nvim',
    literal = literal,
    url = literal and server.url or ('http://127.0.0.1:%s/mcp'):format(variable:format('GEMINI_CLI_IDE_SERVER_PORT')),
    auth = 'Bearer '
      .. (literal and (vim.env.GEMINI_CLI_IDE_AUTH_TOKEN or '') or variable:format('GEMINI_CLI_IDE_AUTH_TOKEN')),
    json = json,
  })
end

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
  local format = opts.args ~= '' and opts.args or M.formats()[1]
  local text, err, level = M.render(format, opts.bang)
  local where = text and modules()[format].where
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
    if modules()[format].literal_where then
      note = ('Use it %s. %s'):format(where, note)
    end
  else
    vim.fn.setreg('"', text)
    local clipboard = vim.fn.has('clipboard') == 1 and pcall(vim.fn.setreg, '+', text)
    note = (
      'Yanked to ""%s. Use it %s.\nStart the client from Neovim\'s :terminal: it reads port and token '
      .. 'from the environment there, so it keeps working after restarts (:GeminiMcpConfig! gives literal values).'
    ):format(clipboard and ' and +' or '', where)
  end
  notify.say(('%s config:\n%s\n\n%s'):format(format, text, note))
end

return M
