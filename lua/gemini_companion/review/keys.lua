-- Per-hunk decisions in a proposal (see review/init.lua): buffer-local keys to keep or drop the hunk
-- under the cursor, keep or drop them all, and jump between hunks; and the `User` events that
-- report each decision. Dropping a hunk puts the on-disk text back into the proposal (an ordinary,
-- undoable change), so what accept sends is exactly what the user sees. Keeping one changes no
-- text: it marks the hunk (✓ in the sign column) as looked at and moves on.
local hunks = require('gemini_companion.text.hunks')

local M = {}

local ns = vim.api.nvim_create_namespace('gemini_companion_review')

--- Whether a `User` autocommand's pattern matches `name`.
local function listened(name)
  for _, au in ipairs(vim.api.nvim_get_autocmds({ event = 'User' })) do
    if au.pattern and vim.fn.match(name, vim.fn.glob2regpat(au.pattern)) >= 0 then
      return true
    end
  end
  return false
end

--- Fire `User GeminiReview<what>` with the review's data plus `extra`, if anyone listens (its data
--- may hold a 22 MB text: converting it for no one took ~20 ms).
function M.emit(what, d, extra)
  if not listened('GeminiReview' .. what) then
    return
  end
  local data = vim.tbl_extend('force', {
    path = d.key,
    client = d.client,
    proposed_buf = d.proposed,
    original_buf = d.original,
  }, extra or {})
  vim.api.nvim_exec_autocmds('User', { pattern = 'GeminiReview' .. what, modeline = false, data = data })
end

--- The review's hunks for the proposal as it is now (computed again only after a change).
function M.current(d)
  if d.filling or not vim.api.nvim_buf_is_valid(d.proposed) then
    return {} -- a big review still filling has no hunks yet (review/fill.lua)
  end
  local tick = vim.api.nvim_buf_get_changedtick(d.proposed)
  if d.hunks_tick ~= tick then
    local lines = vim.api.nvim_buf_get_lines(d.proposed, 0, -1, false)
    d.hunks = hunks.compute(d.old_text, hunks.text(lines))
    d.hunks_tick = tick
  end
  return d.hunks
end

--- The hunks for `lines`, the proposal's lines as just set (so M.current need not read them).
function M.seed(d, lines)
  d.hunks = hunks.compute(d.old_text, hunks.text(lines))
  d.hunks_tick = vim.api.nvim_buf_get_changedtick(d.proposed)
end

local function as_data(h)
  return { old_start = h[1], old_count = h[2], new_start = h[3], new_count = h[4] }
end

local function go_to(d, h)
  local first = hunks.rows(h, vim.api.nvim_buf_line_count(d.proposed))
  vim.api.nvim_win_set_cursor(0, { first, 0 })
end

--- The hunk under the cursor: its index in `hs`, or nil (said to the user).
local function under_cursor(d, hs)
  local i = hunks.at(hs, vim.api.nvim_win_get_cursor(0)[1], vim.api.nvim_buf_line_count(d.proposed))
  if not i then
    require('gemini_companion.notify').say('no change under the cursor (]c goes to the next one)', 'warn')
  end
  return i
end

local function mark_kept(d, h)
  local first = hunks.rows(h, vim.api.nvim_buf_line_count(d.proposed))
  vim.api.nvim_buf_set_extmark(d.proposed, ns, first - 1, 0, { sign_text = '✓', sign_hl_group = 'DiffAdd' })
end

