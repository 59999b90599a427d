-- tools.lua: the registry turns a tool's `args` into the JSON Schema MCP clients see, and calls tools.
local t = ...
local tools = require('gemini_companion.tools')

local function schema_of(args)
  tools.register({ name = 'spec_tool', args = args, execute = function() end })
  return tools.get('spec_tool').inputSchema
end

t.test('args become a closed object schema with the required names sorted', function()
  t.eq(
    schema_of({
      path = { type = 'string', description = 'File', required = true },
      line = { type = 'integer', default = 1, minimum = 1, required = true },
      mode = { enum = { 'a', 'b' } },
    }),
    {
      type = 'object',
      properties = {
        path = { type = 'string', description = 'File' },
        line = { type = 'integer', default = 1, minimum = 1 },
        mode = { type = 'string', enum = { 'a', 'b' } }, -- string unless told
      },
      additionalProperties = false,
      required = { 'line', 'path' },
    }
  )
end)

t.test('no args is an empty properties object, not a list, and no required', function()
  local schema = schema_of({})
  t.eq(vim.json.encode(schema.properties), '{}')
  t.eq(schema.required, nil)
end)

t.test('a bad argument spec is refused naming the tool and the argument', function()
  t.raises(function()
    schema_of({ n = { type = 'int' } })
  end, 'tool "spec_tool": argument "n": unknown type "int"')
  t.raises(function()
    schema_of({ 'positional' })
  end, 'argument 1: expected name = { type = ..., description = ... }')
end)

t.test('names of the server, bad names and a missing execute are refused', function()
  t.raises(function()
    tools.register({ name = 'openDiff', execute = function() end })
  end, 'a tool of the companion server itself')
  t.raises(function()
    tools.register({ name = 'has space', execute = function() end })
  end, 'invalid tool name')
  t.raises(function()
    tools.register({ name = 'no_execute' })
  end, 'needs an execute function')
end)

t.test('a tool with a done parameter is asynchronous; an answer given at once is the reply', function()
  tools.register({
    name = 'spec_async',
    execute = function(args, done)
      if args.now then
        done({ echo = args.x })
      end
    end,
  })
  t.eq(tools.get('spec_async').async, true)
  t.eq(tools.call('spec_async', { x = 1 }, 7), { pending = true })
  t.eq(tools.call('spec_async', { x = 2, now = true }, 8), { ok = true, json = '{"echo":2}' })
end)

t.test('a synchronous tool answers text as is and anything else as JSON', function()
  tools.register({
    name = 'spec_text',
    execute = function()
      return 'hi'
    end,
  })
  tools.register({
    name = 'spec_json',
    execute = function()
      return { a = 1 }
    end,
  })
  tools.register({
    name = 'spec_bad',
    execute = function()
      return { f = print }
    end,
  })
  t.eq(tools.call('spec_text', {}, 1), { ok = true, text = 'hi' })
  t.eq(tools.call('spec_json', {}, 2), { ok = true, json = '{"a":1}' })
  t.eq(tools.call('spec_bad', {}, 3).ok, false)
end)
