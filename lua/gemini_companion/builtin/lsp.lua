-- Built-in tools: LSP, through the clients attached in Neovim. Always asynchronous: requests go
-- out with callbacks, Neovim never waits. Lines and columns are 1-based; columns count characters.
local util = require('gemini_companion.builtin.util')

-- A file the tool had to open needs a moment for its language server to attach.
local ATTACH_WAIT_MS = 3000

local function request(client, method, params, handler, buf)
  if vim.fn.has('nvim-0.11') == 1 then
    return client:request(method, params, handler, buf)
  end
  return client.request(method, params, handler, buf) -- 0.10
end

local function cancel(client, id)
  if vim.fn.has('nvim-0.11') == 1 then
    client:cancel_request(id)
  else
    client.cancel_request(id)
  end
end

local function supports(client, method, buf)
  if vim.fn.has('nvim-0.11') == 1 then
    return client:supports_method(method, buf)
  end
  return client.supports_method(method, { bufnr = buf })
end

--- Run `fn(buf, clients)` once clients that support `method` are attached (a file opened just
--- now needs a moment for its server to attach); `done` with a readable note if none come.
local function with_clients(args, method, done, ctx, fn)
  local ok, buf, opened = pcall(util.buffer, args, true)
  if not ok then
    return done(nil, buf)
  end
  local wait_ms = opened and ATTACH_WAIT_MS or 0
  local waited = 0
  local function try()
    if ctx.cancelled() then
      return
    end
    if not vim.api.nvim_buf_is_valid(buf) then
      return done(nil, ('buffer %d was closed before a language server attached'):format(buf))
    end
    local clients = vim.tbl_filter(function(c)
      return supports(c, method, buf)
    end, vim.lsp.get_clients({ bufnr = buf }))
    if #clients > 0 then
      return fn(buf, clients)
    end
    if waited >= wait_ms then
      local any = #vim.lsp.get_clients({ bufnr = buf }) > 0
      return done({
        result = vim.NIL,
        note = any and ('no attached language server supports %s'):format(method)
          or ('no LSP client attached to %s'):format(util.name(buf) or ('buffer ' .. buf)),
      })
    end
    waited = waited + 100
    vim.defer_fn(try, 100)
  end
  try()
end

--- Send `make_params(client)` to every client; `finish(results)` gets {client, result} pairs.
local function gather(buf, clients, method, make_params, ctx, finish)
  local pending, results = #clients, {}
  local ids = {}
  ctx.on_cancel(function()
    for _, pair in ipairs(ids) do
      pcall(cancel, pair[1], pair[2])
    end
  end)
  for _, client in ipairs(clients) do
    local sent, id = request(client, method, make_params(client), function(err, result)
      table.insert(results, { client = client, err = err, result = result })
      pending = pending - 1
      if pending == 0 and not ctx.cancelled() then
        finish(results)
      end
    end, buf)
    if sent then
      table.insert(ids, { client, id })
    else
      pending = pending - 1
    end
  end
  if pending == 0 and #ids == 0 then
    finish(results)
  end
end

local function position_params(buf, args)
  local text = vim.api.nvim_buf_get_lines(buf, args.line - 1, args.line, false)[1]
  if text == nil then
    error(('line %d is past the end of the file (%d lines)'):format(args.line, vim.api.nvim_buf_line_count(buf)), 0)
  end
  return function(client)
    return {
      textDocument = { uri = vim.uri_from_bufnr(buf) },
      position = { line = args.line - 1, character = util.to_units(text, args.column, client.offset_encoding) },
    }
  end
end

local function location(loc, enc, cache)
  local uri = loc.targetUri or loc.uri
  local range = loc.targetSelectionRange or loc.targetRange or loc.range
  local path = vim.uri_to_fname(uri)
  local buf = vim.fn.bufnr(path)
  buf = buf > 0 and buf or nil
  local s, e = range.start, range['end']
  local stext = util.line_text(buf, path, s.line + 1, cache)
  local etext = util.line_text(buf, path, e.line + 1, cache)
  return {
    path = path,
    line = s.line + 1,
    column = util.from_units(stext, s.character, enc),
    end_line = e.line + 1,
    end_column = util.from_units(etext, e.character, enc),
    text = vim.trim(stext),
  }
end

local function locations(results)
  local out, cache, errors = {}, {}, {}
  for _, r in ipairs(results) do
    if r.err then
      table.insert(errors, r.client.name .. ': ' .. tostring(r.err.message or r.err))
    elseif r.result then
      local list = r.result
      if list.uri or list.targetUri then
        list = { list }
      end
      for _, loc in ipairs(list) do
        table.insert(out, location(loc, r.client.offset_encoding, cache))
      end
    end
  end
  return out, errors
end

local position_args = {
  path = { type = 'string', description = 'File path (opened in a hidden buffer if needed)' },
  bufnr = util.BUFNR,
  line = { type = 'integer', description = 'Line (1-based)', required = true },
  column = { type = 'integer', description = 'Column (1-based, in characters)', required = true },
}

local function position_tool(name, method, description, extra_args, build, shape)
  local args = vim.tbl_extend('force', {}, position_args, extra_args or {})
  return {
    name = name,
    description = description,
    read_only = true,
    args = args,
    execute = function(a, done, ctx)
      with_clients(a, method, done, ctx, function(buf, clients)
        local ok, make = pcall(position_params, buf, a)
        if not ok then
          return done(nil, make)
        end
        gather(
          buf,
          clients,
          method,
          function(client)
            local params = make(client)
            return build and build(params, a, client, buf) or params
          end,
          ctx,
          function(results)
            local pok, value = pcall(shape, results, a)
            if pok then
              done(value)
            else
              done(nil, value)
            end
          end
        )
      end)
    end,
  }
