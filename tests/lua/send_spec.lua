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

-- What the agent receives (was tests/integration/test_send.py): :GeminiSend, :GeminiAdd and
-- :GeminiSendDiagnostics type one bracketed paste into the stand-in agent (H.agent), nothing
-- submitted; the host is stubbed (host_stub.lua).
local H = require('host_stub')
-- Python's ftplugin asks has('python3'), which probes for Neovim's Python provider (seconds):
-- nothing of it is the plugin's (it runs no host here), the buffer's filetype is all a send reads.
vim.g.loaded_python3_provider = 0
local START, END = '\27[200~', '\27[201~'
local CODE = "def greet(name):\n    message = f'hello {name}'\n    return message\n"

--- The paste that types `text`.
local function paste(text)
  return START .. text .. END
end

--- Set the user's terminal settings (`terminal.cmd` the agent's), as setup() does.
local function use(agent, settings)
  require('gemini_companion').setup({ terminal = vim.tbl_extend('force', { cmd = agent.cmd }, settings or {}) })
end

--- src/greet.py, opened.
local function open_code(ws)
  H.write_file(ws .. '/src/greet.py', CODE)
  vim.cmd('edit src/greet.py')
end

--- The agent started (:Gemini) beside src/greet.py, the cursor back in the code.
local function running_agent(ws, name, settings)
  local agent = H.agent(name)
  use(agent, settings)
  open_code(ws)
  vim.cmd('Gemini')
  agent.started(t)
  vim.cmd('stopinsert | wincmd p') -- back to the code, the agent stays visible
  return agent
end

--- Run an Ex command as a user would: an error message is shown, not raised into the spec.
local function command(cmd)
  pcall(vim.cmd, cmd)
end

H.test(t, 'a visual selection arrives whole as one paste, nothing submitted', function(ws)
  local agent = running_agent(ws)
  local seen = H.said()
  H.type('2Gwvj$:GeminiSend<CR>') -- charwise, from `message` on line 2 to the end of line 3
  local text = "@src/greet.py (lines 2-3):\n```python\nmessage = f'hello {name}'\n    return message\n```\n"
  agent.received(t, paste(text)) -- no Enter: the user asks the question
  t.eq(H.complaints(seen), {})
end)

H.test(t, 'a range, the cursor line and a Visual-mode <Cmd> mapping', function(ws)
  local agent = running_agent(ws)
  vim.cmd('1,2GeminiSend')
  local one = "@src/greet.py (lines 1-2):\n```python\ndef greet(name):\n    message = f'hello {name}'\n```\n"
  agent.received(t, paste(one))
  vim.cmd('3')
  vim.cmd('GeminiSend')
  local two = '@src/greet.py (lines 3-3):\n```python\n    return message\n```\n'
  agent.received(t, paste(one) .. paste(two))
  vim.cmd('xnoremap <F5> <Cmd>GeminiSend<CR>') -- runs in Visual mode, without a range
  H.type('1GVj<F5>')
  agent.received(t, paste(one) .. paste(two) .. paste(one))
  t.eq(vim.fn.mode(), 'n')
end)

H.test(t, ':GeminiAdd mentions a file, :GeminiSendDiagnostics lists the diagnostics', function(ws)
  local agent = running_agent(ws)
  H.write_file(ws .. '/my notes.txt', 'x\n')
  vim.cmd('GeminiAdd')
  vim.cmd('GeminiAdd my\\ notes.txt')
  local sent = paste('@src/greet.py ') .. paste('@my\\ notes.txt ')
  agent.received(t, sent)
  local seen = H.said()
  command('GeminiAdd no/such/file.py')
  t.eq(H.complaints(seen), { 'gemini-companion: no such file or directory: no/such/file.py' })

  local ns = vim.api.nvim_create_namespace('test')
  vim.diagnostic.set(ns, 0, {
    { lnum = 2, col = 4, severity = vim.diagnostic.severity.WARN, message = 'unused', source = 'lint' },
    { lnum = 0, col = 0, severity = vim.diagnostic.severity.ERROR, message = 'bad name' },
  })
  vim.cmd('GeminiSendDiagnostics')
  local listing = 'Diagnostics in @src/greet.py:\n- line 1, col 1: error: bad name\n'
    .. '- line 3, col 5: warning: unused [lint]\n'
  sent = sent .. paste(listing)
  agent.received(t, sent)
  vim.cmd('3GeminiSendDiagnostics')
  sent = sent .. paste('Diagnostics in @src/greet.py:\n- line 3, col 5: warning: unused [lint]\n')
  agent.received(t, sent)
  seen = H.said()
  command('2GeminiSendDiagnostics')
  t.eq(H.complaints(seen), { 'gemini-companion: no diagnostics on these lines' })
end)

