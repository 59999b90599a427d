-- :GeminiMcpConfig — ready-to-paste configuration for other MCP clients.
-- By default the token is not printed: the snippets read it from the environment Neovim gives
-- its :terminal (GEMINI_CLI_IDE_AUTH_TOKEN / _SERVER_PORT). With `!` they carry literal values.
local bridge = require('gemini_companion.bridge')

local M = {}

M.formats = { 'gemini', 'opencode', 'claude', 'json' }

local function values(literal)
  local s = bridge.server
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

local function json(value)
  -- vim.json.encode escapes '/'; keep URLs readable.
  return (vim.json.encode(value):gsub('\\/', '/'))
end

--- The snippet for `format` ('gemini' | 'opencode' | 'claude' | 'json'); nil + error if stopped.
function M.render(format, literal, name)
  if bridge.server.state ~= 'running' then
    return nil, 'the server is not running (:GeminiStart)'
  end
  name = name or 'nvim'
  local v = values(literal)
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
  elseif format == 'claude' then
    return ('claude mcp add --transport http %s %s --header "Authorization: %s"'):format(
      name,
      v.url or v.shell_url,
      v.auth or v.shell_auth
    )
  elseif format == 'json' then
    return json({
      url = v.url or v.shell_url,
      transport = 'streamable-http',
      headers = { Authorization = v.auth or v.shell_auth },
    })
  end
  return nil, ('unknown format %q (one of: %s)'):format(tostring(format), table.concat(M.formats, ', '))
end

function M.command(opts)
  local format = opts.args ~= '' and opts.args or 'gemini'
  local text, err = M.render(format, opts.bang)
  if not text then
    bridge.notify(err, 'error')
    return
  end
  vim.fn.setreg('"', text)
  pcall(vim.fn.setreg, '+', text)
  local note = opts.bang and 'contains the secret token; '
    or "reads port and token from the environment of Neovim's :terminal (:GeminiMcpConfig! for literal values); "
  local settings = bridge.settings or {}
  local stable = settings.token_file
      and ('the token stays in %s/gemini_companion/token (token_file = true)'):format(vim.fn.stdpath('state'))
    or 'the port and token change at every start (for a stable setup: setup({ port = <n>, token_file = true }))'
  bridge.notify(('%s config (yanked):\n%s\n\nNote: %s%s.'):format(format, text, note, stable))
end

return M
