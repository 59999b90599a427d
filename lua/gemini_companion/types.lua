-- What Lua answers Python, as LuaCATS classes: the mirror of the reply models in
-- rplugin/python3/gemini_companion/seam.py (HostHello, StartInfo, OpenedReview, ClosedReview,
-- ToolReply, ClaudeToolError). tests/unit/test_seam.py fails when a class or a field is in one
-- and not the other. Only annotations: nothing requires this module at run time.

---@class gemini_companion.HostHello
---@field refused? string why this host may not serve (Neovim's shared python3 host)
---@field log_dir? string
---@field pid? integer Neovim's

---@class gemini_companion.StartInfo
---@field config? table the user's settings (config.py validates them)
---@field cwd? string
---@field pid? integer
---@field ppid? integer
---@field env? table<string, string>
---@field tools? table[] the Lua tool specs
---@field state_dir? string
---@field servername? string

---@class gemini_companion.OpenedReview
---@field ok? boolean
---@field error? string why it did not open

---@class gemini_companion.ClosedReview
---@field found? boolean Neovim still showed it
---@field content? string the proposal as the user left it

---@class gemini_companion.ToolReply
---@field pending? boolean an asynchronous tool answers later (to_host.tool_done)
---@field ok? boolean
---@field error? string
---@field text? string
---@field json? string a JSON document, as text

---@class gemini_companion.ClaudeToolError
---@field error? string

return {}
