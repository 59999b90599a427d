-- :GeminiStatus — everything about the server in one float (q or <Esc> closes it).
local bridge = require('gemini_companion.bridge')

local M = {}

local function duration(seconds)
  seconds = math.max(0, math.floor(seconds))
  if seconds < 60 then
    return seconds .. 's'
  elseif seconds < 3600 then
    return ('%dm %02ds'):format(seconds / 60, seconds % 60)
  end
  return ('%dh %02dm'):format(seconds / 3600, (seconds % 3600) / 60)
end

--- The status as lines of text (also used by tests and :checkhealth).
function M.lines()
  local s = bridge.server
  local lines = {}
  local function add(label, value)
    table.insert(lines, ('%-14s %s'):format(label, value))
  end
  local state = s.state or 'stopped'
  if bridge.channel and not bridge.host_alive() then
    state = 'failed'
    s = vim.tbl_extend('force', s, { error = 'the Python host process has exited (killed or crashed)' })
  end
  add('State', state .. (s.error and (' — ' .. s.error) or ''))
  if state == 'running' then
    add('URL', s.url)
    add('Auth token', s.token_set and 'set (bearer; value not shown)' or 'none')
    add('Discovery', s.discovery_file or ('not written: ' .. tostring(s.discovery_error)))
    add('Workspace', table.concat(s.workspace or {}, ', '))
    add('Tools', tostring(s.tools or 0))
    add('Uptime', duration(os.time() - (s.started_at or os.time())))
    local clients = s.clients or {}
    add('Clients', #clients == 0 and 'none connected' or tostring(#clients))
    for _, c in ipairs(clients) do
      table.insert(
        lines,
        ('  • %s %s  protocol %s  since %s%s'):format(
          c.name,
          c.version,
          c.protocol_version,
          os.date('%H:%M:%S', math.floor(c.connected_at)),
          c.stream_open and '' or '  (no event stream)'
        )
      )
    end
    for _, o in ipairs(s.opencode or {}) do
      add('OpenCode', ('%s: %s%s'):format(o.url, o.status, o.error and (' — ' .. o.error) or ''))
    end
  elseif state == 'stopped' then
    add('', 'start it with :GeminiStart')
  end
  add('Log file', s.log_file or (vim.fn.stdpath('log') .. '/gemini_companion.log'))
  return lines
end

function M.show()
  local lines = M.lines()
  local width = 20
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l) + 2)
  end
  width = math.min(width, math.max(20, vim.o.columns - 4))
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].filetype = 'gemini_companion_status'
  local win = vim.api.nvim_open_win(buf, true, {
    relative = 'editor',
    width = width,
    height = #lines,
    row = math.max(0, math.floor((vim.o.lines - #lines) / 2) - 1),
    col = math.max(0, math.floor((vim.o.columns - width) / 2)),
    style = 'minimal',
    border = 'rounded',
    title = ' Gemini companion ',
    title_pos = 'center',
  })
  for _, key in ipairs({ 'q', '<Esc>' }) do
    vim.keymap.set('n', key, function()
      pcall(vim.api.nvim_win_close, win, true)
    end, { buffer = buf, nowait = true })
  end
  return buf, win
end

return M