--- After dropping the final hunk, the text ends as the file does (with or without a newline),
--- and has its line ends.
local function drop_hunk(d, h, old_lines)
  local at_end = hunks.at_end(h, #old_lines, vim.api.nvim_buf_line_count(d.proposed))
  hunks.drop(d.proposed, h, old_lines)
  if at_end then
    local bo = vim.bo[d.proposed]
    bo.eol = d.disk_eol
    bo.fixeol = bo.fixeol and d.disk_eol
    bo.fileformat = d.disk_ff or bo.fileformat
    bo.modified = false -- options that decide how it is written count as a change to Neovim
  end
end

local actions = {}

function actions.keep_hunk(d)
  local hs = M.current(d)
  local i = under_cursor(d, hs)
  if i then
    mark_kept(d, hs[i])
    M.emit('HunkKept', d, { hunk = as_data(hs[i]) })
    if hs[i + 1] then
      go_to(d, hs[i + 1])
    end
  end
end

function actions.drop_hunk(d)
  local hs = M.current(d)
  local i = under_cursor(d, hs)
  if i then
    local h = hs[i]
    drop_hunk(d, h, hunks.lines(d.old_text))
    M.emit('HunkDropped', d, { hunk = as_data(h) })
    local after = M.current(d)[i] -- the dropped hunk is gone: the next one takes its place
    if after then
      go_to(d, after)
    end
  end
end

function actions.keep_all(d)
  local hs = M.current(d)
  local count = hunks.count(hs)
  for i = 1, count do
    mark_kept(d, hs[i])
  end
  M.emit('HunkKept', d, { all = true, count = count })
end

function actions.drop_all(d)
  local count = hunks.count(M.current(d))
  if count > 0 then
    local old_lines = hunks.lines(d.old_text)
    drop_hunk(d, { math.min(1, #old_lines), #old_lines, 1, vim.api.nvim_buf_line_count(d.proposed) }, old_lines)
  end
  M.emit('HunkDropped', d, { all = true, count = count })
end

local function jump(d, step)
  local hs = M.current(d)
  local row, count = vim.api.nvim_win_get_cursor(0)[1], vim.api.nvim_buf_line_count(d.proposed)
  local target
  for _ = 1, vim.v.count1 do -- 3]c: the third change from here, or the last there is
    local i = hunks.next(hs, row, count, step)
    if not i then
      break
    end
    target, row = hs[i], hunks.rows(hs[i], count)
  end
  if target then
    go_to(d, target)
  end
end

function actions.next_hunk(d)
  jump(d, 1)
end

function actions.prev_hunk(d)
  jump(d, -1)
end

local DESCRIPTIONS = {
  keep_hunk = 'keep this change',
  drop_hunk = 'drop this change (take the text on disk)',
  keep_all = 'keep every change',
  drop_all = 'drop every change',
  next_hunk = 'next change',
  prev_hunk = 'previous change',
}

--- Map the keys of `keymaps` (the `review.keymaps` settings; false: unmapped) and `ZZ` in the
--- proposal; `decide('accepted'|'rejected')` ends the review. They go with the buffer.
function M.attach(d, keymaps, decide)
  vim.keymap.set('n', 'ZZ', function()
    vim.bo[d.proposed].modified = true -- so that it writes (accepts), as it would a changed file
    vim.cmd('xit')
  end, { buffer = d.proposed, desc = 'Gemini: accept this diff and close it' })
  for action, lhs in pairs({ accept = keymaps.accept, reject = keymaps.reject }) do
    if lhs and lhs ~= '' then
      vim.keymap.set('n', lhs, function()
        decide(action == 'accept' and 'accepted' or 'rejected')
      end, { buffer = d.proposed, desc = 'Gemini: ' .. action .. ' this diff' })
    end
  end
  if type(keymaps.comment) == 'string' and keymaps.comment ~= '' then
    vim.keymap.set({ 'n', 'x' }, keymaps.comment, function()
      require('gemini_companion.comments').here(d.proposed, d.key)
    end, { buffer = d.proposed, desc = 'Gemini review: comment on this line (or the selected lines)' })
  end
  for action, desc in pairs(DESCRIPTIONS) do
    local lhs = keymaps[action]
    if type(lhs) == 'string' and lhs ~= '' then
      vim.keymap.set('n', lhs, function()
        if d.filling then
          require('gemini_companion.notify').say('the proposal is still loading', 'warn')
        elseif not d.resolved then
          actions[action](d)
        end
      end, { buffer = d.proposed, nowait = true, desc = 'Gemini review: ' .. desc })
    end
  end
end

--- The actions by name, for tests and user mappings: M.run('drop_hunk', d).
function M.run(action, d)
  actions[action](d)
end

return M
