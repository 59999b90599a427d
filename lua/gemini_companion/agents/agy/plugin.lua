-- Our tools and our review in agy's hands: an Antigravity CLI plugin in
-- ~/.gemini/antigravity-cli/plugins/<NAME>/ (its CLI plugins doc; its other docs also name
-- ~/.gemini/config/ and a workspace's .agents/plugins/: we follow the CLI's own). Its layout, per
-- that doc: plugin.json (name and description only: the doc's schema allows nothing else),
-- rules/AGENTS.md, hooks.json at the root, mcp_config.json.
--
-- The MCP entry is the catch. agy's docs name no `${VAR}` expansion and no headers in
-- mcp_config.json, so unlike gemini's extension an entry that works holds the token. It is
-- written only when the user asks (`!`), mode 0600, and then rewritten at each start of this
-- server while it is there (the token changes at every Neovim start); never created otherwise.
-- The hook needs no token on disk: hook_client.py reads the address and token from the
-- environment agy inherits from Neovim's terminal (see agy/gate.py).
local bundle = require('gemini_companion.agents.bundle')
local notify = require('gemini_companion.notify')

local M = {}

M.MANIFEST = 'plugin.json'
M.MCP = 'mcp_config.json'
M.FILES = { M.MANIFEST, 'rules/AGENTS.md', 'hooks.json', M.MCP }

-- agy lists MCP tools lazily by default (measured with its engine): a model may have only names.
local NOTE = '- agy names these tools `mcp_nvim_<tool>`; when one is not among your functions, call it '
  .. 'through `call_mcp_tool` with ServerName `nvim` and ToolName `<tool>`.'

function M.dir()
  local home = vim.env.HOME or vim.uv.os_homedir() or '~'
  return vim.fs.joinpath(home, '.gemini', 'antigravity-cli', 'plugins', bundle.NAME)
end

--- The MCP entry for this start of the server (what `:GeminiMcpConfig! agy` prints).
local function mcp_entry()
  local port = vim.env.GEMINI_CLI_IDE_SERVER_PORT
  if not (port and vim.env.GEMINI_CLI_IDE_AUTH_TOKEN) then
    return nil, 'the server is not running (:GeminiStart): the MCP entry needs its address and token'
  end
  -- (state.server may not say "running" yet when the server's ready event comes: its address is given)
  local server = { state = 'running', url = ('http://127.0.0.1:%s/mcp'):format(port) }
  return require('gemini_companion.mcp_config').render('agy', true, nil, server)
end

local function write_mcp(dir, text)
  local err
  if not text then
    text, err = mcp_entry()
  end
  if not text then
    return nil, err
  end
  local path = vim.fs.joinpath(dir, M.MCP)
  local ok, werr = bundle.write_file(path, text .. '\n', tonumber('600', 8))
  if not ok then
    return nil, ('cannot write %s: %s'):format(path, werr)
  end
  return true
end

--- Install (or update) the plugin; with `with_token`, also its MCP entry (else an earlier one is
--- removed: the token stays on disk only while the user asks for it). Its directory, or nil and
--- the reason. The hook is written by `:GeminiGate install agy user` (its hooks.json).
function M.install(with_token)
  -- Nothing is written unless all of it can be: the entry needs the running server.
  local entry, entry_err
  if with_token then
    entry, entry_err = mcp_entry()
    if not entry then
      return nil, entry_err
    end
  end
  local dir, err = bundle.install(M.dir(), M.MANIFEST, {
    [M.MANIFEST] = bundle.json({
      name = bundle.NAME,
      description = "Neovim's tools (LSP, DAP, diagnostics, buffers, undo) and its review of agy's edits",
    }),
    ['rules/AGENTS.md'] = bundle.rules('mcp_nvim_', NOTE),
  })
  if not dir then
    return nil, err
  end
  if with_token then
    local ok, merr = write_mcp(dir, entry)
    if not ok then
      return nil, merr
    end
  else
    vim.uv.fs_unlink(vim.fs.joinpath(dir, M.MCP))
  end
  return dir
end

--- Whether the plugin is installed: nil; else its directory and whether it holds the MCP entry.
function M.installed()
  local dir = M.dir()
  if not vim.uv.fs_stat(vim.fs.joinpath(dir, M.MANIFEST)) or bundle.foreign(dir, M.MANIFEST) then
    return nil
  end
  return dir, vim.uv.fs_stat(vim.fs.joinpath(dir, M.MCP)) ~= nil
end

--- At each start of the server: an MCP entry the user asked for gets this start's port and token.
function M.server_started()
  local dir, with_token = M.installed()
  if dir and with_token then
    local ok, err = write_mcp(dir)
    if not ok then
      notify.say("agy's plugin: " .. err, 'warn')
    end
  end
end

function M.command_install(bang)
  local dir, err = M.install(bang)
  if not dir then
    return notify.say(err, 'error')
  end
  -- The hook: the same entry `:GeminiGate install agy project` writes, in the plugin's hooks.json.
  require('gemini_companion').gate('install', 'agy', 'user')
  local mcp = bang
      and ('its MCP entry %s holds the token (mode 0600) and follows each start of this server'):format(
        vim.fs.joinpath(dir, M.MCP)
      )
    or (
      "no MCP entry: agy's config cannot read the token from the environment, so an entry holds it "
      .. '(:GeminiExtensionInstall! agy writes one and keeps it current; :GeminiMcpConfig! agy prints one)'
    )
  notify.say(
    (
      "installed agy's plugin in %s: rules that teach agy's model Neovim's tools, and the review of "
      .. "agy's edits for an agy started from Neovim (:Gemini agy, :terminal); %s. Restart agy if it runs."
    ):format(dir, mcp)
  )
end

function M.command_uninstall()
  local dir, err = bundle.uninstall(M.dir(), M.MANIFEST, M.FILES)
  if not dir then
    return notify.say(err, 'error')
  end
  notify.say(err or ("removed agy's plugin %s"):format(dir), err and 'warn' or 'info')
end

return M
