-- harn.nvim: Harn project state in Neovim, through `harn-ls serve` and Neovim's own LSP client.
--
-- Works on Neovim 0.7 (Debian 12) and newer, with the API each version offers:
--  * 0.11+: the server is a `vim.lsp.config('harn_ls', ...)` configuration (so a user's own
--    `vim.lsp.config('harn_ls', {...})` refines it) enabled with `vim.lsp.enable`, whose
--    root_dir is the buffer's Harn project; the plugin starts the same configuration for
--    harn-state: documents and for state files without a filetype, and Neovim reuses the client.
--  * 0.8-0.10: vim.lsp.start; 0.7: vim.lsp.start_client and vim.lsp.buf_attach_client.
local M = {}

local api = vim.api
local uv = vim.uv or vim.loop -- vim.loop is deprecated from 0.10
local SCHEME = 'harn-state'
local CONFIG_NAME = 'harn_ls' -- the vim.lsp.config name (0.11+)
local WARN = vim.log.levels.WARN
local ERROR = vim.log.levels.ERROR

local defaults = {
  -- The server command (a list). A string is split on white space.
  cmd = { 'harn-ls', 'serve' },
  cmd_env = nil,
  -- `harnState.*` settings for the server (harnPath, skillRoot, probes, facts, codeLens, transcripts).
  settings = {},
  -- Sent as `workspaceTrusted`; nil lets the server decide (its `trustedByDefault`, true).
  trusted = nil,
  -- Seconds to wait for the server to load the project before a request is sent anyway.
  ready_timeout = 20,
  -- Refresh code lenses on BufEnter / CursorHold / InsertLeave in attached buffers.
  codelens = true,
  -- Buffer-local mappings. Set a key to false to leave it unmapped.
  keymaps = {
    follow = { 'gf', '<CR>' }, -- in harn-state: buffers: follow the link under the cursor
    lens_run = false,          -- in attached source buffers, e.g. '<leader>hl'
  },
}

M.config = vim.deepcopy(defaults)

local clients = {}   -- project root -> client id
local root_of = {}   -- client id -> project root
local ready = {}     -- client id -> true once the server reported the project loaded (harn/status)
local waiting = {}   -- client id -> callbacks to run when ready
local failed = {}    -- project root -> true when the server could not be started (buffers stop retrying)
M.status = {}        -- client id -> last harn/status params

-- ---------------------------------------------------------------- helpers

local function notify(msg, level)
  vim.notify('harn: ' .. msg, level or vim.log.levels.INFO)
end

local function has(version)
  return vim.fn.has('nvim-' .. version) == 1
end

-- client.request / client:request (0.11 made client methods take self)
local function request(client, method, params, handler, bufnr)
  if has('0.11') then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

local function get_client(id)
  return id and vim.lsp.get_client_by_id(id) or nil
end

local function stat_type(path)
  local st = uv.fs_stat(path)
  return st and st.type or nil
end

local function bvar(buf, name)
  local ok, value = pcall(api.nvim_buf_get_var, buf, name)
  return ok and value or nil
end

--- Percent-encode everything but RFC 3986 unreserved characters.
function M.urlencode(s)
  return (tostring(s):gsub('[^%w%-%._~]', function(c)
    return string.format('%%%02X', c:byte())
  end))
end

