-- Headless Neovim 0.7 as an independent LSP client of `harn-ls serve`.
-- Opens a source file of the sample project, gets a fact hover and code lenses,
-- and fetches harn-state:/index.md through workspace/textDocumentContent.
-- Writes JSON to $PROBE_OUT; exits 0 on success, 1 on failure.
local out_path = assert(os.getenv('PROBE_OUT'))
local project = assert(os.getenv('PROJECT'))
local results = { nvim = tostring(vim.version().major) .. '.' .. vim.version().minor, deprecated = {} }
local real_deprecate = vim.deprecate
vim.deprecate = function(name, ...)
  table.insert(results.deprecated, tostring(name))
  return real_deprecate(name, ...)
end

local function finish(code)
  local f = assert(io.open(out_path, 'w'))
  f:write(vim.fn.json_encode(results))
  f:close()
  vim.cmd((code == 0) and 'qall!' or ('cquit! ' .. code))
end

local ok, err = pcall(function()
  vim.cmd('edit ' .. vim.fn.fnameescape(project .. '/src/billing/invoice.py'))
  local bufnr = vim.api.nvim_get_current_buf()
  local config = {
    name = 'harn-ls',
    cmd = { os.getenv('PY'), '-m', 'harn_ls', 'serve' },
    root_dir = project,
    workspace_folders = { { uri = vim.uri_from_fname(project), name = 'sample' } },
  }
  local client_id
  if vim.lsp.start then -- 0.8+: starts and attaches to the current buffer
    client_id = vim.lsp.start(config)
  else
    client_id = vim.lsp.start_client(config)
    vim.lsp.buf_attach_client(bufnr, client_id)
  end
  assert(client_id, 'starting the client failed')
  local client = vim.lsp.get_client_by_id(client_id)
  assert(vim.wait(15000, function() return client.initialized end, 50), 'initialize timed out')
  local caps = client.server_capabilities or {}
  results.content_schemes = caps.workspace and caps.workspace.textDocumentContent and caps.workspace.textDocumentContent.schemes
  local uri = vim.uri_from_bufnr(bufnr)
  -- the project loads after `initialized`; retry the hover until facts are there
  local hover
  vim.wait(10000, function()
    local r = vim.lsp.buf_request_sync(bufnr, 'textDocument/hover',
      { textDocument = { uri = uri }, position = { line = 27, character = 4 } }, 3000)
    hover = r and r[client_id] and r[client_id].result
    return hover ~= nil
  end, 100)
  assert(hover, 'no hover result')
  results.hover = hover.contents.value
  local lens = vim.lsp.buf_request_sync(bufnr, 'textDocument/codeLens', { textDocument = { uri = uri } }, 5000)
  local lenses = lens and lens[client_id] and lens[client_id].result or {}
  results.lens_lines = vim.tbl_map(function(l) return l.range.start.line end, lenses)
  results.lens_titles = {}
  for _, l in ipairs(lenses) do
    local r = vim.lsp.buf_request_sync(bufnr, 'codeLens/resolve', l, 5000)
    table.insert(results.lens_titles, r[client_id].result.command.title)
  end
  local doc = vim.lsp.buf_request_sync(bufnr, 'workspace/textDocumentContent', { uri = 'harn-state:/index.md' }, 5000)
  assert(doc and doc[client_id] and doc[client_id].result, 'no textDocumentContent result')
  results.index_head = string.sub(doc[client_id].result.text, 1, 400)
  results.offset_encoding = client.offset_encoding
  vim.lsp.stop_client(client_id)
  vim.wait(3000, function() return vim.lsp.get_client_by_id(client_id) == nil end, 50)
  results.all_messages = vim.fn.execute('messages')
end)
if not ok then results.error = tostring(err); finish(1) else finish(0) end
