-- Built-in tools: the user's nvim-dap debug session, for agents. Registered only when nvim-dap
-- loads. Everything is asynchronous: DAP requests go out with callbacks; waits are timers and
-- listeners, so Neovim never blocks on the adapter.
--   state.lua        per-session facts from nvim-dap's events; the session/stopped-thread check
--   view.lua         adapter answers → tool answers (errors, frames, code, capped values)
--   wait.lua         waiting for a stop; the requests that resume or pause
--   control.lua      run, terminate, disconnect, continue/steps, run to, pause, wait
--   breakpoints.lua  breakpoint tools
--   inspect.lua      threads, stack, scopes, variables, evaluate, location, output
if not pcall(require, 'dap') then
  return {}
end

local tools = {}
vim.list_extend(tools, require('gemini_companion.builtin.dap.control'))
vim.list_extend(tools, require('gemini_companion.builtin.dap.breakpoints').tools)
vim.list_extend(tools, require('gemini_companion.builtin.dap.inspect'))
return tools
