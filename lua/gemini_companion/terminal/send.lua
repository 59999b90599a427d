-- Typing into the agent's prompt: :GeminiSend (lines or a Visual selection), :GeminiAdd (a file),
-- :GeminiSendDiagnostics. Text goes in as one bracketed paste (ESC[200~ ... ESC[201~), so a
-- multi-line selection arrives whole and nothing is submitted: the user adds a question and
-- presses Enter. Targets: the agent's terminal, or with provider 'none' a tmux pane.
local notify = require('gemini_companion.notify')
local agents = require('gemini_companion.agents')
local terminal = require('gemini_companion.terminal')
local trees = require('gemini_companion.terminal.trees')
local sanitize = require('gemini_companion.sanitize')

local M = {}

M.PASTE_START, M.PASTE_END = '\27[200~', '\27[201~'

--- The bytes that paste `text` into a terminal application. A paste end inside the text would
--- end the paste early (and let the rest act as typed keys): sanitize takes out every escape.
function M.bracketed(text)
  return M.PASTE_START .. sanitize.agent_text(text) .. M.PASTE_END
end

--- `path` as the agent (started in `cwd`) names it: relative inside cwd, a directory with a
--- trailing slash; escaped for the agent's @mention (its profile's mention_escape).
function M.mention_path(path, cwd, dir, agent)
  local full = vim.fs.normalize(vim.fn.fnamemodify(path, ':p'))
  local root = vim.fs.normalize(cwd):gsub('/$', '') .. '/'
  if full .. '/' == root then
    full = '.'
  elseif full:sub(1, #root) == root then
    full = full:sub(#root + 1)
  end
  return (full:gsub(agents.profile(agent or '').mention_escape, '\\%0')) .. (dir and '/' or '')
end

local function lines_suffix(first, last)
  return first == last and ('#L%d'):format(first) or ('#L%d-%d'):format(first, last)
end

--- What :GeminiSend types for lines `first`..`last` of `path` (nil for a buffer with no file).
--- An agent that reads the lines of an `@path#L3-5` mention itself (Claude Code) gets that; others
--- (gemini's @ takes whole files) get the mention, the range and the text.
function M.selection_text(agent, path, first, last, text, filetype)
  if agents.profile(agent).line_mentions and path then
    return '@' .. path .. lines_suffix(first, last) .. ' '
  end
  local where = path and ('@%s (lines %d-%d):\n'):format(path, first, last) or ''
  local fence = '```' -- longer than any run of backticks in the text, which would end it
  for run in text:gmatch('`+') do
    fence = #run >= #fence and ('`'):rep(#run + 1) or fence
  end
  return ('%s%s%s\n%s\n%s\n'):format(where, fence, filetype or '', text, fence)
end

--- Deliver `text` to the agent; `mentions` = a list of {path (absolute), first, last} lets an agent
--- with an IDE channel (Claude Code) take them as at-mentions through its session instead.
function M.deliver(text, mentions)
  if M.sending then -- a paste into the middle of another would mix them
    return notify.say('the last send is still being typed into the agent: send again once it is done', 'warn')
  end
  local target, err = terminal.target()
  if not target then
    return notify.say(err, 'error')
  end
  local s = target.settings
  local module = agents.profile(terminal.agent_name(s)).mention
  if mentions and module then
    local ok, mod = pcall(require, module)
    if ok and type(mod) == 'table' and type(mod.at_mentioned) == 'function' then
      local called, delivered = pcall(function()
        return vim.iter(mentions):all(function(m)
          return mod.at_mentioned(m.path, m.first, m.last) == true
        end)
      end)
      if called and delivered then
        if target.buf then
          target.reveal()
        end
        return true
      end
    end
  end
  if s.provider == 'none' then
    return M.tmux(text, s)
  end
  if not target.buf then
    return M.start_then_mention(mentions, s)
  end
  local channel = vim.bo[target.buf].channel
  if vim.fn.jobwait({ channel }, 0)[1] ~= -1 then -- e.g. snacks with auto_close off keeps the buffer
    return notify.say(
      'the agent has exited (its terminal is still open): close that terminal, start the agent with :Gemini, then send again',
      'error'
    )
  end
  vim.api.nvim_chan_send(channel, M.bracketed(text))
  target.reveal()
  return true
end

M.CONNECT_WAIT_MS = 20000 -- claude takes a few seconds to start and connect on a slow machine

--- No agent running: start it, as :Gemini does. An agent with an IDE channel (Claude Code) then gets
--- `mentions` through its session once it connects (the protocol carries them, nothing is typed).
--- Any other agent is only started: text typed into a program that is starting could answer its first questions
--- (gemini asks whether to trust the folder, with numbered choices).
function M.start_then_mention(mentions, s)
  if not terminal.toggle() then
    return -- it said why
  end
  local name = terminal.agent_name(s)
  local profile = agents.profile(name)
  local channel = profile.ide_channel
  local served = channel and profile.mention and require('gemini_companion.config').get_in(channel, 'enabled') ~= false
  if not (mentions and served) then
    return notify.say('no agent was running: starting it (:Gemini); send again once its prompt shows', 'warn')
  end
  local mention = require(profile.mention)
  terminal.when(mention.connected, 100, M.CONNECT_WAIT_MS, function(connected)
    if not connected then
      return notify.say(
        ('%s did not connect to this Neovim within %d s, so nothing was sent: type /ide in %s to connect it, then send again'):format(
          name,
          M.CONNECT_WAIT_MS / 1000,
          name
        ),
        'error'
      )
    end
    local buf = (terminal.target() or {}).buf
    for _, m in ipairs(mentions) do
      if buf and mention.after_start then -- (it may drop a mention that comes too soon)
        mention.after_start(buf, m.path, m.first, m.last)
      else
        mention.at_mentioned(m.path, m.first, m.last)
      end
    end
  end)
  return true
end

--- provider 'none': paste into the tmux pane `terminal.tmux_target` (load-buffer, then
--- paste-buffer -p, which brackets the paste when the agent asked for bracketed paste, as tmux
--- does for a paste by hand). Outside tmux nothing can type into another terminal: say so.
function M.tmux(text, s)
  if (vim.env.TMUX or '') == '' or s.tmux_target == '' then
    return notify.say(
      "terminal.provider is 'none'"
        .. ((vim.env.TMUX or '') == '' and ' and Neovim is not inside tmux' or ' and terminal.tmux_target is not set')
        .. ': cannot type into the agent. Use the native or snacks provider (:Gemini), or inside tmux set '
        .. 'terminal.tmux_target to the agent\'s pane (e.g. "{right}")',
      'error'
    )
  end
  local buffer = 'gemini-companion-' .. vim.fn.getpid()
  -- tmux passes a paste end in the text through as it is: the same filter as the terminal's paste
  local stdin = sanitize.agent_text(text)
  local load = vim.system({ 'tmux', 'load-buffer', '-b', buffer, '-' }, { stdin = stdin, text = true }):wait()
  local paste = load.code == 0
    and vim
      .system({ 'tmux', 'paste-buffer', '-p', '-r', '-d', '-b', buffer, '-t', s.tmux_target }, { text = true })
      :wait()
  if not paste or paste.code ~= 0 then
    return notify.say(
      ('tmux could not paste into %q: %s'):format(s.tmux_target, vim.trim((paste or load).stderr or '')),
      'error'
    )
  end
  return true
end

--- `path` as the agent the current tab page means names it (see mention_path).
local function mention(path, dir)
  local target = terminal.target()
  local s = target and target.settings or { cmd = '' }
  return M.mention_path(path, s.cwd or vim.fn.getcwd(-1, -1), dir, terminal.agent_name(s))
end

--- The buffer's file, absolute, or nil for a buffer with no file.
local function buffer_file(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  return name ~= '' and vim.bo[buf].buftype == '' and vim.fn.fnamemodify(name, ':p') or nil
end

--- The Visual selection's lines when a <Cmd> mapping runs in Visual mode (no range), after
--- leaving Visual mode; else nil.
local function visual_lines()
  if not vim.fn.mode():match('^[vV\22]') then
    return nil
  end
  local a, b = vim.fn.getpos('v')[2], vim.fn.getpos('.')[2]
  vim.api.nvim_feedkeys(vim.keycode('<Esc>'), 'nx', false)
  return math.min(a, b), math.max(a, b)
end

--- :GeminiAdd from a file tree: the entries on the command's lines (the cursor's by default).
local function add_from_tree(buf, opts)
  local first, last = visual_lines()
  first, last = first or opts.line1, last or opts.line2
  local entries = trees.entries(buf, first, last)
  if #entries == 0 then
    return notify.say(
      ('no file under the cursor in this %s buffer (or its plugin API changed)'):format(vim.bo[buf].filetype),
      'error'
    )
  end
  local words = vim.tbl_map(function(e)
    return '@' .. mention(e.path, e.dir)
  end, entries)
  return M.deliver(table.concat(words, ' ') .. ' ', entries)
end

-- Past this many lines a selection is read, filtered and pasted in time slices (slices.lua): 25 MB
-- read and filtered in one go held Neovim for about 1.9 s (reading 0.26 s, the sanitizer 1.4 s).
M.STREAM_LINES = 20000
local READ_LINES = 2000 -- lines read per step
local PIECE_BYTES = 64 * 1024 -- bytes filtered and pasted per step

--- The piece of `text` from byte `i`: at most PIECE_BYTES, never cut inside a UTF-8 sequence
--- (the sanitizer must see a C1 control whole to take it out).
function M.piece(text, i)
  local j = math.min(#text, i + PIECE_BYTES - 1)
  while j < #text and j > i do
    local next_byte = text:byte(j + 1)
    if next_byte < 0x80 or next_byte >= 0xC0 then -- it starts a character: cut before it
      break
    end
    j = j - 1
  end
  return text:sub(i, j)
end

--- Inside slices.run: lines `first`..`last` of `buf` (of the Visual `region` if given) as texts
--- to join with newlines (never joined into one: copying megabytes at once is a stall of its
--- own), read a step at a time, and the fence longer than any run of backticks in them. Gives up
--- (error 'changed') if the buffer changes meanwhile: what was selected is no longer there.
local function read_slowly(buf, first, last, region)
  local tick, parts, fence = vim.api.nvim_buf_get_changedtick(buf), {}, '```'
  for from = first, last, READ_LINES do
    local to = math.min(last, from + READ_LINES - 1)
    local chunk
    if region and region.mode ~= 'V' then -- linewise, the region is its lines
      local a = from == first and region.from or { 0, from, 1, 0 }
      local b = to == last and region.to or { 0, to, vim.v.maxcol, 0 }
      chunk = table.concat(vim.fn.getregion(a, b, { type = region.mode }), '\n')
    else
      chunk = require('gemini_companion.bulk_lines').get(buf, from - 1, to, '\n') -- no Lua string a line
    end
    for run in chunk:gmatch('`+') do
      fence = #run >= #fence and ('`'):rep(#run + 1) or fence
    end
    parts[#parts + 1] = chunk
    require('gemini_companion.slices').pause()
    if vim.api.nvim_buf_get_changedtick(buf) ~= tick then
      error('changed', 0)
    end
  end
  return parts, fence
end

--- Inside slices.run: paste `head`, the `parts` joined with newlines and `tail` into `channel` as
--- one bracketed paste, a piece per step, each piece through the sanitizer.
local function paste_slowly(channel, head, parts, tail)
  vim.api.nvim_chan_send(channel, M.PASTE_START .. sanitize.agent_text(head))
  for n, part in ipairs(parts) do
    local i = 1
    while i <= #part do
      local piece = M.piece(part, i)
      vim.api.nvim_chan_send(channel, sanitize.agent_text(piece))
      i = i + #piece
      require('gemini_companion.slices').pause()
    end
    if n < #parts then
      vim.api.nvim_chan_send(channel, '\n')
    end
  end
  vim.api.nvim_chan_send(channel, sanitize.agent_text(tail) .. M.PASTE_END)
end

M.sending = false -- a large send is being read or pasted (one at a time: pastes must not interleave)

--- :GeminiSend of many lines into the agent's running terminal `target`: read and pasted in time
--- slices, so Neovim stays responsive, as selection_text would write them.
local function send_slowly(target, buf, first, last, region, path)
  M.sending = true
  local channel = vim.bo[target.buf].channel
  require('gemini_companion.slices').run(function()
    local parts, fence = read_slowly(buf, first, last, region)
    local where = path and ('@%s (lines %d-%d):\n'):format(path, first, last) or ''
    paste_slowly(channel, where .. fence .. vim.bo[buf].filetype .. '\n', parts, '\n' .. fence .. '\n')
  end, function(ok, err)
    M.sending = false
    if ok then
      target.reveal()
    elseif err == 'changed' then
      notify.say('the buffer changed while its lines were read: nothing was sent, send again', 'warn')
    else
      notify.say('sending to the agent failed: ' .. tostring(err), 'error')
    end
  end)
  return true
end

--- What :GeminiSend sends: lines `first`, `last` and, when the range is the Visual selection
--- (charwise and blockwise too), that `region`: { mode, from, to } (getpos() positions, in order).
local function selected(opts)
  local first, last = opts.line1, opts.line2
  local mode, vstart, vend = vim.fn.visualmode(), vim.fn.getpos("'<"), vim.fn.getpos("'>")
  if vim.fn.mode():match('^[vV\22]') then -- a <Cmd> mapping: still in Visual mode, no range
    mode, vstart, vend = vim.fn.mode():sub(1, 1), vim.fn.getpos('v'), vim.fn.getpos('.')
    first, last = math.min(vstart[2], vend[2]), math.max(vstart[2], vend[2])
    vim.api.nvim_feedkeys(vim.keycode('<Esc>'), 'nx', false)
    opts = { range = 2 }
  end
  if opts.range ~= 2 or mode == '' or math.min(vstart[2], vend[2]) ~= first or math.max(vstart[2], vend[2]) ~= last then
    return first, last, nil
  end
  if vstart[2] > vend[2] or (vstart[2] == vend[2] and vstart[3] > vend[3]) then
    vstart, vend = vend, vstart
  end
  return first, last, { mode = mode, from = vstart, to = vend }
end

--- :GeminiSend — a command's range (line1..line2), the Visual selection when the range is it
--- (charwise and blockwise too), else the cursor's line; in a file tree, as :GeminiAdd.
function M.send(opts)
  local buf = vim.api.nvim_get_current_buf()
  if trees.is_tree(buf) then -- its lines are names: the agent wants the files (as claudecode does)
    return add_from_tree(buf, opts)
  end
  local target = terminal.target()
  if target and target.buf == buf then
    return notify.say("this is the agent's own terminal: send from a code buffer", 'error')
  elseif M.sending then
    return notify.say('the last send is still being typed into the agent: send again once it is done', 'warn')
  end
  local first, last, region = selected(opts)
  local file = buffer_file(buf)
  local path = file and mention(file)
  local agent = terminal.agent_name((target and target.settings) or terminal.settings() or { cmd = '' })
  local mentions = file and { { path = file, first = first, last = last } }
  if agents.profile(agent).line_mentions and path then -- the agent reads the lines itself
    return M.deliver(M.selection_text(agent, path, first, last, ''), mentions)
  end
  local running = target and target.buf and target.settings.provider ~= 'none'
  local block = region and region.mode == '\22' -- (its columns are the whole block's: read at once)
  if
    running
    and last - first >= M.STREAM_LINES
    and not block
    and vim.fn.jobwait({ vim.bo[target.buf].channel }, 0)[1] == -1
  then
    return send_slowly(target, buf, first, last, region, path)
  end
  local lines = region and vim.fn.getregion(region.from, region.to, { type = region.mode })
    or vim.api.nvim_buf_get_lines(buf, first - 1, last, false)
  local text = M.selection_text(agent, path, first, last, table.concat(lines, '\n'), vim.bo[buf].filetype)
  return M.deliver(text, mentions)
end

--- The file :GeminiAdd's argument names (absolute; nil: none exists). Taken as written first, so a
--- name like `posts.$postId.tsx` is never expanded as an environment variable; then with the
--- backslashes completion puts before spaces and specials removed; `%`, `#`, `<cfile>`: expanded.
function M.argument_file(arg)
  local tries = { arg, (arg:gsub('\\(.)', '%1')) }
  if arg:match('^[%%#<]') then
    tries[#tries + 1] = vim.fn.expand(arg)
  end
  for _, name in ipairs(tries) do
    local full = name ~= '' and vim.fn.fnamemodify(name, ':p')
    if full and vim.uv.fs_stat(full) then
      return full
    end
  end
end

--- :GeminiAdd's completion: file names, escaped as :GeminiAdd reads them (a Lua function, since
--- `complete = 'file'` makes Neovim expand `$name` in the argument before the command sees it).
function M.complete(lead)
  local typed = lead:gsub('\\(.)', '%1')
  -- getcompletion() finds nothing for a `$` (it expands it): any character there, then filter.
  local found = vim.fn.getcompletion((typed:gsub('%$', '?')), 'file')
  return vim.tbl_map(
    vim.fn.fnameescape,
    vim.tbl_filter(function(name)
      return vim.startswith(name, typed)
    end, found)
  )
end

--- :GeminiAdd [file] — an @mention of the file or directory; without one, the current buffer's
--- file, or in a file tree (netrw, oil, neo-tree, nvim-tree, mini.files) the entries on the lines.
function M.add(opts)
  local file, buf = opts.args, vim.api.nvim_get_current_buf()
  local full
  if file and file ~= '' then
    full = M.argument_file(file)
    if not full then
      return notify.say(('no such file or directory: %s'):format(file), 'error')
    end
  elseif trees.is_tree(buf) then
    return add_from_tree(buf, opts)
  else
    full = buffer_file(buf)
    if not full then
      return notify.say('this buffer has no file to mention (name a file: :GeminiAdd {file})', 'error')
    end
    -- The agent reads the file, not the buffer: say when what it reads is not what the user sees.
    local name = vim.fn.fnamemodify(full, ':~:.')
    if not vim.uv.fs_stat(full) then
      return notify.say(('%s is not written to disk yet (:w first)'):format(name), 'error')
    elseif vim.bo[buf].modified then
      notify.say(('%s has unsaved changes: the agent reads the file on disk (:w first)'):format(name), 'warn')
    end
  end
  local dir = vim.fn.isdirectory(full) == 1
  return M.deliver('@' .. mention(full, dir) .. ' ', { { path = full } })
end

local SEVERITY = { 'error', 'warning', 'info', 'hint' }

--- :GeminiSendDiagnostics — the current buffer's diagnostics (with a range: of those lines).
function M.diagnostics(opts)
  local buf = vim.api.nvim_get_current_buf()
  local first, last = 1, vim.api.nvim_buf_line_count(buf)
  if opts.range > 0 then
    first, last = opts.line1, opts.line2
  end
  local items = vim.tbl_filter(function(d)
    return d.lnum + 1 >= first and d.lnum + 1 <= last
  end, vim.diagnostic.get(buf))
  if #items == 0 then
    return notify.say(opts.range > 0 and 'no diagnostics on these lines' or 'no diagnostics in this buffer', 'warn')
  end
  table.sort(items, function(a, b)
    return a.lnum < b.lnum or (a.lnum == b.lnum and a.col < b.col)
  end)
  local file = buffer_file(buf)
  local out = { ('Diagnostics in %s:'):format(file and '@' .. mention(file) or 'this buffer') }
  for _, d in ipairs(items) do
    local source = d.source and (' [' .. d.source .. ']') or ''
    out[#out + 1] = ('- line %d, col %d: %s: %s%s'):format(
      d.lnum + 1,
      d.col + 1,
      SEVERITY[d.severity] or 'note',
      d.message,
      source
    )
  end
  return M.deliver(table.concat(out, '\n') .. '\n')
end

return M
