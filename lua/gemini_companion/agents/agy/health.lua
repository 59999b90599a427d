-- :checkhealth gemini_companion, the Antigravity CLI's part: its program, our plugin, our review gate
-- in its hooks, and an entry for this Neovim in its mcp_config.json (`s`: the server state, state.server).
local plugin = require('gemini_companion.agents.agy.plugin')
local settings = require('gemini_companion.agents.settings')

local M = {}

--- agy's MCP config files, per its docs: the user's, the workspace's, our plugin's.
local function mcp_files()
  return {
    vim.fs.joinpath(vim.env.HOME or vim.uv.os_homedir(), '.gemini', 'config', 'mcp_config.json'),
    vim.fs.joinpath(vim.fn.getcwd(-1, -1), '.agents', 'mcp_config.json'),
    vim.fs.joinpath(plugin.dir(), plugin.MCP),
  }
end

--- Entries of agy's MCP configs that point at a Neovim here: { name, file, port }.
local function our_entries()
  local found = {}
  for _, file in ipairs(mcp_files()) do
    local config = settings.read(file)
    local servers = type(config) == 'table' and config.mcpServers or nil
    for name, server in pairs(type(servers) == 'table' and servers or {}) do
      local url = type(server) == 'table' and (server.serverUrl or server.url or server.httpUrl) or nil
      local port = type(url) == 'string' and url:match('^http://127%.0%.0%.1:(%d+)/mcp$')
      if port then
        table.insert(found, { name = name, file = file, port = tonumber(port) })
      end
    end
  end
  return found
end

local function check_program(h)
  local exe = vim.fn.exepath('agy')
  if exe == '' then
    h.info('`agy` is not on the PATH of Neovim (only needed to use the Antigravity CLI)')
    return
  end
  local res = vim.system({ exe, '--version' }, { text = true }):wait(20000)
  local version = res.code == 0 and (res.stdout or ''):match('%d+%.%d+%.%d+') or nil
  if version then
    h.ok(('agy %s (%s)'):format(version, exe))
  else
    h.warn(('%s --version did not say its version (exit %s)'):format(exe, tostring(res.code)))
  end
end

function M.check(h, s)
  h.start('Antigravity CLI (agy)')
  check_program(h)
  local dir, with_token = plugin.installed()
  if not dir then
    h.info("agy's plugin is not installed: :GeminiExtensionInstall agy (rules for Neovim's tools, the review gate)")
  elseif with_token then
    h.ok(("agy's plugin is installed in %s, with its MCP entry (it holds the token)"):format(dir))
  else
    h.ok(("agy's plugin is installed in %s, without an MCP entry (:GeminiExtensionInstall! agy adds one)"):format(dir))
  end
  local found, problems = require('gemini_companion.agents.agy.hook_entry').where()
  for _, problem in ipairs(problems) do
    h.warn(problem)
  end
  if #found == 0 then
    h.info('review gate not installed: :GeminiGate install agy project opens the edits agy makes as reviews')
  elseif not require('gemini_companion.agents.gate_off').check(h, 'agy') then
    h.ok(("review gate in %s: agy's edits open as reviews here"):format(table.concat(found, ', ')))
  end
  local entries = our_entries()
  if #entries == 0 then
    h.info("no entry for Neovim in agy's mcp_config.json: :GeminiMcpConfig! agy prints one")
  end
  for _, e in ipairs(entries) do
    if s.state == 'running' and e.port ~= s.port then
      h.warn(
        ('%s: %q points at port %d, this Neovim serves %s: set a stable port, or :GeminiMcpConfig! agy'):format(
          e.file,
          e.name,
          e.port,
          tostring(s.port)
        )
      )
    else
      h.ok(('%s: %q reaches this Neovim'):format(e.file, e.name))
    end
  end
end

return M
