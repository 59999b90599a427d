-- The agents the plugin knows, by the name of the program that runs them: what differs per agent
-- lives in its profile here, never in `if agent == 'x'` checks inside the features. An agent not
-- listed gets the default profile (gemini's @path rules, text pasted, no IDE channel). An agent's
-- own modules live in agents/<name>/ (its tools, health section, mention format): adding one is
-- that folder plus its entry here (docs/ARCHITECTURE.md, "Adding an agent").
local M = {}

---@class GeminiCompanionAgent
---@field title string|nil how users know it (the review list, :GeminiStatus); nil: its client's own name
---@field client string|nil the name its IDE client gives itself (MCP clientInfo.name)
---@field mention_escape string Lua pattern: a backslash goes before these in an @path mention
---@field line_mentions boolean it reads `@path#La-b` itself, so a selection is sent as that mention
---@field ide_channel string|nil the setting (`<name>.enabled`) of its IDE channel, which takes at-mentions
---@field mention string|nil the module that puts an @mention into it over that channel: `connected()`,
---  `at_mentioned(path, first, last)` (true once delivered)
---@field health string|nil the module of its `:checkhealth` section: `check(h, server_state)`
---@field before_start string|nil the module whose `before_start(start)` asks its first-run questions, then starts it
---@field gate string|nil the module of its review gate (:GeminiGate): `settings_file(scope)`, `where()`
---@field extension string|nil the module of our bundle in its config (:GeminiExtensionInstall[!] <name>):
---  `command_install(bang)`, `command_uninstall()`, and `server_started()` if it follows each start
---@field terminal_default boolean|nil `:Gemini` runs it when `terminal.cmd` is not set and it is the
---  first such agent (in `names` order) on $PATH

-- What ends an @path in gemini-cli (its AT_COMMAND_PATH_REGEX_SOURCE: whitespace , ; ! ? ( ) [ ] { })
-- and what its own escapePath escapes; it reads any `\x` as x.
local GEMINI_ESCAPE = '[%s,;!%?%(%)%[%]{}|%*%$`\'"#&<>~\\]'

---@type table<string, GeminiCompanionAgent>
M.profiles = {
  -- Gemini CLI's IDE channel keeps the MCP TypeScript SDK's example name as its client name.
  gemini = {
    title = 'Gemini CLI',
    client = 'streamable-http-client',
    mention_escape = GEMINI_ESCAPE,
    line_mentions = false,
    health = 'gemini_companion.agents.gemini.health',
    gate = 'gemini_companion.agents.gemini.gate',
    before_start = 'gemini_companion.agents.gemini.ide_mode',
    extension = 'gemini_companion.agents.gemini.extension',
    terminal_default = true,
  },
  claude = {
    title = 'Claude Code',
    client = 'claude-code',
    mention_escape = ' ', -- claude ends an @path at a space only
    line_mentions = true,
    ide_channel = 'claude',
    mention = 'gemini_companion.agents.claude.mention',
    health = 'gemini_companion.agents.claude.health',
    gate = 'gemini_companion.agents.claude.gate',
  },
  -- The Antigravity CLI: no IDE channel; its engine names itself so to MCP servers. Gemini CLI's
  -- successor for consumer accounts: `:Gemini` runs it when there is no `gemini`.
  agy = {
    title = 'Antigravity CLI',
    client = 'antigravity-client',
    mention_escape = GEMINI_ESCAPE,
    line_mentions = false,
    health = 'gemini_companion.agents.agy.health',
    gate = 'gemini_companion.agents.agy.gate',
    extension = 'gemini_companion.agents.agy.plugin',
    terminal_default = true,
  },
}

--- The agents in the order users meet them (`:checkhealth`, lists).
M.names = { 'gemini', 'claude', 'agy' }

---@type GeminiCompanionAgent
M.default = { mention_escape = GEMINI_ESCAPE, line_mentions = false }

--- The profile of the agent that program `name` runs (`claude`, `gemini`, ...).
---@param name string
---@return GeminiCompanionAgent
function M.profile(name)
  return M.profiles[name] or M.default
end

--- What `:Gemini` runs when `terminal.cmd` is not set: the first agent for that on $PATH, else
--- `fallback` (the setting's default, whose absence :Gemini and :checkhealth then report).
---@param fallback string
---@return string
function M.terminal_default(fallback)
  for _, name in ipairs(M.names) do
    if M.profiles[name].terminal_default and vim.fn.executable(name) == 1 then
      return name
    end
  end
  return fallback
end

--- The agents with a review gate (:GeminiGate's choices).
---@return string[]
function M.with_gate()
  return vim.tbl_filter(function(name)
    return M.profiles[name].gate ~= nil
  end, M.names)
end

--- The agent `:GeminiGate install` means when none is named (as it always has).
M.gate_default = 'claude'

--- The agents with a bundle of ours (:GeminiExtensionInstall's choices).
---@return string[]
function M.with_extension()
  return vim.tbl_filter(function(name)
    return M.profiles[name].extension ~= nil
  end, M.names)
end

--- How users know the client that named itself `name` (clientInfo.name): an agent's title, else `name`.
---@param name string
---@return string
function M.client_title(name)
  for _, profile in pairs(M.profiles) do
    if profile.client == name then
      return profile.title
    end
  end
  return name
end

return M