H.test(t, 'a paste end inside the text cannot end the paste', function(ws)
  local agent = running_agent(ws)
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'before\27[201~after' })
  vim.cmd('GeminiSend')
  agent.received(t, paste('@src/greet.py (lines 1-1):\n```python\nbefore[201~after\n```\n'))
end)

H.test(t, 'sending with no agent running starts it and types nothing yet', function(ws)
  local agent = H.agent()
  use(agent)
  open_code(ws)
  local seen = H.said()
  command('1GeminiSend')
  agent.started(t)
  t.eq(#H.agent_windows(), 1)
  t.eq(H.complaints(seen), {
    'gemini-companion: no agent was running: starting it (:Gemini); send again once its prompt shows',
  })
  -- Typed into a program still starting, text could answer its first questions: the first send
  -- typed nothing, so the agent receives exactly the second.
  vim.cmd('stopinsert | wincmd p')
  command('2GeminiSend')
  agent.received(t, paste("@src/greet.py (lines 2-2):\n```python\n    message = f'hello {name}'\n```\n"))
end)

H.test(t, 'sending with an agent that cannot start says why once', function(ws)
  require('gemini_companion').setup({ terminal = { cmd = { ws .. '/no-such-agent' } } })
  open_code(ws)
  local seen = H.said()
  command('GeminiSend')
  t.wait_for(function() -- (while the server starts, the agent's start waits for it)
    return #H.complaints(seen) > 0
  end, 'a complaint')
  local said = H.complaints(seen)
  t.eq(#said, 1)
  assert(said[1]:find('cannot start', 1, true) and said[1]:find('is not executable', 1, true), said[1])
end)

H.test(t, 'claude gets line mentions, through its session when it takes them, else typed', function(ws)
  local agent = running_agent(ws, 'claude')
  vim.cmd('2,3GeminiSend')
  agent.received(t, paste('@src/greet.py#L2-3 '))
  -- With its mention module: a connected Claude session takes the mention; typed only when it says no.
  local mentions, connected = {}, true
  package.loaded['gemini_companion.agents.claude.mention'] = {
    at_mentioned = function(path, first, last)
      table.insert(mentions, { path, first, last })
      return connected
    end,
  }
  vim.cmd('Gemini') -- hidden: shown when the session takes a mention too
  vim.cmd('1GeminiSend')
  t.eq(#H.agent_windows(), 1)
  vim.cmd('GeminiAdd')
  local full = ws .. '/src/greet.py'
  t.eq(mentions, { { full, 1, 1 }, { full } }) -- absolute; no lines: the whole file
  connected = false
  vim.cmd('3GeminiSend')
  agent.received(t, paste('@src/greet.py#L2-3 ') .. paste('@src/greet.py#L3 '))
end)

H.test(t, 'provider none without tmux says it cannot type into the agent', function(ws)
  require('gemini_companion').setup({ terminal = { provider = 'none' } })
  open_code(ws)
  local tmux = vim.env.TMUX
  vim.env.TMUX = nil -- the harness itself may run inside tmux; this user does not
  local seen = H.said()
  command('GeminiSend')
  vim.env.TMUX = tmux
  local said = H.complaints(seen)
  t.eq(#said, 1)
  assert(said[1]:find("provider is 'none' and Neovim is not inside tmux: cannot type into the agent", 1, true), said[1])
end)

--- A tmux server of its own with one pane running a stand-in agent (as agent_terminal.py's
--- tmux_pane): Neovim's TMUX is set to it while `fn(pane, agent)` runs.
local function in_tmux(fn)
  local agent = H.agent()
  local tmux = { 'tmux', '-S', vim.fn.tempname() }
  local function run(...)
    local done = vim.system(vim.list_extend(vim.deepcopy(tmux), { ... }), { text = true }):wait()
    assert(done.code == 0, done.stderr)
    return vim.trim(done.stdout)
  end
  run('new-session', '-d', '-x', '100', '-y', '30', unpack(agent.cmd))
  local saved = vim.env.TMUX
  local ok, err = pcall(function()
    local pane, pid = run('list-panes', '-F', '#{pane_id}'), run('display-message', '-p', '#{pid}')
    agent.started(t)
    t.wait_for(function() -- what is typed before it takes the terminal raw is lost
      return run('capture-pane', '-p', '-t', pane):find('stand-in agent ready', 1, true) ~= nil
    end, 'the agent ready')
    vim.env.TMUX = ('%s,%s,0'):format(tmux[3], pid)
    fn(pane, agent)
  end)
  vim.env.TMUX = saved
  vim.system(vim.list_extend(vim.deepcopy(tmux), { 'kill-server' })):wait()
  assert(ok, err)
end

H.test(t, 'provider none pastes into a tmux pane', function(ws)
  in_tmux(function(pane, agent)
    require('gemini_companion').setup({ terminal = { provider = 'none' } })
    open_code(ws)
    local seen = H.said()
    command('GeminiSend')
    assert(H.complaints(seen)[1]:find('terminal.tmux_target is not set', 1, true), H.complaints(seen)[1])
    require('gemini_companion').setup({ terminal = { provider = 'none', tmux_target = pane } })
    vim.cmd('1,2GeminiSend')
    local text = "@src/greet.py (lines 1-2):\n```python\ndef greet(name):\n    message = f'hello {name}'\n```\n"
    agent.received(t, paste(text)) -- tmux brackets it: the agent asked for bracketed paste
    require('gemini_companion').setup({ terminal = { provider = 'none', tmux_target = 'nowhere:9' } })
    seen = H.said()
    command('GeminiSend')
    local said = H.complaints(seen)
    assert(said[#said]:find('tmux could not paste into "nowhere:9"', 1, true), said[#said])
  end)
end)

H.test(t, 'sending to a hidden agent shows it and keeps the cursor', function(ws)
  local agent = running_agent(ws)
  vim.cmd('Gemini') -- hide it
  t.eq(H.agent_windows(), {})
  local code = vim.api.nvim_get_current_buf()
  vim.cmd('GeminiAdd')
  agent.received(t, paste('@src/greet.py '))
  t.eq(#H.agent_windows(), 1)
  t.eq(vim.api.nvim_get_current_buf(), code)
end)

--- netrw (the real one, built into Neovim) lists the workspace; the cursor goes to `entry`'s line.
local function explore(entry)
  vim.cmd('runtime plugin/netrwPlugin.vim') -- (the specs' Neovim runs with --noplugin)
  vim.cmd('Explore .')
  t.eq(vim.bo.filetype, 'netrw')
  vim.fn.search('\\V\\^' .. entry:gsub('\\', '\\\\') .. '\\$') -- very nomagic: the text as is
  t.eq(vim.api.nvim_get_current_line(), entry)
end

H.test(t, ':GeminiAdd in netrw mentions the entries under the cursor or in the range', function(ws)
  local agent = running_agent(ws)
  H.write_file(ws .. '/my notes.txt', 'x\n')
  explore('my notes.txt')
  vim.cmd('GeminiAdd')
  local sent = paste('@my\\ notes.txt ') -- the file, not the netrw buffer
  agent.received(t, sent)
  vim.fn.search('^src/$')
  H.type('Vk:GeminiAdd<CR>') -- :'<,'>GeminiAdd: ./ is no entry; src/ is a directory
  sent = sent .. paste('@src/ ')
  agent.received(t, sent)
  vim.cmd('xnoremap <F6> <Cmd>GeminiAdd<CR>') -- a Visual-mode mapping, as the README suggests
  vim.fn.search('^src/$')
  H.type('Vj<F6>')
  agent.received(t, sent .. paste('@src/ @my\\ notes.txt '))
  t.eq(vim.fn.mode(), 'n')
  vim.cmd('1') -- the banner: netrw's own keys live there, nothing to mention
  local seen = H.said()
  command('GeminiAdd')
  t.eq(
    H.complaints(seen),
    { 'gemini-companion: no file under the cursor in this netrw buffer (or its plugin API changed)' }
  )
  t.eq(vim.api.nvim_get_current_line(), vim.fn.getline(1)) -- the banner was not acted on
end)

H.test(t, ':GeminiAdd in netrw tree listing names nested files', function(ws)
  local agent = running_agent(ws)
  vim.g.netrw_liststyle = 3 -- netrw's tree style: a row holds only the name
  explore('| src/')
  H.type('<CR>') -- open src/ in place
  t.wait_for(function()
    return vim.fn.search('greet\\.py$', 'w') > 0
  end, 'src/ opened in the tree')
  vim.cmd('GeminiAdd')
  vim.g.netrw_liststyle = nil
  agent.received(t, paste('@src/greet.py '))
end)

-- Stand-ins for the tree plugins (not installable in CI: they come from GitHub only), each answering
-- through the same public function the adapter calls on the real plugin, with the same shapes:
-- oil.get_current_dir + get_entry_on_line, neo-tree.sources.manager.get_state_for_window().tree:get_node,
-- nvim-tree.api.tree.get_node_under_cursor, mini.files.get_fs_entry. Each lists `tree` (absolute
-- paths, '..' for the parent row) one per line.
local TREE_MODULES =
  { oil = 'oil', ['neo-tree'] = 'neo-tree.sources.manager', NvimTree = 'nvim-tree.api', minifiles = 'mini.files' }

local function fake_trees(tree, ws)
  local function kind(p)
    return vim.fn.isdirectory(p) == 1 and 'directory' or 'file'
  end
  package.loaded['oil'] = {
    get_current_dir = function()
      return ws .. '/'
    end,
    get_entry_on_line = function(_, l)
      if tree[l] == '..' then
        return { name = '..', type = 'directory' }
      end
      -- oil lists one directory: an entry outside it has no row
      return vim.startswith(tree[l], ws .. '/') and { name = tree[l]:sub(#ws + 2), type = kind(tree[l]) } or nil
    end,
  }
  package.loaded['neo-tree.sources.manager'] = {
    get_state_for_window = function()
      return {
        tree = {
          get_node = function(_, l)
            return tree[l] == '..' and { type = 'message' } or { type = kind(tree[l]), path = tree[l] }
          end,
        },
      }
    end,
  }
  package.loaded['nvim-tree.api'] = {
    tree = {
      get_node_under_cursor = function()
        local p = tree[vim.api.nvim_win_get_cursor(0)[1]]
        return { name = vim.fs.basename(p), absolute_path = p ~= '..' and p or nil, type = kind(p) }
      end,
    },
  }
  package.loaded['mini.files'] = {
    get_fs_entry = function(_, l)
      local p = tree[l]
      return p ~= '..' and { fs_type = kind(p), name = vim.fs.basename(p), path = p } or nil
    end,
  }
end

for _, filetype in ipairs({ 'oil', 'neo-tree', 'NvimTree', 'minifiles' }) do
  H.test(t, ':GeminiAdd in a plugin file tree mentions its entries: ' .. filetype, function(ws)
    local agent = running_agent(ws)
    H.write_file(ws .. '/my notes.txt', 'x\n')
    local outside = vim.fn.resolve(vim.fn.tempname()) .. '/outside.txt'
    H.write_file(outside, 'x\n')
    fake_trees({ '..', ws .. '/src', ws .. '/my notes.txt', ws .. '/src/greet.py', outside }, ws)
    vim.cmd('enew')
    vim.api.nvim_buf_set_lines(0, 0, -1, false, { '../', 'src/', 'my notes.txt', '  greet.py', 'outside.txt' })
    vim.cmd('setlocal buftype=nofile filetype=' .. filetype)
    vim.cmd('3')
    vim.cmd('GeminiAdd')
    local sent = paste('@my\\ notes.txt ')
    agent.received(t, sent)
    vim.cmd('1,5GeminiAdd') -- the parent row is no entry; outside the workspace: absolute
    local absolute = filetype == 'oil' and '' or ' @' .. outside -- oil lists one directory
    sent = sent .. paste('@src/ @my\\ notes.txt @src/greet.py' .. absolute .. ' ')
    agent.received(t, sent)
    t.eq(vim.fn.line('.'), 3) -- nvim-tree's adapter visits each line: the cursor is put back
    vim.cmd('2GeminiSend') -- in a tree its lines are names: :GeminiSend mentions the entries too
    agent.received(t, sent .. paste('@src/ '))
    package.loaded[TREE_MODULES[filetype]] = {} -- the plugin's API changed
    local seen = H.said()
    command('GeminiAdd')
    t.eq(H.complaints(seen), {
      ('gemini-companion: no file under the cursor in this %s buffer (or its plugin API changed)'):format(filetype),
    })
    for _, module in pairs(TREE_MODULES) do
      package.loaded[module] = nil
    end
  end)
end

H.test(t, ":GeminiAdd escapes what ends gemini's @path and warns of what the agent cannot read", function(ws)
  local agent = running_agent(ws)
  H.write_file(ws .. '/draft (copy), v2.py', 'x\n')
  vim.cmd('GeminiAdd draft (copy), v2.py')
  local sent = paste('@draft\\ \\(copy\\)\\,\\ v2.py ') -- gemini's @path would end at ( or ,
  vim.cmd('GeminiAdd src')
  sent = sent .. paste('@src/ ') -- a directory, as gemini and claude take one
  agent.received(t, sent)
  vim.api.nvim_buf_set_lines(0, 0, 1, false, { 'def hello(name):' }) -- not written: the agent reads the disk
  local seen = H.said()
  vim.cmd('GeminiAdd')
  sent = sent .. paste('@src/greet.py ')
  agent.received(t, sent)
  t.eq(H.complaints(seen), {
    'gemini-companion: src/greet.py has unsaved changes: the agent reads the file on disk (:w first)',
  })
  vim.cmd('edit new.py') -- never written: nothing on disk to read
  seen = H.said()
  command('GeminiAdd')
  t.eq(H.complaints(seen), { 'gemini-companion: new.py is not written to disk yet (:w first)' })
  t.eq(agent.typed(), sent)
end)

H.test(t, 'sending to an agent that exited in a kept terminal says so', function(ws)
  -- snacks keeps the terminal of an agent that exited when its auto_close is off (so does the stand-in).
  vim.opt.runtimepath:append(t.root .. '/tests/fixtures/snacks_standin')
  package.loaded['snacks'], package.loaded['snacks.terminal'] = nil, nil
  local agent = H.agent()
  use(agent, { provider = 'snacks' })
  open_code(ws)
  vim.cmd('Gemini')
  agent.started(t)
  local shown = H.agent_windows()[1]
  vim.fn.chansend(shown.job, '\4') -- the agent exits; its buffer stays
  t.wait_for(function()
    return vim.fn.jobwait({ shown.job }, 0)[1] ~= -1
  end, 'the agent exited')
  vim.cmd('stopinsert | wincmd p')
  local seen = H.said()
  command('GeminiAdd')
  local said = H.complaints(seen)
  t.eq(#said, 1)
  assert(
    said[1]:find('the agent has exited (its terminal is still open): close that terminal, start the agent', 1, true),
    said[1]
  )
  vim.opt.runtimepath:remove(t.root .. '/tests/fixtures/snacks_standin')
end)

H.test(t, "sending from the agent's own terminal is refused", function(ws)
  local agent = running_agent(ws)
  vim.api.nvim_set_current_win(H.agent_windows()[1].win)
  local seen = H.said()
  command('GeminiSend') -- would paste the agent's own screen into its prompt
  t.eq(H.complaints(seen), { "gemini-companion: this is the agent's own terminal: send from a code buffer" })
  t.eq(agent.typed(), '')
end)

H.test(t, ':GeminiAdd takes a dollar in a file name as written', function(ws)
  local agent = running_agent(ws)
  H.write_file(ws .. '/routes/posts.$postId.tsx', 'x\n')
  t.eq(vim.fn.getcompletion('GeminiAdd routes/posts.', 'cmdline'), { 'routes/posts.\\$postId.tsx' }) -- escaped, as file-name completion does
  local seen = H.said()
  vim.cmd('GeminiAdd routes/posts.$postId.tsx') -- typed
  vim.cmd('GeminiAdd routes/posts.\\$postId.tsx') -- completed
  local mention = paste('@routes/posts.\\$postId.tsx ') -- gemini's own escape
  agent.received(t, mention .. mention)
  t.eq(H.complaints(seen), {})
end)

H.test(t, 'a selection of many lines arrives whole while Neovim stays free', function(ws)
  -- Issue 29: past STREAM_LINES a send is read, filtered and pasted in time slices. What arrives
  -- is what a small send would give: one paste, the fence longer than any backtick run in it (one
  -- late in the text), every control character out.
  local agent = running_agent(ws)
  local lines = {}
  for i = 0, 29999 do
    lines[i + 1] = ('row_%d = %d'):format(i, i)
  end
  lines[25001] = "s = '````'" -- a run of four backticks: the fence must be five
  lines[12346] = "bad = '\27[201~\194\155'" -- a paste end and a C1 CSI: both taken out
  H.write_file(ws .. '/big.py', table.concat(lines, '\n') .. '\n')
  vim.cmd('edit big.py')
  vim.cmd('%GeminiSend')
  -- The command returned after its first slice: the send goes on between the user's keys.
  t.eq(require('gemini_companion.terminal.send').sending, true)
  local seen = H.said()
  vim.cmd('1GeminiSend') -- and a second paste never lands inside the first
  t.eq(H.messages(seen), {
    'gemini-companion: the last send is still being typed into the agent: send again once it is done',
  })
  lines[12346] = "bad = '[201~'"
  local fence = '`````'
  local text = '@big.py (lines 1-30000):\n' .. fence .. 'python\n' .. table.concat(lines, '\n') .. '\n' .. fence .. '\n'
  agent.received(t, paste(text))
end)
