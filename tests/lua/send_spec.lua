-- terminal/send.lua and terminal/init.lua: what is typed into the agent, for each agent.
local t = ...
local send = require('gemini_companion.terminal.send')
local terminal = require('gemini_companion.terminal')

t.test('bracketed wraps the text in one paste; no escape inside it survives, so no paste end', function()
  t.eq(send.bracketed('a\nb'), '\27[200~a\nb\27[201~')
  t.eq(send.bracketed('x\27[201~y\27[201~'), '\27[200~x[201~y[201~\27[201~')
  -- a paste end that removing one would rebuild (the red-team's N1)
  t.eq(send.bracketed('# \27[20\27[201~1~\25!touch x\r\n'), '\27[200~# [20[201~1~!touch x\n\27[201~')
end)

t.test('a large paste goes in pieces never cut inside a UTF-8 sequence, so a C1 control is seen whole', function()
  local text = ('a'):rep(64 * 1024 - 1) .. '\194\155' .. 'b' -- U+009B (CSI) across the first cut
  local first = send.piece(text, 1)
  t.eq(#first, 64 * 1024 - 1)
  local second = send.piece(text, #first + 1)
  t.eq(second, '\194\155b')
  t.eq(require('gemini_companion.sanitize').agent_text(second), 'b')
  t.eq(send.piece('é', 1), 'é')
end)

t.test('mention_path is relative inside the agent directory, absolute outside, spaces escaped', function()
  t.eq(send.mention_path('/work/p/src/a.lua', '/work/p'), 'src/a.lua')
  t.eq(send.mention_path('/work/p/src/a.lua', '/work/p/'), 'src/a.lua')
  t.eq(send.mention_path('/work/pp/a.lua', '/work/p'), '/work/pp/a.lua') -- a sibling with a longer name
  t.eq(send.mention_path('/work/p/my notes.txt', '/work/p'), 'my\\ notes.txt')
end)

t.test('selection_text: claude gets a line mention, others the range and the text', function()
  t.eq(send.selection_text('claude', 'a.py', 3, 3, 'x', 'python'), '@a.py#L3 ')
  t.eq(send.selection_text('claude', 'a.py', 3, 5, 'x', 'python'), '@a.py#L3-5 ')
  t.eq(send.selection_text('gemini', 'a.py', 3, 5, 'x\ny', 'python'), '@a.py (lines 3-5):\n```python\nx\ny\n```\n')
  t.eq(send.selection_text('claude', nil, 1, 1, 'x', ''), '```\nx\n```\n') -- no file: the text alone
end)

t.test('agent_name is the program of a command string or list', function()
  t.eq(terminal.agent_name({ cmd = '/usr/local/bin/claude --continue' }), 'claude')
  t.eq(terminal.agent_name({ cmd = { 'opencode', 'run' } }), 'opencode')
  t.eq(terminal.agent_name({ cmd = '  gemini  ' }), 'gemini')
end)

t.test('settings name the bad setting and what it may be', function()
  require('gemini_companion.config').set({ terminal = { size = 0 } })
  local s, err = terminal.settings()
  t.eq({ s, err }, { nil, 'terminal.size must be a number above 0 (got 0)' })
  require('gemini_companion.config').set({ terminal = { cmd = { 'gemini', 3 } } })
  s, err = terminal.settings()
  t.eq({ s, err }, { nil, 'terminal.cmd must be a command: a string or a list of words (got { "gemini", 3 })' })
  require('gemini_companion.config').set({ terminal = { scope = 'window' } })
  s, err = terminal.settings()
  t.eq({ s, err }, { nil, 'terminal.scope must be one of global, tab (got "window")' })
end)

t.test('mention_path names a directory with a slash, the agent directory itself as ./', function()
  t.eq(send.mention_path('/work/p/src', '/work/p', true), 'src/')
  t.eq(send.mention_path('/work/p/', '/work/p', true), './')
  t.eq(send.mention_path('/work/other dir', '/work/p', true), '/work/other\\ dir/')
end)

t.test("mention_path escapes what ends gemini's @path (its AT_COMMAND_PATH_REGEX), claude gets spaces only", function()
  -- gemini-cli stops an @path at an unescaped space, tab, , ; ! ? ( ) [ ] { } and unescapes \x.
  t.eq(send.mention_path('/w/p/a (copy), [1]!.py', '/w/p'), 'a\\ \\(copy\\)\\,\\ \\[1\\]\\!.py')
  t.eq(send.mention_path('/w/p/{x};y?.py', '/w/p'), '\\{x\\}\\;y\\?.py')
  t.eq(send.mention_path('/w/p/a (1).py', '/w/p', false, 'claude'), 'a\\ (1).py')
end)

t.test('selection_text fences text that holds a fence with a longer one', function()
  t.eq(
    send.selection_text('gemini', 'notes.txt', 1, 3, '```lua\nx\n```', 'markdown'),
    '@notes.txt (lines 1-3):\n````markdown\n```lua\nx\n```\n````\n'
  )
end)
