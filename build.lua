-- Plugin managers' build step: lazy.nvim runs this file by itself after every install and update
-- (before the plugin is on 'runtimepath'); elsewhere `nvim -l build.lua` or :GeminiInstall.
-- It creates the plugin's own Python environment; errors carry pip's last lines.
local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:gsub('^@', ''), ':p:h')
local summary = dofile(root .. '/lua/gemini_companion/install.lua').run()
print('gemini-companion: ' .. summary)
