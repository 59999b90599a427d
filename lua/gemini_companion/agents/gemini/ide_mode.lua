-- gemini's IDE mode as gemini decides it: once, when it starts, from `ide.enabled` in its settings
-- (the project's over the user's). A gemini that switches it on while running (`/ide enable`)
-- never passes its own "Allow once / No" to Neovim (gemini 0.61, its last release: see
-- README, "With Gemini CLI"), so before :Gemini starts gemini the first time, the user is offered
-- to turn it on in their settings (agent_settings.py writes it, merged; an explicit false stays).
local notify = require('gemini_companion.notify')
local state = require('gemini_companion.state')

local M = {}

--- `ide.enabled` in the settings file `path`: true/false/nil, and why it could not be read.
function M.enabled_in(path)
  local settings, err = require('gemini_companion.agents.settings').read(path)
  if not settings then
    return nil, err
  end
  local ide = type(settings.ide) == 'table' and settings.ide or {}
  return ide.enabled, nil
end

--- The user's settings file (`$GEMINI_CLI_HOME` or the home folder, then .gemini/settings.json).
function M.user_file()
  local home = vim.env.GEMINI_CLI_HOME
  home = (home and home ~= '') and home or vim.uv.os_homedir()
  return home .. '/.gemini/settings.json'
end

--- What gemini will start with: enabled (true/false/nil), the file that says so, a problem
--- reading either file (and which), the user's file.
function M.setting()
  local user_file = M.user_file()
  local root = (state.server.workspace or {})[1] or vim.fn.getcwd(-1, -1)
  local workspace_file = root .. '/.gemini/settings.json'
  local enabled, err = M.enabled_in(user_file)
  local where, bad = user_file, err and user_file or nil
  local ws_enabled, ws_err = M.enabled_in(workspace_file)
  if ws_enabled ~= nil then -- the project's settings win over the user's
    enabled, where = ws_enabled, workspace_file
  end
  if ws_err then
    err, bad = ws_err, workspace_file
  end
  return { enabled = enabled, where = where, error = err, bad_file = bad, user_file = user_file }
end

local asked = false -- once per Neovim: "Not now" is not asked again until the next start
local function never_file()
  return vim.fs.joinpath(vim.fn.stdpath('state'), 'gemini_companion', 'no-ide-mode-offer')
end

--- Turn IDE mode on in the user's settings (python -I agent_settings.py enable-ide FILE), then done().
local function enable(file, done)
  local install = require('gemini_companion.install')
  local ok, python = pcall(function()
    return install.state() == 'installed' and install.venv_python() or install.base_python()
  end)
  local script = vim.fs.joinpath(install.rplugin_path(), 'agent_settings.py')
  if not ok then
    notify.say('IDE mode not turned on: ' .. tostring(python), 'error')
    return done()
  end
  vim.system({ python, '-I', script, 'enable-ide', file }, { text = true, cwd = '/' }, function(res)
    vim.schedule(function()
      local decoded, result = pcall(vim.json.decode, res.stdout or '')
      if not decoded or type(result) ~= 'table' then
        notify.say('IDE mode not turned on: ' .. vim.trim((res.stderr or '') .. ' ' .. (res.stdout or '')), 'error')
      elseif result.error then
        notify.say('IDE mode not turned on: ' .. result.error, 'error')
      elseif result.changed then
        notify.say('gemini IDE mode turned on in ' .. file .. ': gemini connects to Neovim as it starts')
      end
      done()
    end)
  end)
end

--- Before :Gemini starts gemini: offer to turn IDE mode on where it is not set; then start().
function M.before_start(start)
  local now = M.setting()
  if now.enabled ~= nil or now.error or asked or vim.uv.fs_stat(never_file()) then
    return start() -- on or off by the user's own choice (or unreadable: health says so)
  end
  asked = true
  local choices = { 'Yes, turn it on (recommended)', 'Not now', 'No, and do not ask again' }
  vim.ui.select(choices, {
    prompt = ("gemini's IDE mode is off (%s): turn it on, so gemini connects to Neovim as it starts and its own Allow/No reach Neovim?"):format(
      now.user_file
    ),
  }, function(_, index)
    if index == 1 then
      return enable(now.user_file, start)
    elseif index == 3 then
      vim.fn.mkdir(vim.fs.dirname(never_file()), 'p')
      vim.fn.writefile({}, never_file())
    end
    start()
  end)
  return true
end

return M
