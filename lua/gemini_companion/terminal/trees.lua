-- The files and directories on lines of a file-tree buffer, for :GeminiAdd. One adapter per tree,
-- keyed by the tree buffer's filetype, each reading the tree's own public API for "the entry on
-- this line". Each runs under pcall and its paths are checked on disk: when a plugin changes its
-- API the user gets "no file under the cursor", never an error from deep inside.
local M = {}

--- netrw (built in): its own NetrwGetWord (what <CR> opens), per line; the banner above the
--- listing is skipped (NetrwGetWord acts on it: sorts, hides). The tree style names a line's
--- directory with NetrwTreePath.
local function netrw(_, first, last)
  local view, out = vim.fn.winsaveview(), {}
  for line = math.max(first, vim.w.netrw_bannercnt or 1), last do
    vim.api.nvim_win_set_cursor(0, { line, 0 })
    local word = vim.fn['netrw#Call']('NetrwGetWord')
    if vim.w.netrw_liststyle == 3 then -- tree: the line's directory, or the line itself (a directory, a link)
      local dir = vim.fn['netrw#Call']('NetrwTreePath', vim.w.netrw_treetop)
      out[#out + 1] = dir:sub(-1) == '/' and word:sub(-1) ~= '/' and dir .. word or dir
    else
      out[#out + 1] = vim.b.netrw_curdir .. '/' .. word
    end
    out[#out] = word:match('^%.%.?/?$') and '' or out[#out] -- ./ and ../ are not entries
  end
  vim.fn.winrestview(view)
  return out
end

--- oil.nvim: get_entry_on_line and get_current_dir (nil for a remote adapter, e.g. oil-ssh).
local function oil(buf, first, last)
  local api, out = require('oil'), {}
  local dir = api.get_current_dir(buf)
  for line = first, last do
    local entry = dir and api.get_entry_on_line(buf, line)
    out[#out + 1] = entry and entry.name ~= '..' and dir .. entry.name or ''
  end
  return out
end

--- neo-tree.nvim: the window's source state; its NuiTree gives the node on a line.
local function neo_tree(_, first, last)
  local state, out = require('neo-tree.sources.manager').get_state_for_window(), {}
  for line = first, last do
    local node = state.tree:get_node(line)
    out[#out + 1] = node and node.type ~= 'message' and node.path or ''
  end
  return out
end

--- nvim-tree.lua: its API knows only the node under the cursor, so the cursor visits each line.
local function nvim_tree(_, first, last)
  local api, view, out = require('nvim-tree.api'), vim.fn.winsaveview(), {}
  for line = first, last do
    vim.api.nvim_win_set_cursor(0, { line, 0 })
    local node = api.tree.get_node_under_cursor()
    out[#out + 1] = node and node.name ~= '..' and node.absolute_path or ''
  end
  vim.fn.winrestview(view)
  return out
end

--- mini.files: MiniFiles.get_fs_entry(buf, line).
local function mini_files(buf, first, last)
  local out = {}
  for line = first, last do
    local entry = require('mini.files').get_fs_entry(buf, line)
    out[#out + 1] = entry and entry.path or ''
  end
  return out
end

M.adapters = { netrw = netrw, oil = oil, ['neo-tree'] = neo_tree, NvimTree = nvim_tree, minifiles = mini_files }

--- Whether `buf` is a file tree this module reads.
function M.is_tree(buf)
  return M.adapters[vim.bo[buf].filetype] ~= nil
end

--- The entries on lines `first`..`last` of the tree in the current window (buffer `buf`):
--- { path = absolute, dir = true for a directory } each, in order, without repeats; {} when none
--- (or when the tree's API did not answer as expected).
function M.entries(buf, first, last)
  local ok, paths = pcall(M.adapters[vim.bo[buf].filetype], buf, first, last)
  local out, seen = {}, {}
  for _, path in ipairs(ok and type(paths) == 'table' and paths or {}) do
    local full = type(path) == 'string' and path ~= '' and vim.fs.normalize(vim.fn.fnamemodify(path, ':p'))
    local stat = full and vim.uv.fs_stat(full)
    if stat and not seen[full] then
      seen[full] = true
      out[#out + 1] = { path = full, dir = stat.type == 'directory' }
    end
  end
  return out
end

return M
