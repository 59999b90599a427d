-- What Neovim's children inherit while the server runs, so an agent started in :terminal (or a job)
-- finds this Neovim by itself: Gemini CLI's GEMINI_CLI_IDE_* variables, Claude Code's
-- CLAUDE_CODE_SSE_PORT, loopback in NO_PROXY behind a proxy, REMOTE_CONTAINERS in a container.
-- Only what the plugin set is taken back when the server stops.
local M = {}

local ENV_VARS = {
  'GEMINI_CLI_IDE_SERVER_PORT',
  'GEMINI_CLI_IDE_PID',
  'GEMINI_CLI_IDE_WORKSPACE_PATH',
  'GEMINI_CLI_IDE_AUTH_TOKEN',
  'CLAUDE_CODE_SSE_PORT',
}

--- In a container gemini dials host.docker.internal instead of 127.0.0.1 unless one of these is set.
M.CONTAINER_VARS = { 'SSH_CONNECTION', 'REMOTE_CONTAINERS', 'VSCODE_REMOTE_CONTAINERS_SESSION' }

--- REMOTE_CONTAINERS is the plugin's own (set by export, taken back by clear).
M.owns_remote_containers = false

local PROXY_VARS = { 'HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'ALL_PROXY', 'all_proxy' }
local LOOPBACK = { '127.0.0.1', 'localhost' }
local saved_no_proxy = nil ---@type table<string, string|false>|nil the user's NO_PROXY/no_proxy

--- Inside a container (Docker's or Podman's marker file).
function M.in_container()
  return vim.uv.fs_stat('/.dockerenv') ~= nil or vim.uv.fs_stat('/run/.containerenv') ~= nil
end

--- claude sends its IDE WebSocket through a set proxy unless NO_PROXY names the loopback (gemini
--- adds that itself): with a proxy set, children get both names added to NO_PROXY/no_proxy.
local function bypass_proxy_for_loopback()
  if saved_no_proxy or not vim.iter(PROXY_VARS):any(function(name)
    return (vim.env[name] or '') ~= ''
  end) then
    return
  end
  saved_no_proxy = { NO_PROXY = vim.env.NO_PROXY or false, no_proxy = vim.env.no_proxy or false }
  for _, name in ipairs({ 'NO_PROXY', 'no_proxy' }) do
    local list = vim.split(vim.env[name] or '', ',', { trimempty = true })
    for _, host in ipairs(LOOPBACK) do
      if not vim.tbl_contains(list, host) then
        table.insert(list, host)
      end
    end
    vim.env[name] = table.concat(list, ',')
  end
end

--- The server is ready (`details`: seam.py's on_ready): children started from now on find it even
--- without the discovery file.
function M.export(details)
  vim.env.GEMINI_CLI_IDE_SERVER_PORT = tostring(details.port)
  vim.env.GEMINI_CLI_IDE_PID = tostring(details.pid)
  vim.env.GEMINI_CLI_IDE_WORKSPACE_PATH = details.workspace_path
  vim.env.GEMINI_CLI_IDE_AUTH_TOKEN = details.token
  -- claude started from here finds our WebSocket by this alone (the lock file holds the token).
  vim.env.CLAUDE_CODE_SSE_PORT = details.claude_port and tostring(details.claude_port) or nil
  if details.claude_port then
    bypass_proxy_for_loopback()
  end
  -- gemini (0.61) reads REMOTE_CONTAINERS alone for that choice. Ours only, removed again by clear().
  local hinted = vim.iter(M.CONTAINER_VARS):any(function(name)
    return (vim.env[name] or '') ~= ''
  end)
  if not hinted and M.in_container() then
    vim.env.REMOTE_CONTAINERS, M.owns_remote_containers = '1', true
  end
end

--- The server stopped: what export set goes, and the user's own values come back.
function M.clear()
  for _, name in ipairs(ENV_VARS) do
    vim.env[name] = nil
  end
  if M.owns_remote_containers then
    vim.env.REMOTE_CONTAINERS, M.owns_remote_containers = nil, false
  end
  for name, value in pairs(saved_no_proxy or {}) do
    vim.env[name] = value or nil
  end
  saved_no_proxy = nil
end

return M
