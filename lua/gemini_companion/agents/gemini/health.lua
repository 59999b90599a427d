-- :checkhealth gemini_companion, Gemini CLI's part: what `gemini` will see when it looks for this
-- Neovim (its program and version, IDE mode in its settings, other editors serving the same
-- workspace, the discovery directory a separate terminal must share).
local state = require('gemini_companion.state')
local ide_mode = require('gemini_companion.agents.gemini.ide_mode')

local M = {}

--- What private_files.py refuses on the way to the discovery directory (a link, another user's
--- folder; for root too), as one line — or nil.
local function refused_on_the_way(dir)
  for _, path in ipairs({ vim.fs.dirname(dir), dir }) do
    local st = vim.uv.fs_lstat(path)
    local why = st and st.type == 'link' and 'is a symbolic link'
      or st and st.uid ~= vim.uv.getuid() and ('belongs to uid %d'):format(st.uid)
    if why then
      return ('%s %s: the server refuses to write its discovery file there'):format(path, why)
    end
  end
end
--- The directory gemini looks in for this Neovim's discovery file: one we may write.
local function check_discovery_dir(h)
  local dir = require('gemini_companion.agents.gemini.status').discovery_dir()
  local refused = refused_on_the_way(dir)
  if refused then
    h.error(refused, { 'remove it, or set $TMPDIR to a private directory for Neovim and gemini' })
  elseif vim.uv.fs_stat(dir) then
    if vim.uv.fs_access(dir, 'W') then
      h.ok('discovery directory ' .. dir .. ' is writable')
    else
      h.error('discovery directory ' .. dir .. ' is not writable')
    end
  else
    h.info('discovery directory ' .. dir .. ' will be created at start')
  end
end

local function check_gemini(h)
  local exe = vim.fn.exepath('gemini')
  if exe == '' then
    h.warn('`gemini` is not on the PATH of Neovim (and of its :terminal)', {
      'install it: npm install -g @google/gemini-cli',
    })
    return
  end
  local res = vim.system({ exe, '--version' }, { text = true }):wait(20000)
  local major, minor = (res.stdout or ''):match('(%d+)%.(%d+)%.%d+')
  local version = major and (res.stdout:match('%d+%.%d+%.%d+[%w%.%-]*')) or nil
  local first = require('gemini_companion.agents.gemini.status').SEPARATE_TERMINAL
  if not version then
    h.warn(('%s --version did not say its version (exit %s)'):format(exe, tostring(res.code)))
  elseif tonumber(major) > first[1] or (tonumber(major) == first[1] and tonumber(minor) >= first[2]) then
    h.ok(
      ('gemini %s (%s): finds this Neovim from its :terminal, and from a separate terminal by workspace'):format(
        version,
        exe
      )
    )
  else
    h.warn(('gemini %s (%s) finds Neovim only when started in its :terminal'):format(version, exe), {
      ('%d.%d and newer also find it from a separate terminal: npm install -g @google/gemini-cli@latest'):format(
        unpack(first)
      ),
    })
  end
end

local function check_ide_setting(h)
  local now = ide_mode.setting()
  if now.error then
    h.warn(('%s: %s (gemini will refuse to start)'):format(now.bad_file, now.error))
  end
  if now.enabled == true then
    h.ok('IDE mode is on (ide.enabled in ' .. now.where .. '): gemini connects as it starts')
  elseif now.enabled == false then
    h.warn(('IDE mode is off (ide.enabled is false in %s): gemini does not connect to Neovim'):format(now.where), {
      'set it to true there, or type /ide enable in gemini and then restart gemini once',
    })
  else
    h.warn(('IDE mode is off (no `"ide": {"enabled": true}` in %s)'):format(now.where), {
      ':Gemini offers to turn it on before it starts gemini (Yes), or put {"ide": {"enabled": true}} in '
        .. now.user_file,
      'or answer No when gemini asks "Do you want to connect Neovim to Gemini CLI?" (Yes runs /ide install, '
        .. 'which cannot work for Neovim), type /ide enable, then /quit and start gemini again once: '
        .. 'a gemini that switched IDE mode on while running never passes its own Allow/No to Neovim',
    })
  end
end

--- Whether a directory could be inside both workspaces (gemini picks a file whose
--- workspacePath contains its working directory).
local function overlaps(a, b)
  local function under(x, y)
    return x == y or vim.startswith(x, y:gsub('/$', '') .. '/')
  end
  return under(a, b) or under(b, a)
