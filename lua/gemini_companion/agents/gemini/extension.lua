-- Our tools in Gemini's hands with no hand-written config: a Gemini CLI extension in
-- ~/.gemini/extensions/<NAME>/ (gemini-cli 0.61's format: gemini-extension.json with name,
-- version, mcpServers, contextFileName). Its server entry holds no port and no token: gemini
-- expands `${VAR}` in an extension's manifest from its own environment when it loads it
-- (extension-manager's resolveEnvVarsInObject), and a gemini started from Neovim (`:Gemini`,
-- :terminal) inherits GEMINI_CLI_IDE_SERVER_PORT and _AUTH_TOKEN, so it reaches this Neovim's
-- server, whichever port and token the current start has.
local notify = require('gemini_companion.notify')
local state = require('gemini_companion.state')

local M = {}

M.NAME = 'gemini-companion-nvim' -- the directory's name too, as gemini expects
M.SERVER = 'nvim' -- gemini splits `mcp_<server>_<tool>` at the first '_': no '_' in it
M.VERSION = '1.0.0'

M.CONTEXT = [[
# Neovim tools (gemini-companion-nvim)

You are running beside the user's Neovim. The `nvim` MCP server's tools act on that editor: its
buffers (including unsaved changes), its language servers and its debugger.

- To find where a symbol is defined or used, prefer `lsp_definition`, `lsp_references`,
  `lsp_hover` and `lsp_workspace_symbols` over searching text: they follow the language's rules
  (imports, overloads, scopes). Lines and columns are 1-based.
- After editing a file, call `get_diagnostics` on it to see the errors and warnings its language
  server reports, and fix them before you finish.
- To see what a running program does, use the `dap_*` tools: set breakpoints, run or continue,
  then read the stack, scopes, variables and output (`dap_status` first).
- `read_buffer` shows what the user sees, unsaved edits included; `get_editor_state` tells you
  which file and line the user is looking at.
]]

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

--- Write `text` to `path` whole or not at all: a temporary file beside it, renamed over it.
local function write_file(path, text)
  local tmp = ('%s.tmp-%d'):format(path, vim.fn.getpid())
  local fd, err = vim.uv.fs_open(tmp, 'w', tonumber('644', 8))
  if not fd then
    return nil, err
  end
  local ok, werr = vim.uv.fs_write(fd, text)
  vim.uv.fs_close(fd)
  if ok then
    ok, werr = vim.uv.fs_rename(tmp, path)
  end
  if not ok then
    vim.uv.fs_unlink(tmp)
    return nil, werr
  end
  return true
end

--- The extension in `dir` is ours (or there is none): nil; else why we must not touch it.
local function foreign(dir)
  local manifest = vim.fs.joinpath(dir, 'gemini-extension.json')
  if not vim.uv.fs_stat(dir) then
    return nil
  end
  local ok, data = pcall(function()
    return vim.json.decode(table.concat(vim.fn.readfile(manifest), '\n'))
  end)
  if ok and type(data) == 'table' and data.name == M.NAME then
    return nil
  end
  return ("%s exists and is not this plugin's extension (its gemini-extension.json %s): leaving it alone"):format(
    dir,
    ok and 'names another' or 'is missing or unreadable'
  )
end

--- Install (or update) the extension; true, or nil and the reason.
function M.install()
  local dir = M.dir()
  local err = foreign(dir)
  if err then
    return nil, err
  end
  if vim.fn.mkdir(dir, 'p', tonumber('755', 8)) == 0 and not vim.uv.fs_stat(dir) then
    return nil, 'cannot create ' .. dir
  end
  local json = vim.json.encode(M.manifest()):gsub('\\/', '/')
  for name, text in pairs({ ['gemini-extension.json'] = json .. '\n', ['GEMINI.md'] = M.CONTEXT }) do
    local ok, werr = write_file(vim.fs.joinpath(dir, name), text)
    if not ok then
      return nil, ('cannot write %s: %s'):format(vim.fs.joinpath(dir, name), werr)
    end
  end
  return dir
end

--- Remove the extension's files (and its folder once empty); true, or nil and the reason.
function M.uninstall()
  local dir = M.dir()
  if not vim.uv.fs_stat(dir) then
    return nil, 'not installed (' .. dir .. ' does not exist)'
  end
  local err = foreign(dir)
  if err then
    return nil, err
  end
  for _, name in ipairs({ 'gemini-extension.json', 'GEMINI.md' }) do
    vim.uv.fs_unlink(vim.fs.joinpath(dir, name))
  end
  if not vim.uv.fs_rmdir(dir) then
    return dir, ('removed its files; %s holds other files and stays'):format(dir)
  end
  return dir
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
