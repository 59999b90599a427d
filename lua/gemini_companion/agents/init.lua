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
---  `at_mentioned(path, first, last)` (true once delivered), and optionally `after_start(buf, path, first,
---  last)`, for an agent just started in terminal `buf` that may drop a mention that comes too soon
---@field health string|nil the module of its `:checkhealth` section: `check(h, server_state)`
---@field before_start string|nil the module whose `before_start(start)` asks its first-run questions, then starts it
---@field hook_entry string|nil the module that finds its review gate's hook entry (:GeminiGate,
---  :checkhealth): `settings_file(scope)`, `where()`, `switched_off(cwd)`, `env`. Not named `gate`: the gate
---  is Python's (review_gate.py, agents/<name>/gate.py); Lua only finds the entry in the agent's
---  settings. An agent with one has a review gate (`with_gate()`, the user's word).
---@field extension string|nil the module of our bundle in its config (:GeminiExtensionInstall[!] <name>):
---  `command_install(bang)`, `command_uninstall()`, and `server_started()` if it follows each start
---@field terminal_default boolean|nil `:Gemini` runs it when `terminal.cmd` is not set and it is the
---  first such agent (in `names` order) on $PATH
---@field meta GeminiCompanionAgentMeta what README's and the help's agent tables say of it (dev/gen_doc.py)
---@field mcp_config string|nil the module of its :GeminiMcpConfig snippet: `variables` (how its config
---  names an environment variable, a format of one %s), `where`, `snippet(c)` (c: url, auth, name,
---  literal, json), `literal_where` (true: `!` says where, as it has no snippet without the token)
---@field status string|nil the module of its :GeminiStatus lines: `status(s, add, lines)`
---@field ide_tools string|nil the module that answers its IDE channel's editor tools: `call(name, args)`
---@field not_connected string|nil where to look when it runs but is not connected (:checkhealth)
---@field commands GeminiCompanionAgentCommand[]|nil user commands of its own
---@field watch {setting: string[], module: string}|nil at VimEnter, when the setting (a path in the
---  settings) is true, `require(module).watch()` follows something of the agent's

---@class GeminiCompanionAgentMeta
---@field url string its home page
---@field description string one line: what the plugin does for it

---@class GeminiCompanionAgentCommand
---@field name string the user command
---@field module string the module whose `call` function runs it, given the command's `opts`
---@field call string
---@field desc string
---@field nargs string|nil

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
    hook_entry = 'gemini_companion.agents.gemini.hook_entry',
    before_start = 'gemini_companion.agents.gemini.ide_mode',
    extension = 'gemini_companion.agents.gemini.extension',
    mcp_config = 'gemini_companion.agents.gemini.mcp_config',
    status = 'gemini_companion.agents.gemini.status',
    not_connected = 'in gemini, /ide status says why',
    terminal_default = true,
    commands = {
      {
        name = 'GeminiExtensionEnv',
        module = 'gemini_companion.agents.gemini.extension',
        call = 'command_env',
        desc = 'Show the line a terminal Neovim did not start needs before gemini (holds the token)',
      },
    },
    meta = {
      url = 'https://github.com/google-gemini/gemini-cli',
      description = 'IDE channel (discovery file, openDiff reviews, context), review gate, extension, at-mentions as text',
    },
  },
  claude = {
    title = 'Claude Code',
    client = 'claude-code',
    mention_escape = ' ', -- claude ends an @path at a space only
    line_mentions = true,
    ide_channel = 'claude',
    mention = 'gemini_companion.agents.claude.mention',
    health = 'gemini_companion.agents.claude.health',
    hook_entry = 'gemini_companion.agents.claude.hook_entry',
    mcp_config = 'gemini_companion.agents.claude.mcp_config',
    status = 'gemini_companion.agents.claude.status',
    ide_tools = 'gemini_companion.agents.claude.tools',
    meta = {
      url = 'https://github.com/anthropics/claude-code',
      description = 'IDE WebSocket (lock file, openDiff reviews, selection, at-mentions), review gate',
    },
  },
  -- The Antigravity CLI: no IDE channel; its engine names itself so to MCP servers. Gemini CLI's
  -- successor for consumer accounts: `:Gemini` runs it when there is no `gemini`.
  agy = {
    title = 'Antigravity CLI',
    client = 'antigravity-client',
    mention_escape = GEMINI_ESCAPE,
    line_mentions = false,
    health = 'gemini_companion.agents.agy.health',
    hook_entry = 'gemini_companion.agents.agy.hook_entry',
    extension = 'gemini_companion.agents.agy.plugin',
    mcp_config = 'gemini_companion.agents.agy.mcp_config',
    terminal_default = true,
    meta = {
      url = 'https://antigravity.google',
      description = 'MCP over HTTP (its plugin with the MCP entry), review gate',
    },
  },
  -- OpenCode (`opencode serve`): we register this server with it; opencode.nvim's server is followed.
  opencode = {
    title = 'OpenCode',
    mention_escape = GEMINI_ESCAPE,
    line_mentions = false,
    mcp_config = 'gemini_companion.agents.opencode.mcp_config',
    status = 'gemini_companion.agents.opencode',
    commands = {
      {
        name = 'GeminiOpencodeRegister',
        module = 'gemini_companion.agents.opencode',
        call = 'command_register',
        nargs = '?',
        desc = 'Register this server with a running `opencode serve` (default http://127.0.0.1:4096)',
      },
    },
    watch = { setting = { 'integrations', 'opencode' }, module = 'gemini_companion.agents.opencode' },
    meta = {
      url = 'https://opencode.ai',
      description = 'MCP over HTTP: registered with its server by :GeminiOpencodeRegister or opencode.nvim',
    },
  },
}

--- The agents in the order users meet them (`:checkhealth`, lists).
M.names = { 'gemini', 'claude', 'agy', 'opencode' }

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

--- The agents whose profile has `field` (in `names` order).
---@param field string
---@return string[]
function M.with(field)
  return vim.tbl_filter(function(name)
    return M.profiles[name][field] ~= nil
  end, M.names)
end

--- The agents with a review gate (:GeminiGate's choices).
---@return string[]
function M.with_gate()
  return M.with('hook_entry')
end

--- The agent `:GeminiGate install` means when none is named (as it always has).
M.gate_default = 'claude'

--- The agents with a bundle of ours (:GeminiExtensionInstall's choices).
---@return string[]
function M.with_extension()
  return M.with('extension')
end

--- `choices` for a command's description, the default first: "[gemini|agy]".
---@param choices string[]
---@param default string
---@return string
function M.choices(choices, default)
  local rest = vim.tbl_filter(function(name)
    return name ~= default
  end, choices)
  return '[' .. table.concat(vim.list_extend({ default }, rest), '|') .. ']'
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
