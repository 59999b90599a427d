-- The review gate lives in the user's settings, but an agent merges more settings over them: a
-- repository's own (claude's .claude/settings.json "disableAllHooks", gemini's .gemini/settings.json
-- "hooksConfig"), the system's. One of them can switch the agent's hooks, and the gate with them,
-- off without a word from the agent. Each agent's hook_entry module knows the files it reads
-- (`switched_off(cwd)`); this says so when such an agent connects or is started from Neovim, once
-- per agent and file in a Neovim session, and :checkhealth says it in the agent's section.
local agents = require('gemini_companion.agents')
local notify = require('gemini_companion.notify')

local M = {}

local said = {} ---@type table<string, true> agent .. NUL .. file

--- The settings file that switches agent `name`'s installed review gate off in `cwd`, and how;
--- nil when the gate is not installed, or runs.
---@param name string
---@param cwd string
---@return string|nil file, string|nil how
function M.find(name, cwd)
  local module = (agents.profiles[name] or {}).hook_entry
  local gate = module and require(module)
  if not (gate and gate.switched_off) or #gate.where() == 0 then
    return nil
  end
  return gate.switched_off(cwd)
end

--- How users know `file`: "this project's .claude/settings.json", "~/.claude/settings.json".
---@param file string
---@param cwd string
---@return string
function M.name_of(file, cwd)
  local root = cwd:gsub('/$', '') .. '/'
  if vim.startswith(file, root) then
    return "this project's " .. file:sub(#root + 1)
  end
  return vim.fn.fnamemodify(file, ':~')
end

--- What the user is told: which file switches agent `name`'s gate off, how, and what follows.
---@return string
function M.message(name, file, how, cwd)
  return ("%s %s: %s's edits are not reviewed, though :GeminiGate installed the review gate; :GeminiChanges shows them after"):format(
    M.name_of(file, cwd),
    how,
    name
  )
end

--- :checkhealth's line for agent `name` whose gate is installed: an error when a file switches
--- it off (true then), else nothing.
---@return boolean
function M.check(h, name)
  local cwd = vim.fn.getcwd(-1, -1)
  local file, how = require(agents.profiles[name].hook_entry).switched_off(cwd)
  if file then
    h.error(M.message(name, file, how, cwd), {
      ('take that setting out of %s, or run %s in a mode where it asks before it edits'):format(file, name),
    })
  end
  return file ~= nil
end

--- Warn, once per agent and file, when agent `name` started in `cwd` edits unreviewed for all its gate.
---@param name string
---@param cwd string
function M.notice(name, cwd)
  local file, how = M.find(name, cwd)
  if not file or said[name .. '\0' .. file] then
    return
  end
  said[name .. '\0' .. file] = true
  notify.say(M.message(name, file, how, cwd), 'warn')
end

--- The clients connected now (state.server.clients): each agent among them is looked at.
---@param clients table[]
function M.connected(clients)
  for _, client in ipairs(clients) do
    for name, profile in pairs(agents.profiles) do
      if profile.client == client.name then
        M.notice(name, vim.fn.getcwd(-1, -1))
      end
    end
  end
end

return M
