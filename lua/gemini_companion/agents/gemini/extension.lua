-- Our tools in Gemini's hands with no hand-written config: a Gemini CLI extension in
-- ~/.gemini/extensions/<NAME>/ (gemini-cli 0.61's format: gemini-extension.json with name,
-- version, mcpServers, contextFileName). Its server entry holds no port and no token: gemini
-- expands `${VAR}` in an extension's manifest from its own environment when it loads it
-- (extension-manager's resolveEnvVarsInObject), and a gemini started from Neovim (`:Gemini`,
-- :terminal) inherits GEMINI_CLI_IDE_SERVER_PORT and _AUTH_TOKEN, so it reaches this Neovim's
-- server, whichever port and token the current start has.
local bundle = require('gemini_companion.agents.bundle')
local notify = require('gemini_companion.notify')
local state = require('gemini_companion.state')

local M = {}

M.NAME = bundle.NAME -- the directory's name too, as gemini expects
M.SERVER = 'nvim' -- gemini splits `mcp_<server>_<tool>` at the first '_': no '_' in it
M.VERSION = '1.0.0'
M.MANIFEST = 'gemini-extension.json'

--- Where gemini looks for user extensions: $GEMINI_CLI_HOME, else the home directory.
function M.dir()
  local home = vim.env.GEMINI_CLI_HOME
  if not home or home == '' then
    home = vim.uv.os_homedir() or vim.env.HOME or '~'
  end
  return vim.fs.joinpath(home, '.gemini', 'extensions', M.NAME)
end

function M.manifest()
  return {
    name = M.NAME,
    version = M.VERSION,
    description = "Neovim's tools (LSP, DAP, diagnostics, buffers, undo) from the Neovim that started gemini",
    mcpServers = {
      [M.SERVER] = {
        httpUrl = 'http://127.0.0.1:${GEMINI_CLI_IDE_SERVER_PORT}/mcp',
        headers = { Authorization = 'Bearer ${GEMINI_CLI_IDE_AUTH_TOKEN}' },
      },
    },
    contextFileName = 'GEMINI.md',
  }
end

--- Install (or update) the extension: its directory, or nil and the reason.
function M.install()
  return bundle.install(M.dir(), M.MANIFEST, {
    [M.MANIFEST] = bundle.json(M.manifest()),
    ['GEMINI.md'] = bundle.rules(''),
  })
end

--- Remove the extension's files (and its folder once empty): its directory (and what stays, if
--- anything), or nil and the reason.
function M.uninstall()
  return bundle.uninstall(M.dir(), M.MANIFEST, { M.MANIFEST, 'GEMINI.md' })
end

--- The line a terminal Neovim did not start needs before `gemini`, with this start's values.
function M.exports()
  if state.server.state ~= 'running' or not vim.env.GEMINI_CLI_IDE_AUTH_TOKEN then
    return nil, 'the server is not running (:GeminiStart)'
  end
  return (' export GEMINI_CLI_IDE_SERVER_PORT=%s GEMINI_CLI_IDE_AUTH_TOKEN=%s'):format(
    vim.env.GEMINI_CLI_IDE_SERVER_PORT,
    vim.env.GEMINI_CLI_IDE_AUTH_TOKEN
  )
end

function M.command_install()
  local dir, err = M.install()
  if not dir then
    return notify.say(err, 'error')
  end
  notify.say(
    (
      'installed the Gemini CLI extension in %s: a gemini started from Neovim (:Gemini, :terminal) now has '
      .. "Neovim's tools (restart a gemini that is already running). From another terminal, run the line "
      .. ':GeminiExtensionEnv shows there first.'
    ):format(dir)
  )
end

function M.command_uninstall()
  local dir, err = M.uninstall()
  if not dir then
    return notify.say(err, 'error')
  end
  notify.say(err or ('removed the Gemini CLI extension %s'):format(dir), err and 'warn' or 'info')
end

--- The terminal's :checkhealth section: whether gemini's model has Neovim's tools.
function M.check_health(h)
  local dir = M.dir()
  if vim.uv.fs_stat(vim.fs.joinpath(dir, M.MANIFEST)) then
    h.ok('the Gemini CLI extension is installed: ' .. dir)
  else
    h.info("gemini's model does not have Neovim's tools: :GeminiExtensionInstall gives them")
  end
end

function M.command_env()
  local line, err = M.exports()
  if not line then
    return notify.say(err, 'error')
  end
  -- Shown, never yanked: registers are saved to disk (ShaDa). The leading space keeps the line
  -- out of the shell's history where HISTCONTROL/HIST_IGNORE_SPACE says so.
  notify.say(
    ('type this in the other terminal before starting gemini (valid until the server restarts):\n%s'):format(line)
  )
end

return M