end

local function hover_text(results)
  local parts = {}
  for _, r in ipairs(results) do
    if r.result and r.result.contents then
      local lines = vim.lsp.util.convert_input_to_markdown_lines(r.result.contents)
      local text = vim.trim(table.concat(lines, '\n'))
      if text ~= '' then
        table.insert(parts, text)
      end
    end
  end
  if #parts == 0 then
    return { text = vim.NIL, note = 'no hover information at this position' }
  end
  return { text = table.concat(parts, '\n\n') }
end

local function symbols_flat(list, out, depth, container, enc, buf, path, cache)
  for _, s in ipairs(list or {}) do
    local range = s.selectionRange or s.range or (s.location and s.location.range)
    local spath = s.location and vim.uri_to_fname(s.location.uri) or path
    local text = util.line_text(s.location and nil or buf, spath, range.start.line + 1, cache)
    table.insert(out, {
      name = s.name,
      kind = vim.lsp.protocol.SymbolKind[s.kind] or tostring(s.kind),
      detail = s.detail or vim.NIL,
      container = s.containerName or container or vim.NIL,
      path = spath,
      line = range.start.line + 1,
      column = util.from_units(text, range.start.character, enc),
      depth = depth,
    })
    if s.children then
      symbols_flat(s.children, out, depth + 1, s.name, enc, buf, path, cache)
    end
  end
end

return {
  position_tool(
    'lsp_hover',
    'textDocument/hover',
    'Hover information (type, documentation) at a position, from the language servers attached in Neovim.',
    nil,
    nil,
    hover_text
  ),
  position_tool(
    'lsp_definition',
    'textDocument/definition',
    'Where the symbol at a position is defined.',
    nil,
    nil,
    function(results)
      local locs, errors = locations(results)
      return { count = #locs, locations = locs, errors = #errors > 0 and errors or vim.NIL }
    end
  ),
  position_tool(
    'lsp_references',
    'textDocument/references',
    'All references to the symbol at a position.',
    { include_declaration = { type = 'boolean', description = 'Count the declaration too', default = true } },
    function(params, a)
      params.context = { includeDeclaration = a.include_declaration }
      return params
    end,
    function(results)
      local locs, errors = locations(results)
      return { count = #locs, locations = locs, errors = #errors > 0 and errors or vim.NIL }
    end
  ),
  {
    name = 'lsp_document_symbols',
    description = 'Symbols (classes, functions, ...) of a file, flattened with their depth and container.',
    read_only = true,
    args = {
      path = position_args.path,
      bufnr = position_args.bufnr,
    },
    execute = function(a, done, ctx)
      with_clients(a, 'textDocument/documentSymbol', done, ctx, function(buf, clients)
        gather(
          buf,
          clients,
          'textDocument/documentSymbol',
          function()
            return { textDocument = { uri = vim.uri_from_bufnr(buf) } }
          end,
          ctx,
          function(results)
            local out, cache = {}, {}
            for _, r in ipairs(results) do
              symbols_flat(r.result, out, 0, nil, r.client.offset_encoding, buf, util.name(buf), cache)
            end
            done({ count = #out, symbols = out })
          end
        )
      end)
    end,
  },
  {
    name = 'lsp_workspace_symbols',
    description = 'Search symbols across the workspace by name (language servers of the given or current file).',
    read_only = true,
    args = {
      query = { type = 'string', description = 'Name or part of a name', required = true },
      path = position_args.path,
      bufnr = position_args.bufnr,
    },
    execute = function(a, done, ctx)
      with_clients(a, 'workspace/symbol', done, ctx, function(buf, clients)
        gather(
          buf,
          clients,
          'workspace/symbol',
          function()
            return { query = a.query }
          end,
          ctx,
          function(results)
            local out, cache = {}, {}
            for _, r in ipairs(results) do
              symbols_flat(r.result, out, 0, nil, r.client.offset_encoding, nil, nil, cache)
            end
            done({ count = #out, symbols = out })
          end
        )
      end)
    end,
  },
  position_tool(
    'lsp_code_actions',
    'textDocument/codeAction',
    'The code actions (quick fixes, refactorings) offered at a position or range. Lists them; '
      .. 'applying them is not offered.',
    {
      end_line = { type = 'integer', description = 'End of the range (1-based, default: line)' },
      end_column = { type = 'integer', description = 'End of the range (1-based, default: column)' },
    },
    function(params, a, client, buf)
      local end_line = a.end_line or a.line
      local end_text = vim.api.nvim_buf_get_lines(buf, end_line - 1, end_line, false)[1] or ''
      local diags = {}
      for _, d in ipairs(vim.diagnostic.get(buf)) do
        local lsp = type(d.user_data) == 'table' and d.user_data.lsp or nil
        if lsp and d.lnum + 1 >= a.line and d.lnum + 1 <= end_line then
          table.insert(diags, lsp)
        end
      end
      return {
        textDocument = params.textDocument,
        range = {
          start = params.position,
          ['end'] = {
            line = end_line - 1,
            character = util.to_units(end_text, a.end_column or a.column, client.offset_encoding),
          },
        },
        context = { diagnostics = diags },
      }
    end,
    function(results)
      local out = {}
      for _, r in ipairs(results) do
        for _, action in ipairs(r.result or {}) do
          table.insert(out, {
            title = action.title,
            kind = action.kind or vim.NIL,
            preferred = action.isPreferred or false,
            client = r.client.name,
          })
        end
      end
      return { count = #out, actions = out }
    end
  ),
}
