-- sanitize.lua: the one filter for text that goes to an agent.
local t = ...
local sanitize = require('gemini_companion.sanitize')

t.test('keeps text, tabs and newlines; CRLF and CR become LF', function()
  t.eq(sanitize.agent_text('def f():\n\treturn 1  # ok: é, ✓\n'), 'def f():\n\treturn 1  # ok: é, ✓\n')
  t.eq(sanitize.agent_text('a\r\nb\rc'), 'a\nbc')
end)

t.test('drops every C0 control but tab and newline, DEL, and C1 controls', function()
  local all = {}
  for byte = 0, 31 do
    all[#all + 1] = string.char(byte)
  end
  t.eq(sanitize.agent_text(table.concat(all) .. '\127'), '\t\n')
  t.eq(sanitize.agent_text('a\194\155201~b\194\133c'), 'a201~bc') -- U+009B is CSI to some terminals
end)

t.test('no escape sequence can be rebuilt from what is left, however it is nested', function()
  local payload = 'x'
  for _ = 1, 5 do
    payload = '\27[20' .. payload:gsub('x', '\27[201~1~x') .. '1~'
  end
  local out = sanitize.agent_text(payload .. '\25\3!rm -rf ~\r')
  t.eq(out:find('\27', 1, true), nil)
  t.eq(out:find('[\1-\8\11-\31]'), nil)
end)