--- Number of UTF-16 code units in the first `nbytes` bytes of `line` (LSP positions).
local function utf16_col(line, nbytes)
  local n, i = 0, 1
  nbytes = math.min(nbytes, #line)
  while i <= nbytes do
    local b = line:byte(i)
    local len = (b >= 0xF0 and 4) or (b >= 0xE0 and 3) or (b >= 0xC0 and 2) or 1
    n = n + (len == 4 and 2 or 1)
    i = i + len
  end
  return n
end
M._utf16_col = utf16_col

--- The column of byte `nbytes` of `line` in the position encoding the client and server agreed on
--- (`client.offset_encoding`: utf-8 from Neovim 0.10 when the server accepts it, else utf-16).
local function encoded_col(encoding, line, nbytes)
  nbytes = math.min(nbytes, #line)
  if encoding == 'utf-8' then
    return nbytes
  end
  local units = utf16_col(line, nbytes)
  if encoding == 'utf-32' then
    local _, astral = line:sub(1, nbytes):gsub('[\240-\247]', '')
    return units - astral -- an astral character is 2 UTF-16 units, 1 UTF-32 one
  end
  return units
end
M._encoded_col = encoded_col

-- Split a document into lines (LF or CRLF); a final newline does not add an empty line.
local function split_lines(text)
  local lines, start = {}, 1
  while true do
    local s = text:find('\n', start, true)
    if not s then
      break
    end
    table.insert(lines, (text:sub(start, s - 1):gsub('\r$', '')))
    start = s + 1
  end
  if start <= #text then
    table.insert(lines, (text:sub(start):gsub('\r$', '')))
  end
  return lines
end

-- ---------------------------------------------------------------- roots and clients

--- The Harn project holding `path`: the nearest folder upward with `harn.toml`, or with a
--- `.harn/` folder (except the home folder, whose ~/.harn is Harn's user-level folder).
function M.find_root(path)
  if not path or path == '' then
    path = vim.fn.getcwd()
  end
  path = vim.fn.fnamemodify(path, ':p')
  local dir = stat_type(path) == 'directory' and path or vim.fn.fnamemodify(path, ':h')
  if #dir > 1 then
    dir = dir:gsub('/+$', '')
  end
  local home = (uv.os_homedir() or ''):gsub('/+$', '')
  while dir and dir ~= '' do
    local base = dir == '/' and '' or dir
    if stat_type(base .. '/harn.toml') == 'file' or (dir ~= home and stat_type(base .. '/.harn') == 'directory') then
      return dir
    end
    local parent = vim.fn.fnamemodify(dir, ':h')
    if parent == dir then
      break
    end
    dir = parent
  end
  return nil
end

local function on_ready(client_id)
  ready[client_id] = true
  local callbacks = waiting[client_id] or {}
  waiting[client_id] = nil
  for _, cb in ipairs(callbacks) do
    local ok, err = pcall(cb)
    if not ok then
      notify(tostring(err), ERROR)
    end
  end
end

--- Run `fn` once the server has loaded the project (it sends harn/status then),
--- or after `ready_timeout` seconds, whichever comes first.
function M.when_ready(client_id, fn)
  if ready[client_id] then
    return fn()
  end
  local first = waiting[client_id] == nil
  waiting[client_id] = waiting[client_id] or {}
  table.insert(waiting[client_id], fn)
  if first then
    vim.defer_fn(function()
      if not ready[client_id] and waiting[client_id] and get_client(client_id) then
        notify('the server has not reported the project loaded yet; sending requests anyway', WARN)
        on_ready(client_id)
      end
    end, M.config.ready_timeout * 1000)
  end
end

function M.is_ready(client_id)
  return ready[client_id] == true
end

local function buffers_with_uri(uri)
  local out = {}
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(buf) and bvar(buf, 'harn_state_uri') == uri then
      table.insert(out, buf)
    end
  end
  return out
end

local handlers = {}

handlers['harn/status'] = function(_, params, ctx)
  M.status[ctx.client_id] = params
  if not ready[ctx.client_id] then
    on_ready(ctx.client_id)
  end
end

handlers['harn/treeChanged'] = function() end

-- Server -> client request: a harn-state: document changed; fetch it again.
handlers['workspace/textDocumentContent/refresh'] = function(_, params, ctx)
  local uri = params and params.uri and M.normalize_uri(params.uri)
  if uri then
    for _, buf in ipairs(buffers_with_uri(uri)) do
      if bvar(buf, 'harn_client_id') == ctx.client_id or not get_client(bvar(buf, 'harn_client_id')) then
        M.fetch(buf)
      end
    end
  end
  return vim.NIL
end

local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.workspace = caps.workspace or {}
  caps.workspace.textDocumentContent = { dynamicRegistration = false }
  caps.workspace.codeLens = caps.workspace.codeLens or {}
  caps.workspace.codeLens.refreshSupport = true
  caps.window = caps.window or {}
  caps.window.showDocument = { support = true }
  return caps
end

-- Handlers Neovim 0.7 lacks (newer versions bring their own).
local function fallback_handlers()
  local h = {}
  if not vim.lsp.handlers['workspace/codeLens/refresh'] then
    h['workspace/codeLens/refresh'] = function()
      local buf = api.nvim_get_current_buf()
      if bvar(buf, 'harn_client_id') and vim.bo[buf].buftype == '' then
        pcall(vim.lsp.codelens.refresh)
      end
      return vim.NIL
    end
  end
  if not vim.lsp.handlers['window/showDocument'] then
    h['window/showDocument'] = function(_, params, ctx)
      local ok = pcall(M.open_target, params.uri, { client_id = ctx.client_id })
      return { success = ok }
    end
  end
  return h
end

local function server_cmd()
  local cmd = M.config.cmd
  if type(cmd) == 'string' then
    cmd = vim.split(cmd, '%s+')
  end
  return cmd
end

-- The configuration common to every project's client (the root is added per client).
local function base_config()
  local settings = vim.deepcopy(M.config.settings or {})
  -- the commands this plugin runs itself (register_client_commands): lenses and actions may name them
  local init_options = {
    settings = { harnState = settings },
    clientCommands = {
      'harnState.open', 'harnState.compareWithExisting', 'harnState.ui.approveHitl', 'harnState.ui.denyHitl',
      'harnState.ui.answerHitl', 'harnState.ui.acceptHitl', 'harnState.ui.declineHitl', 'harnState.ui.finishHitl',
    },
  }
  if M.config.trusted ~= nil then
    init_options.workspaceTrusted = M.config.trusted
  end
  return {
    cmd = server_cmd(),
    cmd_env = M.config.cmd_env,
    capabilities = capabilities(),
    settings = { harnState = settings },
    init_options = init_options,
    handlers = vim.tbl_extend('force', fallback_handlers(), handlers),
    on_init = function(client)
      if client.root_dir then
        clients[client.root_dir] = clients[client.root_dir] or client.id
        root_of[client.id] = client.root_dir
      end
    end,
    on_exit = function(code, signal, client_id)
      local root = root_of[client_id] or '?'
      ready[client_id] = nil
      waiting[client_id] = nil
      root_of[client_id] = nil
      if clients[root] == client_id then
        clients[root] = nil
      end
      if code ~= 0 or (signal or 0) ~= 0 then
        vim.schedule(function()
          local msg = string.format('harn-ls for %s exited (code %s, signal %s)', root, tostring(code), tostring(signal))
          notify(msg, WARN)
          for _, buf in ipairs(api.nvim_list_bufs()) do
            if api.nvim_buf_is_loaded(buf) and bvar(buf, 'harn_state_uri') and bvar(buf, 'harn_client_id') == client_id then
              M._set_text(buf, '# harn-ls\n\n' .. msg .. '. `:edit` this buffer to start it again.\n')
            end
          end
        end)
      end
    end,
  }
end

--- Whether this Neovim has `vim.lsp.config` / `vim.lsp.enable` (0.11+), which the plugin then uses.
function M.uses_lsp_config()
  return type(vim.lsp.config) == 'table' and type(vim.lsp.enable) == 'function'
end

-- root_dir of the vim.lsp.config configuration: the buffer's Harn project, else no client.
local function config_root_dir(bufnr, on_dir)
  local name = api.nvim_buf_get_name(bufnr)
  if vim.bo[bufnr].buftype == '' and name ~= '' and not name:match('^%a[%w+.-]*:') then
    local root = M.find_root(name)
    if root then
      on_dir(root)
    end
  end
end

--- The `harn_ls` configuration for vim.lsp.config (0.11+; returned by lsp/harn_ls.lua): the settings
--- given to setup(), and a root_dir that is the buffer's Harn project (no client elsewhere).
function M.lsp_config()
  return vim.tbl_extend('force', base_config(), { root_dir = config_root_dir })
end

--- The client serving `root`, started if needed. Returns the client id or nil.
--- After a failed start only an explicit command (`retry`) tries again.
function M.client_for_root(root, retry)
  local id = clients[root]
  if id and get_client(id) then
    return id
  end
  if failed[root] and not retry then
    return nil
  end
  local folders = { { uri = vim.uri_from_fname(root), name = vim.fn.fnamemodify(root, ':t') } }
  local ok, config
  if M.uses_lsp_config() then
    -- the configuration as vim.lsp.config resolves it (the plugin's, refined by the user's own)
    config = vim.tbl_extend('force', vim.lsp.config[CONFIG_NAME] or base_config(),
      { name = CONFIG_NAME, root_dir = root, workspace_folders = folders })
    -- a client the configuration's vim.lsp.enable started for this root already is reused
    ok, id = pcall(vim.lsp.start, config, { attach = false })
  else
    config = vim.tbl_extend('force', base_config(), { name = 'harn-ls', root_dir = root, workspace_folders = folders })
    if vim.lsp.start_client and not has('0.11') then
      ok, id = pcall(vim.lsp.start_client, config)
    else
      ok, id = pcall(vim.lsp.start, config, { attach = false, reuse_client = function() return false end })
    end
  end
  if not ok or not id then
    failed[root] = true
    notify('could not start `' .. table.concat(config.cmd or {}, ' ') .. '` (set `cmd` in require("harn").setup)', WARN)
    return nil
  end
  failed[root] = nil
  clients[root] = id
  root_of[id] = root
  return id
end

--- Attach the Harn client to a file buffer inside a Harn project.
function M.attach(buf)
  buf = (buf == nil or buf == 0) and api.nvim_get_current_buf() or buf
  if not api.nvim_buf_is_valid(buf) or vim.bo[buf].buftype ~= '' then
    return nil
  end
  local known = bvar(buf, 'harn_client_id')
  if get_client(known) and vim.lsp.buf_is_attached(buf, known) then
    return known
  end
  local name = api.nvim_buf_get_name(buf)
  if name == '' or name:match('^%a[%w+.-]*:') then -- unnamed, or a URI-named buffer (fugitive://, harn-state:)
    return nil
  end
  local root = M.find_root(name)
  if not root then
    return nil
  end
  local id = M.client_for_root(root)
  if not id then
    return nil
  end
  if not vim.lsp.buf_is_attached(buf, id) then
    vim.lsp.buf_attach_client(buf, id)
  end
  api.nvim_buf_set_var(buf, 'harn_client_id', id)
  local lens_key = M.config.keymaps and M.config.keymaps.lens_run
  if lens_key then
    vim.keymap.set('n', lens_key, M.lens_run, { buffer = buf, desc = 'Harn: run the code lens on this line' })
  end
  return id
end

--- The client for commands run from `buf`: the one of a harn-state: buffer, the one attached
--- to a file buffer, else the project of the working directory.
function M.context_client(buf)
  buf = (buf == nil or buf == 0) and api.nvim_get_current_buf() or buf
  local id = bvar(buf, 'harn_client_id')
  if get_client(id) then
    return id
  end
  id = M.attach(buf)
  if id then
    return id
  end
  local name = api.nvim_buf_get_name(buf)
  local root = (vim.bo[buf].buftype == '' and name ~= '' and not name:match('^%a[%w+.-]*:') and M.find_root(name))
    or M.find_root(vim.fn.getcwd())
  if root then
    return M.client_for_root(root, true)
  end
  notify('no Harn project here (no .harn/ or harn.toml above the buffer or the working directory)', WARN)
  return nil
end

-- Request `method` once the server is ready; `cb(err, result)`.
function M.request(client_id, method, params, cb, bufnr)
  M.when_ready(client_id, function()
    local client = get_client(client_id)
    if not client then
      return cb({ message = 'harn-ls is not running' }, nil)
    end
    request(client, method, params, function(err, result)
      cb(err, result)
    end, bufnr)
  end)
end

function M.execute(client_id, command, arg, cb)
  M.request(client_id, 'workspace/executeCommand', { command = command, arguments = { arg } }, function(err, result)
    if err then
      notify(command .. ': ' .. (err.message or vim.inspect(err)), ERROR)
    end
    if cb then
      cb(err, result)
    end
  end)
end

-- ---------------------------------------------------------------- harn-state: buffers

--- Any spelling of a harn-state URI (harn-state:/x, harn-state:///x) -> `harn-state:/x`.
function M.normalize_uri(uri)
  local rest = type(uri) == 'string' and uri:match('^' .. SCHEME:gsub('%-', '%%-') .. ':(.*)$')
  if not rest then
    return nil
  end
  return SCHEME .. ':/' .. rest:gsub('^/+', '')
end

-- Buffer names use the `scheme://` form, which Vim keeps as is (a `scheme:/path` name
-- would be made absolute against the working directory).
local function bufname_for(uri)
  return SCHEME .. '://' .. uri:sub(#SCHEME + 2)
end

local function set_text(buf, text)
  if not api.nvim_buf_is_valid(buf) then
    return
  end
  local lines = split_lines(text)
  local cursors = {}
  for _, win in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_buf(win) == buf then
      cursors[win] = api.nvim_win_get_cursor(win)
    end
  end
  vim.bo[buf].readonly = false
  vim.bo[buf].modifiable = true
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].readonly = true
  vim.bo[buf].modified = false
  for win, pos in pairs(cursors) do
    local row = math.min(pos[1], math.max(#lines, 1))
    pcall(api.nvim_win_set_cursor, win, { row, pos[2] })
  end
end

M._set_text = set_text

-- Accept / Reject lenses of a proposal document (the server computes them from the URI).
local function state_lenses(buf, uri, client_id)
  if not uri:match('^harn%-state:/proposals/') or not vim.lsp.codelens.on_codelens then
    return
  end
  M.request(client_id, 'textDocument/codeLens', { textDocument = { uri = uri } }, function(err, result)
    if not err and api.nvim_buf_is_valid(buf) then
      pcall(vim.lsp.codelens.on_codelens, nil, result or {},
        { bufnr = buf, client_id = client_id, method = 'textDocument/codeLens' })
    end
  end)
end

--- Fetch the text of a harn-state: buffer from the server (workspace/textDocumentContent).
function M.fetch(buf, cb)
  local uri = bvar(buf, 'harn_state_uri')
  local client_id = bvar(buf, 'harn_client_id')
  if not get_client(client_id) then
    client_id = M.context_client(buf)
    if not client_id then
      return
    end
    api.nvim_buf_set_var(buf, 'harn_client_id', client_id)
  end
  M.request(client_id, 'workspace/textDocumentContent', { uri = uri }, function(err, result)
    if not api.nvim_buf_is_valid(buf) then
      return
    end
    if err then
      set_text(buf, '# harn-ls error\n\n' .. tostring(err.message or vim.inspect(err)) .. '\n')
    else
      set_text(buf, type(result) == 'table' and type(result.text) == 'string' and result.text or '')
      api.nvim_buf_set_var(buf, 'harn_state_fetches', (bvar(buf, 'harn_state_fetches') or 0) + 1)
      state_lenses(buf, uri, client_id)
    end
    if cb then
      cb(err, result)
    end
  end, buf)
end

--- A buffer whose text is project data: no modeline in it is ever applied. 'modeline' is local to
--- the buffer and Neovim checks it before reading any modeline (on :edit, :buffer, :split), so this
--- stops them all; 'modelineexpr' is a global option (the user's own choice, off by default) and
--- has no effect once 'modeline' is off, so it is left alone.
local function data_buffer(buf)
  vim.bo[buf].modeline = false
end

local function setup_state_buffer(buf, uri, client_id)
  api.nvim_buf_set_var(buf, 'harn_state_uri', uri)
  if client_id then
    api.nvim_buf_set_var(buf, 'harn_client_id', client_id)
  end
  data_buffer(buf)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  vim.bo[buf].readonly = true
  if vim.bo[buf].filetype ~= 'markdown' then
    vim.bo[buf].filetype = 'markdown'
  end
  local keys = M.config.keymaps and M.config.keymaps.follow
  if type(keys) == 'string' then
    keys = { keys }
  end
  for _, key in ipairs(keys or {}) do
    vim.keymap.set('n', key, M.follow_link, { buffer = buf, desc = 'Harn: follow the link under the cursor' })
  end
end

local pending_client -- client for the harn-state: buffer being read by BufReadCmd

--- Open a harn-state: URI in the current window (opts.client_id: which server; opts.cmd: 'edit', 'split', ...).
function M.open_state(uri, opts)
  opts = opts or {}
  local norm = M.normalize_uri(uri)
  if not norm or norm:find('%c') then
    notify('not a harn-state: URI: ' .. tostring(uri), ERROR)
    return nil
  end
  local client_id = opts.client_id
  if not get_client(client_id) then
    client_id = M.context_client()
  end
  if not client_id then
    return nil
  end
  local existing = buffers_with_uri(norm)[1]
  pending_client = client_id
  local ok, err = pcall(vim.cmd, (opts.cmd or 'edit') .. ' ' .. vim.fn.fnameescape(bufname_for(norm)))
  pending_client = nil
  if not ok then
    notify(tostring(err), ERROR)
    return nil
  end
  local buf = api.nvim_get_current_buf()
  if bvar(buf, 'harn_state_uri') ~= norm then -- BufReadCmd did not run (e.g. an :edit! of a listed buffer)
    setup_state_buffer(buf, norm, client_id)
    M.fetch(buf)
  elseif existing == buf then
    M.fetch(buf) -- already open: show the current text
  end
  return buf
end

-- BufReadCmd harn-state://*: `:edit harn-state:///index.md` works too.
local function on_read(args)
  local buf = args.buf
  local uri = M.normalize_uri(args.match ~= '' and args.match or api.nvim_buf_get_name(buf))
  if not uri then
    return
  end
  local client_id = pending_client or bvar(buf, 'harn_client_id')
  if not get_client(client_id) then
    local alt = vim.fn.bufnr('#')
    client_id = (alt > 0 and get_client(bvar(alt, 'harn_client_id')) and bvar(alt, 'harn_client_id')) or M.context_client(buf)
  end
  setup_state_buffer(buf, uri, client_id)
  if vim.fn.line('$') == 1 and vim.fn.getline(1) == '' then
    set_text(buf, '# harn-ls\n\nLoading ' .. uri .. ' …\n')
  end
  if client_id then
    M.fetch(buf)
  end
end

--- Open a link target: a harn-state: URI, or a file: URI with an optional #L<line> fragment.
function M.open_target(target, opts)
  opts = opts or {}
  if type(target) ~= 'string' or target:find('%c') then
    notify('refused a link with control characters', WARN)
    return nil
  end
  if M.normalize_uri(target) then
    return M.open_state(target, { client_id = opts.client_id or bvar(0, 'harn_client_id'), cmd = opts.cmd })
  end
  if type(target) == 'string' and target:match('^file:') then
    local uri, fragment = target:match('^([^#]*)#?(.*)$')
    local path = vim.uri_to_fname(uri)
    vim.cmd((opts.cmd or 'edit') .. ' ' .. vim.fn.fnameescape(path))
    local line = tonumber(fragment:match('^L(%d+)') or '')
    if line then
      local col = tonumber(fragment:match('^L%d+C(%d+)') or '') or 1
      line = math.max(1, math.min(line, api.nvim_buf_line_count(0)))
      pcall(api.nvim_win_set_cursor, 0, { line, math.max(col - 1, 0) })
    end
    return api.nvim_get_current_buf()
  end
  notify('not a Harn link: ' .. tostring(target), WARN)
end

--- The link target on `line` at byte column `col` (1-based): a Markdown link whose label or
--- target holds the cursor, a bare harn-state:/file: URI under it, else the line's only link.
function M.link_at(line, col)
  local links = {}
  for close, target, stop in line:gmatch('()%]%(([^%s%)]+)%)()') do
    -- label start: the matching '[' (nested and backslash-escaped brackets allowed in the label)
    local open, depth, i = close, 0, close - 1
    while i >= 1 do
      local c = line:sub(i, i)
      if (c == '[' or c == ']') and line:sub(i - 1, i - 1) ~= '\\' then
        if c == ']' then
          depth = depth + 1
        elseif depth == 0 then
          open = i
          break
        else
          depth = depth - 1
        end
      end
      i = i - 1
    end
    table.insert(links, { s = open, e = stop, target = target })
  end
  for _, l in ipairs(links) do
    if col >= l.s and col < l.e then
      return l.target
    end
  end
  for s, target, e in line:gmatch('()(' .. SCHEME:gsub('%-', '%%-') .. ':[^%s%)%]>`|"]+)()') do
    if col >= s and col < e then
      return target
    end
  end
  for s, target, e in line:gmatch('()(file:[^%s%)%]>`|"]+)()') do
    if col >= s and col < e then
      return target
    end
  end
  if #links == 1 then
    return links[1].target
  end
  return nil
end

function M.follow_link()
  local line = api.nvim_get_current_line()
  local col = api.nvim_win_get_cursor(0)[2] + 1
  local target = M.link_at(line, col)
  if not target then
    notify('no link under the cursor', WARN)
    return
  end
  if target:match('^https?:') then
    notify(target)
    return
  end
  return M.open_target(target)
end

-- ---------------------------------------------------------------- commands

function M.index()
  return M.open_state(SCHEME .. ':/index.md')
end

function M.recall(query)
  query = vim.trim(query or '')
  if query == '' then
    notify('usage: :HarnRecall {query}', WARN)
    return
  end
  return M.open_state(SCHEME .. ':/recall.md?q=' .. M.urlencode(query))
end

local function proposal_action(client_id, action, id, cb)
  local command = action == 'accept' and 'harnState.acceptProposal' or 'harnState.rejectProposal'
  local arg = { id = id }
  if action == 'reject' then
    arg.days = 14
  end
  M.execute(client_id, command, arg, function(err, result)
    if not err and type(result) == 'table' and result.ok == false then
      notify(tostring(result.message), WARN)
    end
    if cb then
      cb(err, result)
    end
  end)
end

-- ---------------------------------------------------------------- answering HITL requests (issue 33)

local HITL_VERBS = { approve = true, deny = true, answer = true, accept = true, decline = true, finish = true }

local function hitl_send(client_id, arg, cb)
  M.execute(client_id, 'harnState.answerHitl', arg, function(err, result)
    if not err and type(result) == 'table' then
      -- the server shows the message itself (window/showMessage); keep it in :messages too
      notify(tostring(result.message), result.ok == false and WARN or vim.log.levels.INFO)
    end
    if cb then
      cb(err, result)
    end
  end)
end

--- Answer a request: `action` approve|deny|answer|accept|decline|finish; `value` the reason (or, for
--- answer, the answer text). Missing pieces are asked for (vim.ui.input / vim.ui.select over `choices`).
function M.hitl(action, id, value, cb, opts)
  opts = opts or {}
  local client_id = opts.client_id or M.context_client()
  if not client_id then
    return
  end
  if not HITL_VERBS[action] then
    return notify('usage: :HarnHitl approve|deny|answer|accept|decline|finish {request id} [reason or answer]', WARN)
  end
  if not id or id == '' then
    return M.tree_items(client_id, 'runs', 'hitl', function(err, all)
      if err or #all == 0 then
        return notify(err and ('harn/tree: ' .. (err.message or '')) or 'nothing is waiting for you', err and ERROR or vim.log.levels.INFO)
      end
      vim.ui.select(all, {
        prompt = 'Harn: ' .. action,
        format_item = function(item) return tostring(item.label) .. ' (' .. tostring(item.description) .. ')' end,
      }, function(item)
        if item and type(item.data) == 'table' then
          M.hitl(action, item.data.requestId, value, cb, { client_id = client_id, choices = item.data.choices })
        end
      end)
    end)
  end
  local arg = { requestId = id, action = action, reason = '' }
  if action == 'finish' then
    return hitl_send(client_id, arg, cb)
  end
  if action == 'answer' then
    if value and value ~= '' then
      arg.answer = value
      return hitl_send(client_id, arg, cb)
    end
    local choices = type(opts.choices) == 'table' and opts.choices or {}
    if #choices > 0 then
      return vim.ui.select(choices, { prompt = 'Answer' }, function(_, idx)
        if idx then
          arg.choice = idx - 1
          hitl_send(client_id, arg, cb)
        end
      end)
    end
    return vim.ui.input({ prompt = 'Answer: ' }, function(text)
      if text then
        arg.answer = text
        hitl_send(client_id, arg, cb)
      end
    end)
  end
  if value ~= nil then
    arg.reason = value
    return hitl_send(client_id, arg, cb)
  end
  vim.ui.input({ prompt = 'Reason (optional): ' }, function(text)
    if text then
      arg.reason = text
      hitl_send(client_id, arg, cb)
    end
  end)
end

--- All items of a `harn/tree` node, following its pages (at most 50 pages of 200).
function M.tree_items(client_id, view, parent, cb)
  local all = {}
  local function page(n)
    M.request(client_id, 'harn/tree', { view = view, parent = parent, page = n }, function(err, result)
      if err then
        return cb(err, all)
      end
      vim.list_extend(all, type(result) == 'table' and result.items or {})
      if type(result) == 'table' and type(result.nextPage) == 'number' and result.nextPage > n and n < 49 then
        return page(result.nextPage)
      end
      cb(nil, all)
    end)
  end
  page(0)
end

--- List pending proposals (harn/tree, view skills) and accept / reject one.
--- With `action` ('accept' | 'reject') and `id`, act on that proposal directly.
function M.proposals(action, id, cb)
  local client_id = M.context_client()
  if not client_id then
    return
  end
  if action and id then
    return proposal_action(client_id, action, id, cb)
  end
  M.tree_items(client_id, 'skills', 'proposals', function(err, all)
    if err then
      notify('harn/tree: ' .. (err.message or vim.inspect(err)), ERROR)
      return
    end
    local items = {}
    for _, item in ipairs(all) do
      if type(item.data) == 'table' and item.data.id and item.contextValue == 'proposal' then
        table.insert(items, item)
      end
    end
    if #items == 0 then
      notify('no pending proposals')
      return
    end
    vim.ui.select(items, {
      prompt = 'Harn proposals',
      format_item = function(item)
        return tostring(item.label) .. ' (' .. tostring(item.description) .. ')'
      end,
    }, function(item)
      if not item then
        return
      end
      local choices = { 'Accept', 'Reject for 14 days', 'Open document' }
      vim.ui.select(choices, { prompt = tostring(item.label) }, function(choice)
        if choice == 'Accept' then
          proposal_action(client_id, 'accept', item.data.id, cb)
        elseif choice == 'Reject for 14 days' then
          proposal_action(client_id, 'reject', item.data.id, cb)
        elseif choice == 'Open document' and item.uri then
          M.open_state(item.uri, { client_id = client_id })
        end
      end)
    end)
  end)
end

--- Typecheck probe on the selection (`:'<,'>HarnProbe`) or the whole file (`:HarnProbe`).
--- `opts` are the user-command arguments (range, line1, line2).
function M.probe(opts, cb)
  opts = opts or {}
  local buf = api.nvim_get_current_buf()
  local client_id = M.attach(buf)
  if not client_id then
    notify('HarnProbe works on a file inside a Harn project', WARN)
    return
  end
  -- the range as (line, byte) pairs now (the marks); in the agreed position encoding once the client is up
  local span
  if (opts.range or 0) > 0 then
    local l1, l2 = opts.line1, opts.line2
    local s, e = vim.fn.getpos("'<"), vim.fn.getpos("'>")
    if vim.fn.visualmode() == 'v' and s[2] == l1 and e[2] == l2 then
      local first = api.nvim_buf_get_lines(buf, l1 - 1, l1, false)[1] or ''
      local last = api.nvim_buf_get_lines(buf, l2 - 1, l2, false)[1] or ''
      local end_byte = #last -- '> is the last selected character (or past the end with $)
      if e[3] <= #last then
        local ch = last:sub(e[3]):match('^[%z\1-\127\194-\244][\128-\191]*') or last:sub(e[3], e[3])
        end_byte = e[3] - 1 + #ch
      end
      span = { l1 - 1, first, s[3] - 1, l2 - 1, last, end_byte }
    else
      local last = api.nvim_buf_get_lines(buf, l2 - 1, l2, false)[1] or ''
      span = { l1 - 1, '', 0, l2 - 1, last, #last }
    end
  end
  M.when_ready(client_id, function()
    local client = get_client(client_id)
    if not client then
      return
    end
    local range, enc = nil, client.offset_encoding or 'utf-16'
    if span then
      range = {
        start = { line = span[1], character = encoded_col(enc, span[2], span[3]) },
        ['end'] = { line = span[4], character = encoded_col(enc, span[5], span[6]) },
      }
    end
    local arg = { uri = vim.uri_from_bufnr(buf), range = range }
    -- through the buffer, so pending didChange notifications go out first
    request(client, 'workspace/executeCommand', { command = 'harnState.probeTypecheck', arguments = { arg } },
      function(err, result)
        if err then
          notify('probe: ' .. (err.message or vim.inspect(err)), ERROR)
        end
        if cb then
          cb(err, result)
        end
      end, buf)
  end)
end

--- A short status-line text for the current buffer's project, e.g. `harn 7 facts · 3 proposals · 2 problems`.
function M.statusline()
  local st = M.status[bvar(api.nvim_get_current_buf(), 'harn_client_id') or -1]
  if type(st) ~= 'table' then
    return ''
  end
  local counts = type(st.counts) == 'table' and st.counts or {}
  local parts = {}
  for _, key in ipairs({ 'facts', 'proposals', 'runs' }) do
    if tonumber(counts[key]) then
      table.insert(parts, counts[key] .. ' ' .. key)
    end
  end
  if tonumber(st.problems) and st.problems > 0 then
    table.insert(parts, st.problems .. ' problems')
  end
  return 'harn ' .. table.concat(parts, ' · ')
end

function M.lens_run()
  vim.lsp.codelens.run()
end

-- Client-side commands named in lenses and tree items.
local function register_client_commands()
  vim.lsp.commands['harnState.open'] = function(command, ctx)
    local target = command.arguments and command.arguments[1]
    if type(target) == 'table' then
      target = target.uri
    end
    M.open_target(target, { client_id = ctx and ctx.client_id })
  end
  vim.lsp.commands['harnState.compareWithExisting'] = function(command, ctx)
    local arg = command.arguments and command.arguments[1] or {}
    if type(arg) ~= 'table' or type(arg.id) ~= 'string' or type(arg.path) ~= 'string' then
      return notify('compareWithExisting needs {id, path}', ERROR)
    end
    M.compare(arg.id, arg.path, ctx and ctx.client_id)
  end
  -- lenses on a request's document (harn-state:/hitl/<id>.md): ask for the reason / answer, then answer
  for verb, name in pairs({ approve = 'approveHitl', deny = 'denyHitl', answer = 'answerHitl', accept = 'acceptHitl',
                             decline = 'declineHitl', finish = 'finishHitl' }) do
    vim.lsp.commands['harnState.ui.' .. name] = function(command, ctx)
      local arg = command.arguments and command.arguments[1] or {}
      if type(arg) ~= 'table' or type(arg.requestId) ~= 'string' then
        return notify(name .. ' needs {requestId}', ERROR)
      end
      M.hitl(verb, arg.requestId, nil, nil, { client_id = ctx and ctx.client_id, choices = arg.choices })
    end
  end
end

--- The text of the file a proposal document shows under `### `<path>`` ("What Accept writes").
function M.proposed_file(markdown, path)
  local lines = split_lines(markdown)
  for i, line in ipairs(lines) do
    local rel = line:match('^###%s+`([^`]+)`') or line:match('^###%s+(%S+)')
    if rel and (path == rel or path:sub(-#rel - 1) == '/' .. rel) then
      local j = i + 1
      while j <= #lines and not lines[j]:match('^```') and not lines[j]:match('^~~~') do
        j = j + 1
      end
      if j > #lines then
        return nil
      end
      local marker = lines[j]:match('^(```+)') or lines[j]:match('^(~~~+)')
      local body = {}
      for k = j + 1, #lines do
        if vim.trim(lines[k]) == marker then
          return table.concat(body, '\n') .. '\n'
        end
        table.insert(body, lines[k])
      end
      return nil
    end
  end
  return nil
end

--- "Compare with existing": the file on disk and the one Accept would write, in a diff tab.
function M.compare(id, path, client_id, cb)
  client_id = get_client(client_id) and client_id or M.context_client()
  if not client_id then
    return
  end
  local uri = SCHEME .. ':/proposals/' .. M.urlencode(id) .. '.md'
  M.request(client_id, 'workspace/textDocumentContent', { uri = uri }, function(err, result)
    local text = not err and type(result) == 'table' and M.proposed_file(result.text or '', path)
    if not text then
      notify('the proposal document shows no file for ' .. path, ERROR)
      return cb and cb(false)
    end
    if path:find('%c') then
      return notify('refused a path with control characters', WARN)
    end
    vim.cmd('tabnew ' .. vim.fn.fnameescape(path))
    vim.cmd('diffthis')
    vim.cmd('vnew')
    local buf = api.nvim_get_current_buf()
    data_buffer(buf) -- the proposed file's text is data too
    vim.bo[buf].buftype = 'nofile'
    vim.bo[buf].bufhidden = 'wipe'
    vim.bo[buf].swapfile = false
    pcall(api.nvim_buf_set_name, buf, 'harn-proposed://' .. id .. '/' .. vim.fn.fnamemodify(path, ':t'))
    set_text(buf, text)
    vim.bo[buf].filetype = 'markdown'
    vim.cmd('diffthis')
    if cb then
      cb(true)
    end
  end)
end

local function refresh_lenses(args)
  local buf = args.buf
  if vim.bo[buf].buftype ~= '' then
    return
  end
  local id = bvar(buf, 'harn_client_id')
  if id and get_client(id) and vim.lsp.buf_is_attached(buf, id) and buf == api.nvim_get_current_buf() then
    pcall(vim.lsp.codelens.refresh)
  end
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts or {})
  if opts and opts.cmd then
    M.config.cmd = opts.cmd -- lists are replaced, not merged
  end
  if opts and opts.keymaps and opts.keymaps.follow ~= nil then
    M.config.keymaps.follow = opts.keymaps.follow
  end
  M._setup_done = true
  register_client_commands()
  if M.uses_lsp_config() then
    -- lsp/harn_ls.lua (M.lsp_config) is the configuration; a user's vim.lsp.config('harn_ls', {...}) refines it
    vim.lsp.enable(CONFIG_NAME)
  end

  local group = api.nvim_create_augroup('harn', { clear = true })
  api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'BufEnter' }, {
    group = group,
    callback = function(args)
      M.attach(args.buf)
    end,
  })
  api.nvim_create_autocmd('BufReadCmd', { group = group, pattern = SCHEME .. '://*', callback = on_read })
  require('harn.progress').setup(group) -- a big project's load and index build, in the command line
  if M.config.codelens then
    api.nvim_create_autocmd({ 'BufEnter', 'CursorHold', 'InsertLeave' }, { group = group, callback = refresh_lenses })
  end

  local cmd = api.nvim_create_user_command
  cmd('HarnIndex', function() M.index() end, { desc = 'Harn: open the state index' })
  cmd('HarnRecall', function(a) M.recall(a.args) end, { nargs = '+', desc = 'Harn: recall memory' })
  cmd('HarnProposals', function(a)
    local action, id = a.fargs[1], a.fargs[2]
    if action and (action ~= 'accept' and action ~= 'reject' or not id) then
      return notify('usage: :HarnProposals [accept|reject {id}]', WARN)
    end
    M.proposals(action, id)
  end, { nargs = '*', desc = 'Harn: accept or reject learned-skill proposals' })
  cmd('HarnProbe', function(a) M.probe(a) end, { range = true, desc = 'Harn: typecheck probe on the selection' })
  cmd('HarnHitl', function(a)
    local action, id = a.fargs[1], a.fargs[2]
    local rest = #a.fargs > 2 and table.concat(vim.list_slice(a.fargs, 3), ' ') or nil
    M.hitl(action, id, rest)
  end, { nargs = '+', desc = 'Harn: approve|deny|answer|accept|decline|finish a request waiting for you' })
  cmd('HarnLensRun', function() M.lens_run() end, { desc = 'Harn: run the code lens on this line' })
  cmd('HarnOpen', function(a) M.open_target(a.args) end, { nargs = 1, desc = 'Harn: open a harn-state: URI' })

  -- Buffers opened before setup (lazy loading).
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(buf) then
      M.attach(buf)
    end
  end
end

return M
