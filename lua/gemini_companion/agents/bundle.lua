-- An agent's bundle of our files in its own config (gemini's extension, agy's plugin): a directory
-- named after us, written file by file, each whole or not at all (an agent starting meanwhile never
-- reads half a file), and touched only while its manifest names us. Also the rules every bundle
-- carries: when our tools help, in the tool names that agent's model sees.
local M = {}

M.NAME = 'gemini-companion-nvim' -- the directory's name and the manifest's `name`

local RULES = [[
# Neovim tools (gemini-companion-nvim)

You are running beside the user's Neovim. The `nvim` MCP server's tools act on that editor: its
buffers (including unsaved changes), its language servers and its debugger.
%s
- When the user says "this", "here" or "the selection", call `{get_editor_context}` first: the file
  they last looked at in Neovim, its cursor and selected text, and the files they opened recently.
- To find where a symbol is defined or used, prefer `{lsp_definition}`, `{lsp_references}`,
  `{lsp_hover}` and `{lsp_workspace_symbols}` over searching text: they follow the language's rules
  (imports, overloads, scopes). Lines and columns are 1-based.
- After editing a file, call `{get_diagnostics}` on it to see the errors and warnings its language
  server reports, and fix them before you finish.
- To see what a running program does, use the `{dap_*}` tools: set breakpoints, run or continue,
  then read the stack, scopes, variables and output (`{dap_status}` first).
- To see what a file held before (the user's earlier text, a change since undone), `{undo_tree}`
  lists its undo states and `{undo_text_at}` reads one, without changing the buffer.
- `{read_buffer}` shows what the user sees, unsaved edits included; `{get_editor_state}` adds the
  mode, the windows and tabs, and the live Visual selection.
]]

--- The rules for a model that sees our tool `x` as `prefix .. x`; `note`: a line of its own (how
--- that agent lists the tools), or nil.
---@param prefix string
---@param note string|nil
function M.rules(prefix, note)
  local text = RULES:format(note and ('\n' .. note .. '\n') or '')
  return (text:gsub('{([%w_*]+)}', function(tool)
    return prefix .. tool
  end))
end

local uv = vim.uv
-- A new file only: with O_CREAT, O_EXCL refuses any name that exists, a symbolic link too (which
-- it never follows), so nothing planted at the temporary name is written through (luv has no
-- O_NOFOLLOW, nor does it need one here).
local CREATE_NEW = bit.bor(uv.constants.O_WRONLY, uv.constants.O_CREAT, uv.constants.O_EXCL)

--- Write `text` to `path` whole or not at all: a new temporary file beside it, of a name nobody can
--- guess, renamed over it. `mode` (default 0644) is set at creation, so a secret (agy's MCP entry
--- holds the token) is never readable by others, not even for a moment. On failure nothing is
--- left behind: nil and why.
function M.write_file(path, text, mode)
  local random = uv.random(8):gsub('.', function(byte)
    return ('%02x'):format(byte:byte())
  end)
  local tmp = vim.fs.joinpath(vim.fs.dirname(path), ('.%s.%s.tmp'):format(vim.fs.basename(path), random))
  local fd, err = uv.fs_open(tmp, CREATE_NEW, mode or tonumber('644', 8))
  if not fd then
    return nil, err
  end
  local written, werr = uv.fs_write(fd, text)
  local closed, cerr = uv.fs_close(fd)
  local ok, why = written == #text and closed, werr or cerr or 'short write'
  if ok then
    ok, why = uv.fs_rename(tmp, path)
  end
  if not ok then
    uv.fs_unlink(tmp)
    return nil, why
  end
  return true
end

--- The bundle in `dir` (its manifest file `manifest`) is ours, or there is none: nil; else why we
--- must not touch it.
function M.foreign(dir, manifest)
  if not vim.uv.fs_stat(dir) then
    return nil
  end
  local ok, data = pcall(function()
    return vim.json.decode(table.concat(vim.fn.readfile(vim.fs.joinpath(dir, manifest)), '\n'))
  end)
  if ok and type(data) == 'table' and data.name == M.NAME then
    return nil
  end
  return ("%s exists and is not this plugin's (its %s %s): leaving it alone"):format(
    dir,
    manifest,
    ok and 'names another' or 'is missing or unreadable'
  )
end

--- JSON as the agents' docs show it: `/` unescaped.
function M.json(value)
  return (vim.json.encode(value):gsub('\\/', '/')) .. '\n'
end

--- Write `files` ({ [relative path] = text }) into `dir`, the manifest `manifest` among them;
--- `dir` on success, or nil and the reason.
function M.install(dir, manifest, files)
  local err = M.foreign(dir, manifest)
  if err then
    return nil, err
  end
  for name, text in pairs(files) do
    local path = vim.fs.joinpath(dir, name)
    local parent = vim.fs.dirname(path)
    if vim.fn.mkdir(parent, 'p', tonumber('755', 8)) == 0 and not vim.uv.fs_stat(parent) then
      return nil, 'cannot create ' .. parent
    end
    local ok, werr = M.write_file(path, text)
    if not ok then
      return nil, ('cannot write %s: %s'):format(path, werr)
    end
  end
  return dir
end

--- Remove `names` (relative paths, the manifest among them) from `dir`, then the folders they
--- leave empty: `dir`, or nil and the reason; with a second value when files of others stay.
function M.uninstall(dir, manifest, names)
  if not vim.uv.fs_stat(dir) then
    return nil, 'not installed (' .. dir .. ' does not exist)'
  end
  local err = M.foreign(dir, manifest)
  if err then
    return nil, err
  end
  local folders = {}
  for _, name in ipairs(names) do
    vim.uv.fs_unlink(vim.fs.joinpath(dir, name))
    local parent = vim.fs.dirname(name)
    if parent ~= '.' then
      folders[#folders + 1] = vim.fs.joinpath(dir, parent)
    end
  end
  for _, folder in ipairs(folders) do
    vim.uv.fs_rmdir(folder)
  end
  if not vim.uv.fs_rmdir(dir) then
    return dir, ('removed its files; %s holds other files and stays'):format(dir)
  end
  return dir
end

return M
