-- The agent terminal (was tests/integration/test_terminal.py): :Gemini and :GeminiFocus with the
-- providers native, snacks (tests/fixtures/snacks_standin, following snacks.nvim's terminal API)
-- and none, split or float, one global agent or one per tab. The agent is the stand-in (H.agent):
-- like gemini it takes the terminal raw and records what it was given. The host is stubbed
-- (host_stub.lua): the server's start is bridge.lua's ON_STATE and ON_READY, as Python sends them.
local t = ...
local H = require('host_stub')

-- Headless Neovim writes its messages to stdout, where the runner writes a case's JSON line: the
-- mode message of a terminal shown (insert mode pending until the spec's next wait) is left out.
vim.o.showmode = false

local SNACKS = t.root .. '/tests/fixtures/snacks_standin'

--- The user's terminal settings, as setup() sets them. (The screen is headless Neovim's 80
--- columns: setting 'columns' without a UI trips Neovim's own asserts in a debug build.)
local function use(terminal)
  require('gemini_companion').setup({ terminal = terminal })
end

local function current_buf()
  return vim.api.nvim_get_current_buf()
end

local function running(job)
  return vim.fn.jobwait({ job }, 0)[1] == -1
end

--- Run an Ex command as a user would: an error message is shown, not raised into the spec.
local function command(cmd)
  pcall(vim.cmd, cmd)
end

--- The server starts (as lifecycle.py pushes it): running on `port`, ready with its token.
local function server_ready(port, token)
  local bridge = require('gemini_companion.bridge')
  bridge.on_state({ state = 'running', workspace_path = vim.fn.getcwd(), client_count = 0 })
  bridge.on_ready({ url = ('http://127.0.0.1:%d/mcp'):format(port), port = port, token = token, quiet = true })
end

H.test(t, ':Gemini toggles one agent that lives on while hidden', function(ws)
  local agent = H.agent()
  use({ cmd = agent.cmd })
  vim.cmd('edit notes.txt')
  local editing = current_buf()

  vim.cmd('Gemini')
  local info = agent.started(t)
  local shown = H.agent_windows()
  t.eq(#shown, 1)
  shown = shown[1]
  t.eq({ shown.relative, shown.col > 0 }, { '', true }) -- a split on the right
  t.eq({ vim.o.columns, shown.width }, { 80, 32 }) -- terminal.size 0.4 of the columns
  t.eq(current_buf(), shown.buf) -- the cursor is in the agent
  -- It finds this Neovim's server through the variables ON_READY set, in Neovim's cwd.
  t.eq(info.env.GEMINI_CLI_IDE_SERVER_PORT, '1')
  t.eq(info.cwd, ws)

  vim.cmd('stopinsert | Gemini')
  t.eq(H.agent_windows(), {})
  t.eq(current_buf(), editing)
  t.eq(running(shown.job), true)

  vim.cmd('Gemini')
  local again = H.agent_windows()
  t.eq(#again, 1)
  t.eq({ again[1].buf, again[1].job }, { shown.buf, shown.job })
  t.eq(agent.started(t).pid, info.pid) -- the same agent, not a new one
  t.eq(H.complaints(), {})
end)

H.test(t, ':GeminiFocus goes to the agent and from inside hides it', function()
  local agent = H.agent()
  use({ cmd = agent.cmd, position = 'left', size = 30 })
  vim.cmd('GeminiFocus') -- not running yet: started and focused
  agent.started(t)
  local shown = H.agent_windows()[1]
  t.eq({ shown.col, shown.width }, { 0, 30 })
  vim.cmd('stopinsert | wincmd l')
  assert(current_buf() ~= shown.buf)
  vim.cmd('GeminiFocus')
  t.eq(current_buf(), shown.buf)
  vim.cmd('stopinsert | GeminiFocus')
  t.eq(H.agent_windows(), {})
  t.eq(running(shown.job), true)
end)

H.test(t, 'a float, and the last window of a tab', function()
  local agent = H.agent()
  use({ cmd = agent.cmd, position = 'float', size = 0.5 })
  vim.cmd('Gemini')
  agent.started(t)
  local shown = H.agent_windows()[1]
  t.eq({ shown.relative, shown.width }, { 'editor', 40 }) -- half of 80 columns
  vim.cmd('stopinsert | Gemini')
  t.eq(H.agent_windows(), {})
  -- A split that became the tab's only window is hidden by showing another buffer there.
  use({ cmd = agent.cmd, position = 'bottom' })
  vim.cmd('Gemini')
  vim.cmd('stopinsert | only')
  vim.cmd('Gemini')
  t.eq(H.agent_windows(), {})
  t.eq(#vim.api.nvim_tabpage_list_wins(0), 1)
end)

H.test(t, 'one agent per tab page: it ends with its tab page', function()
  local first, second = H.agent(), H.agent()
  use({ cmd = first.cmd, scope = 'tab' })
  vim.cmd('Gemini')
  first.started(t)
  local one = H.agent_windows()[1]
  vim.cmd('stopinsert | tabnew')
  use({ cmd = second.cmd, scope = 'tab' })
  vim.cmd('Gemini')
  second.started(t)
  local two = H.agent_windows()[1]
  assert(two.buf ~= one.buf)
  vim.cmd('stopinsert | tabclose') -- the second tab's agent ends with it
  t.wait_for(function()
    return vim.fn.bufexists(two.buf) == 0
  end, "the tab's agent gone")
  t.eq(running(one.job), true)
end)

H.test(t, 'one agent for all tab pages', function()
  local solo = H.agent()
  use({ cmd = solo.cmd })
  vim.cmd('Gemini')
  solo.started(t)
  local shared = H.agent_windows()[1]
  vim.cmd('stopinsert | tabnew')
  vim.cmd('Gemini')
  local same = H.agent_windows()
  t.eq(#same, 1)
  t.eq(same[1].buf, shared.buf)
end)

H.test(t, 'the agent quitting closes its window and the next toggle starts anew', function()
  local agent = H.agent()
  use({ cmd = agent.cmd })
  vim.cmd('Gemini')
  local pid = agent.started(t).pid
  local shown = H.agent_windows()[1]
  vim.fn.chansend(shown.job, '\4') -- the agent exits with status 0
  t.wait_for(function()
    return #H.agent_windows() == 0
  end, 'the window closed')
  os.remove(agent.record .. '/env.json')
  vim.cmd('Gemini')
  assert(agent.started(t).pid ~= pid, 'a new agent')
end)

H.test(t, 'settings and providers that cannot work say why', function()
  use({ provider = 'kitty' })
  local seen = H.said()
  command('Gemini')
  t.eq(H.complaints(seen), {
    'gemini-companion: terminal.provider must be one of native, snacks, none (got "kitty")',
  })
  use({ provider = 'snacks' })
  seen = H.said()
  command('Gemini')
  t.eq(H.complaints(seen), {
    "gemini-companion: terminal.provider is 'snacks' but snacks.nvim is not installed (require('snacks') failed)",
  })
  use({ cmd = { 'no-such-agent-here' } })
  seen = H.said()
  command('Gemini')
  local said = H.complaints(seen)
  t.eq(#said, 1)
  assert(said[1]:find('cannot start', 1, true) and said[1]:find('no-such-agent-here', 1, true), said[1])
  t.eq(H.agent_windows(), {})
  use({ provider = 'none', cmd = 'claude' })
  seen = H.said()
  command('Gemini')
  said = H.complaints(seen)
  t.eq(#said, 1)
  assert(said[1]:find([[provider is 'none': run "claude" in your own terminal]], 1, true), said[1])
  t.eq(H.agent_windows(), {})
end)

H.test(t, "the snacks provider uses snacks' terminal", function(ws)
  vim.opt.runtimepath:append(SNACKS)
  package.loaded['snacks'], package.loaded['snacks.terminal'] = nil, nil
  local agent = H.agent()
  use({ cmd = agent.cmd, provider = 'snacks', size = 0.3 })
  vim.cmd('Gemini')
  agent.started(t)
  local toggles = vim.tbl_filter(function(call)
    return call.fn == 'toggle'
  end, require('snacks.terminal').calls)
  t.eq(#toggles, 1)
  t.eq({ toggles[1].cmd, toggles[1].opts.count }, { agent.cmd, 1 })
  t.eq(toggles[1].opts.win, { position = 'right', width = 0.3 })
  t.eq(toggles[1].opts.cwd, ws)
  local shown = H.agent_windows()
  t.eq(#shown, 1)
  vim.cmd('Gemini')
  t.eq(H.agent_windows(), {})
  vim.cmd('GeminiFocus')
  local again = H.agent_windows()
  t.eq({ #again, again[1].buf, current_buf() }, { 1, shown[1].buf, shown[1].buf })
  vim.opt.runtimepath:remove(SNACKS)
end)

H.test(t, 'an agent asked for while the server starts waits for it', function()
  local agent = H.agent()
  use({ cmd = agent.cmd })
  vim.cmd('GeminiStop')
  H.server_stopped()
  -- The server is not up yet. Asked twice meanwhile: still one agent, shown.
  vim.cmd('GeminiStart')
  vim.cmd('Gemini')
  vim.cmd('Gemini')
  server_ready(4242, 'the-token')
  local env = agent.started(t).env
  t.eq(#H.agent_windows(), 1)
  t.eq({ env.GEMINI_CLI_IDE_SERVER_PORT, env.GEMINI_CLI_IDE_AUTH_TOKEN }, { '4242', 'the-token' })
end)

H.test(t, 'an agent opened as Neovim starts waits for the server', function()
  local agent = H.agent()
  use({ cmd = agent.cmd })
  H.server_stopped()
  -- The user's own VimEnter autocmd runs before the plugin's, which starts the server (`boot`).
  require('gemini_companion.state').booted = false
  vim.cmd('Gemini')
  require('gemini_companion.to_host').call('boot')
  server_ready(4242, 'the-token')
  t.eq(agent.started(t).env.GEMINI_CLI_IDE_SERVER_PORT, '4242')
end)

H.test(t, ':checkhealth reports the agent and the extension', function(ws)
  local agent = H.agent()
  use({ cmd = agent.cmd })
  local home = vim.env.HOME
  vim.env.HOME = ws
  local function report()
    vim.cmd('silent checkhealth gemini_companion')
    local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
    vim.cmd('bwipeout!')
    return text:sub((assert(text:find('Agent beside the editor', 1, true))))
  end
  local ok, err = pcall(function()
    local text = report()
    assert(text:find(('OK the agent { "%s", "%s"'):format(agent.cmd[1], agent.cmd[2]), 1, true), text)
    assert(text:find(':GeminiExtensionInstall gives them', 1, true), text)
    vim.cmd('GeminiExtensionInstall')
    use({ cmd = 'no-such-agent --flag' })
    text = report()
    assert(
      text:find('WARNING the agent "no-such-agent --flag": no-such-agent is not an executable on $PATH', 1, true),
      text
    )
    assert(text:find('OK the Gemini CLI extension is installed', 1, true), text)
  end)
  vim.env.HOME = home
  assert(ok, err)
end)

-- An agent started in a terminal of the user's own (`:terminal claude`, not :Gemini): the server
-- is told at once, as for :Gemini, so it loads what serves clients before the agent connects.
H.test(t, 'an agent the user starts with :terminal gets the server ready, another program does not', function(ws)
  H.start()
  local program = ws .. '/claude' -- named as the agent is; it waits for its input as claude would
  vim.uv.fs_symlink('/bin/cat', program)
  local function starting()
    return #vim.tbl_filter(function(e)
      return e.type == 'agent_starting'
    end, H.events())
  end
  vim.cmd('terminal /bin/cat')
  t.eq(starting(), 0)
  vim.cmd('terminal ' .. vim.fn.fnameescape(program) .. ' --resume')
  t.eq(starting(), 1)
end)