end

local function pid_alive(pid)
  if type(pid) ~= 'number' or pid <= 0 then
    return false
  end
  local ok, err = vim.uv.kill(pid, 0)
  return ok == 0 or err == 'EPERM' or (type(err) == 'string' and err:find('EPERM') ~= nil)
end

--- The root of `workspace_path` (':'-separated) that overlaps one of `ours`, if any.
local function shared_root(workspace_path, ours)
  for _, theirs in ipairs(vim.split(workspace_path, ':', { trimempty = true })) do
    for _, mine in ipairs(ours) do
      if overlaps(mine, theirs) then
        return theirs
      end
    end
  end
end

local function check_other_neovims(h)
  local s = state.server
  local ours = s.workspace or { vim.fn.getcwd(-1, -1) }
  local dir = require('gemini_companion.agents.gemini.status').discovery_dir()
  local found = false
  for name, kind in vim.fs.dir(dir) do
    local path = dir .. '/' .. name
    local file_pid = tonumber(name:match('^gemini%-ide%-server%-(%d+)%-%d+%.json$'))
    local stat = file_pid and kind == 'file' and vim.uv.fs_stat(path)
    -- gemini reads only files of its own user
    local info = stat and stat.uid == vim.uv.getuid() and require('gemini_companion.agents.settings').read(path) or {}
    local owner = type(info.hostPid) == 'number' and info.hostPid or file_pid
    local root = info.port ~= s.port -- (not ours, however $TMPDIR spells the path)
      and type(info.workspacePath) == 'string'
      and pid_alive(owner)
      and shared_root(info.workspacePath, ours)
    if root then
      found = true
      local who = ((info.ideInfo or {}).displayName or 'another IDE') .. ' (PID ' .. file_pid .. ')'
      h.warn(
        ('%s also serves %s: a gemini started in a separate terminal there connects to one of you (the newest PID)'):format(
          who,
          root
        ),
        { "start gemini in each Neovim's :terminal (it finds its own Neovim), or open each Neovim in its own project" }
      )
    end
  end
  if not found then
    h.ok('no other running editor serves this workspace to gemini')
  end
end

local function check_terminals(h)
  local status = require('gemini_companion.status')
  local dir, var = status.tmpdir()
  h.info(
    ('discovery files are in %s/gemini/ide (from %s): a gemini in a separate terminal looks there only if it has the same %s'):format(
      dir,
      var and ('$' .. var) or 'the default, as no TMPDIR is set',
      var and ('$' .. var) or 'default (no TMPDIR)'
    )
  )
  local export = status.container_export()
  if export then
    h.info(
      'Neovim runs in a container: gemini in its :terminal is told to dial 127.0.0.1; in a separate terminal run `'
        .. export
        .. '` first, or gemini dials host.docker.internal and fails ("Failed to connect to IDE companion extension")'
    )
  end
  local lines = require('gemini_companion.agents.gemini.status').separate_terminal_lines()
  h.info('from a separate terminal:\n    ' .. table.concat(lines, '\n    '))
end

--- The review gate: installed, gemini's edits open as reviews whatever its mode.
local function check_gate(h)
  local found, problems = require('gemini_companion.agents.gemini.hook_entry').where()
  for _, problem in ipairs(problems) do
    h.warn('review gate: ' .. problem)
  end
  if #found == 0 then
    h.info(
      'review gate not installed: in YOLO or auto-edit mode gemini edits without a review; '
        .. ':GeminiGate install gemini reviews every edit it makes'
    )
  elseif (vim.tbl_get(state.settings or {}, 'review', 'gate') or 'auto-modes') == 'never' then
    h.warn(
      ('review gate installed (%s), but review.gate = "never" lets every edit through but those of agent settings files'):format(
        found[1]
      )
    )
  elseif not require('gemini_companion.agents.gate_off').check(h, 'gemini') then
    h.ok(
      ('review gate installed (%s): every edit gemini makes opens as a review, in YOLO and auto-edit modes too'):format(
        table.concat(found, ', ')
      )
    )
  end
end

--- Gemini CLI's section (it reads state.server itself, as the other agents' sections are given it).
function M.check(h, _)
  h.start('Connection (what gemini will see)')
  check_discovery_dir(h)
  check_gemini(h)
  check_ide_setting(h)
  check_gate(h)
  check_other_neovims(h)
  check_terminals(h)
end

return M
