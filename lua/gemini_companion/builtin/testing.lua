-- Built-in test tools (group "test", off by default): one asynchronous tool that asks the user,
-- one synchronous tool. The test suite uses them to prove both paths.
return {
  {
    name = 'test_ask_user',
    description = 'Ask the Neovim user to pick one of the choices (vim.ui.select) and return the answer.',
    args = {
      prompt = { type = 'string', description = 'The question', required = true },
      choices = { type = 'array', items = { type = 'string' }, description = 'The options', required = true },
    },
    execute = function(args, done, ctx)
      vim.ui.select(args.choices, { prompt = args.prompt }, function(choice)
        if not ctx.cancelled() then
          done({ choice = choice or vim.NIL, answered = choice ~= nil })
        end
      end)
    end,
  },
  {
    name = 'test_list_buffers',
    description = 'Buffer numbers and names (synchronous test tool).',
    read_only = true,
    args = {},
    execute = function()
      local out = {}
      for _, buf in ipairs(vim.api.nvim_list_bufs()) do
        table.insert(out, { bufnr = buf, name = vim.api.nvim_buf_get_name(buf) })
      end
      return out
    end,
  },
}
