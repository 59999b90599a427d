-- Registers the built-in tools, each under its group (groups are enabled in setup()).
local tools = require('gemini_companion.tools')

local GROUPS = {
  buffers = 'gemini_companion.builtin.buffers',
  editor = 'gemini_companion.builtin.editor',
  diagnostics = 'gemini_companion.builtin.diagnostics',
  lsp = 'gemini_companion.builtin.lsp',
  undo = 'gemini_companion.builtin.undo',
  dap = 'gemini_companion.builtin.dap', -- empty unless nvim-dap loads
}

for group, module in pairs(GROUPS) do
  for _, spec in ipairs(require(module)) do
    tools.register(spec, { builtin = true, group = group })
  end
end

return GROUPS
