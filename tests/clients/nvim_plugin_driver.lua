-- Drives the harn.nvim plugin (editors/neovim) in headless Neovim against the real server.
-- Every wait is bounded; a timeout fails with the step it was in. Writes JSON to $PROBE_OUT.
local out_path = assert(os.getenv('PROBE_OUT'))
local project = assert(os.getenv('PROJECT'))
local results = { nvim = tostring(vim.version().major) .. '.' .. vim.version().minor, steps = {}, deprecated = {} }
local api = vim.api

-- Every deprecation Neovim reports (soft ones too, which it does not show yet), with where it came from.
local real_deprecate = vim.deprecate
vim.deprecate = function(name, ...)
  table.insert(results.deprecated, tostring(name) .. ' @ ' .. debug.traceback('', 2):sub(1, 600))
  return real_deprecate(name, ...)
end

local function lsp_clients()
  return vim.lsp.get_clients and vim.lsp.get_clients() or vim.lsp.get_active_clients()
end

local function finish(code)
  local f = assert(io.open(out_path, 'w'))
  f:write(vim.fn.json_encode(results))
  f:close()
  vim.cmd((code == 0) and 'qall!' or ('cquit! ' .. code))
end

local function step(name)
  table.insert(results.steps, name)
end

local function wait(ms, pred, what)
  local ok = vim.wait(ms, pred, 50)
  if not ok then
    error('timed out after ' .. ms .. ' ms waiting for ' .. (type(what) == 'function' and what() or what), 2)
  end
end

local function text(buf)
  return table.concat(api.nvim_buf_get_lines(buf or 0, 0, -1, false), '\n')
end

local function bvar(buf, name)
  local ok, v = pcall(api.nvim_buf_get_var, buf, name)
  return ok and v or nil
end

local function cursor_to(pattern)
  local lines = api.nvim_buf_get_lines(0, 0, -1, false)
  for i, l in ipairs(lines) do
    local s = l:find(pattern, 1, true)
    if s then
      api.nvim_win_set_cursor(0, { i, s - 1 })
      return i
    end
  end
  error('no line with ' .. pattern .. ' in ' .. api.nvim_buf_get_name(0))
end

local function wait_state(uri_prefix, needle, what)
  wait(15000, function()
    local u = bvar(0, 'harn_state_uri')
    return u and u:sub(1, #uri_prefix) == uri_prefix and text(0):find(needle, 1, true) ~= nil
  end, function()
    return what .. ' (current buffer ' .. api.nvim_buf_get_name(0) .. ', harn_state_uri ' .. tostring(bvar(0, 'harn_state_uri'))
      .. ', first line ' .. tostring(api.nvim_buf_get_lines(0, 0, 1, false)[1]) .. ')'
  end)
end

local ok, err = pcall(function()
  vim.o.hidden = true
  vim.opt.runtimepath:prepend(assert(os.getenv('PLUGIN_DIR')))
  vim.cmd('runtime! plugin/harn.lua')
  local harn = require('harn')
  local cmd = vim.split(assert(os.getenv('HARN_LS_CMD')), '\t')
  local settings = { harnPath = assert(os.getenv('HARN_DOUBLE')), hitl = { reviewer = 'alice' } }
  results.uses_lsp_config = harn.uses_lsp_config()
  if harn.uses_lsp_config() then
    -- 0.11+: the user's own vim.lsp.config('harn_ls', ...) refines the plugin's configuration
    vim.lsp.config('harn_ls', { cmd = cmd })
    harn.setup({ settings = settings, trusted = true })
  else
    harn.setup({ cmd = cmd, settings = settings, trusted = true })
  end
  vim.cmd('cd ' .. vim.fn.fnameescape(project))
  results.root = harn.find_root(project .. '/src/billing/invoice.py')

  step('index')
  vim.cmd('HarnIndex')
  local index = api.nvim_get_current_buf()
  wait_state('harn-state:/index.md', '## Checkpoints', 'the index document')
  results.index_name = api.nvim_buf_get_name(index)
  results.index_text = text(index)
  results.index_buftype = vim.bo[index].buftype
  results.index_filetype = vim.bo[index].filetype
  results.index_modifiable = vim.bo[index].modifiable
  local wrote = pcall(api.nvim_buf_set_lines, index, 0, 1, false, { 'edited' })
  results.index_set_lines_ok = wrote
  results.index_first_line = api.nvim_buf_get_lines(index, 0, 1, false)[1]
  results.statusline = harn.statusline()
  results.statusline_expr = vim.api.nvim_eval_statusline("%{v:lua.require'harn'.statusline()}", { fillchar = ' ' }).str

  step('refresh')
  local fetches = bvar(index, 'harn_state_fetches')
  local events = project .. '/.harn/memory/agent/notes/events.jsonl'
  local f = assert(io.open(events, 'a'))
  f:write('{"type":"store","id":"019e5555-0000-7000-8000-00000000abcd","namespace":"agent/notes",'
    .. '"key":"neovim/marker","value":"plugin refresh marker","text":"plugin refresh marker",'
    .. '"tags":["neovim"],"stored_at":"2026-05-20T10:00:00.000000000+00:00"}\n')
  f:close()
  wait(15000, function() return text(index):find('(harn-state:/memory/agent/notes.md) — 5 active', 1, true) ~= nil end,
    'the index to refresh after a memory event was appended')
  results.refetched = bvar(index, 'harn_state_fetches') > fetches

  step('follow harn-state link')
  cursor_to('[ingest](harn-state:/checkpoints/ingest.md)')
  vim.cmd('normal gf')
  wait_state('harn-state:/checkpoints/ingest.md', '# ', 'the checkpoints document after gf')
  results.checkpoint_text = text(0):sub(1, 300)
  vim.cmd('buffer ' .. index)

  step('follow file link')
  cursor_to('harn-state:/facts/fact_a26c5c67468c8d3fe33f8c8c0f5489e6.md')
  api.nvim_feedkeys(api.nvim_replace_termcodes('<CR>', true, false, true), 'x', false)
  wait_state('harn-state:/facts/fact_a26c5c67468c8d3fe33f8c8c0f5489e6.md', '## Evidence', 'the fact document after <CR>')
  cursor_to('(file://')
  vim.cmd('normal gf')
  wait(5000, function() return api.nvim_buf_get_name(0):match('src/billing/invoice%.py$') ~= nil end, 'the file link to open')
  results.file_link_line = api.nvim_win_get_cursor(0)[1]
  local src = api.nvim_get_current_buf()

  step('code lenses')
  local lens
  wait(20000, function()
    for _, l in ipairs(vim.lsp.codelens.get(src)) do
      if l.range.start.line == 27 and l.command and l.command.title ~= '' then
        lens = l
        return true
      end
    end
    vim.cmd('doautocmd CursorHold') -- the plugin refreshes lenses on CursorHold
    return false
  end, 'a resolved code lens above line 28 of invoice.py')
  results.lens_title = lens.command.title
  results.lens_count = #vim.lsp.codelens.get(src)
  api.nvim_win_set_cursor(0, { 28, 0 })
  vim.cmd('HarnLensRun')
  wait_state('harn-state:/facts/', '## Claim', 'the fact document opened by the lens')
  results.lens_opened = bvar(0, 'harn_state_uri')

  step('recall')
  vim.cmd('HarnRecall money Decimal')
  wait_state('harn-state:/recall.md', '## Results', 'the recall document')
  results.recall_uri = bvar(0, 'harn_state_uri')
  results.recall_text = text(0)

  step('proposals')
  local seen, picks = {}, {}
  vim.ui.select = function(items, opts, on_choice)
    local labels = {}
    for _, it in ipairs(items) do
      table.insert(labels, opts.format_item and opts.format_item(it) or it)
    end
    table.insert(seen, { prompt = opts.prompt, items = labels })
    local want = table.remove(picks, 1)
    for i, it in ipairs(items) do
      if labels[i] == want or (type(it) == 'table' and it.label == want) then
        return on_choice(it)
      end
    end
    on_choice(nil)
  end
  picks = { 'Reconcile Stripe Payouts Ledger', 'Accept' }
  vim.cmd('HarnProposals')
  local skill = project .. '/.claude/skills/learned-reconcile-stripe-payouts-ledger/SKILL.md'
  wait(15000, function() return vim.loop.fs_stat(skill) ~= nil end, 'Accept to write ' .. skill)
  -- the server asks (window/showDocument) to show the written skill
  local t0 = vim.loop.hrtime()
  wait(15000, function() return api.nvim_buf_get_name(0) == skill end, function() return 'window/showDocument of ' .. skill .. ' (current ' .. api.nvim_buf_get_name(0) .. ')' end)
  results.show_document_ms = (vim.loop.hrtime() - t0) / 1e6
  picks = { 'Month-end close workflow', 'Reject for 14 days' }
  wait(10000, function()
    vim.cmd('HarnProposals')
    return vim.wait(2000, function() return #picks == 0 end, 50)
  end, 'the proposal list without the accepted proposal')
  wait(15000, function()
    vim.cmd('HarnProposals') -- nothing to pick: records the list
    return vim.wait(2000, function() return #seen >= 5 and #seen[#seen].items == 1 end, 50)
  end, 'the proposal list without the rejected proposal')
  results.selects = seen

  step('proposal document lenses: compare with existing')
  local conflict = project .. '/.claude/skills/learned-grep-read-file-edit-file-run-tests/SKILL.md'
  vim.fn.mkdir(vim.fn.fnamemodify(conflict, ':h'), 'p')
  local cf = assert(io.open(conflict, 'w'))
  cf:write('---\nname: learned-grep-read-file-edit-file-run-tests\nshort: hand-written\n---\n\nMine.\n')
  cf:close()
  vim.cmd('HarnOpen harn-state:/proposals/tools-7742da9fd499.md')
  local pdoc = api.nvim_get_current_buf()
  wait_state('harn-state:/proposals/tools-7742da9fd499.md', '## What Accept writes', 'the proposal document')
  wait(15000, function() return #vim.lsp.codelens.get(pdoc) >= 2 end, 'Compare / Reject lenses on the proposal document')
  results.proposal_lenses = vim.tbl_map(function(l) return l.command.title end, vim.lsp.codelens.get(pdoc))
  api.nvim_win_set_cursor(0, { 1, 0 })
  picks = { 'Compare with existing' }
  vim.cmd('HarnLensRun')
  wait(15000, function() return #api.nvim_tabpage_list_wins(0) == 2 end, 'the diff tab')
  results.diff = {}
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    local b = api.nvim_win_get_buf(win)
    table.insert(results.diff, { name = api.nvim_buf_get_name(b), diff = vim.wo[win].diff, text = text(b) })
  end
  vim.cmd('tabclose')

  step('proposals: reject by id')
  vim.cmd('HarnProposals reject tools-7742da9fd499')
  local left
  wait(15000, function()
    harn.tree_items(harn.context_client(), 'skills', 'proposals', function(_, items)
      left = vim.tbl_filter(function(i) return i.contextValue == 'proposal' end, items)
    end)
    return vim.wait(2000, function() return left ~= nil and #left == 0 end, 50)
  end, function() return 'no pending proposal left (still ' .. vim.inspect(left) .. ')' end)

  step(':edit harn-state:///...')
  vim.cmd('edit harn-state:///runs/run_019dfd98-73c0-704c-9bb0-e3d1289d2568.md')
  wait_state('harn-state:/runs/run_019dfd98-73c0-704c-9bb0-e3d1289d2568.md', 'ingest', 'the run document opened with :edit')
  results.run_doc_modifiable = vim.bo.modifiable

  step('probe')
  local target = project .. '/pipelines/probe_target.harn'
  local pf = assert(io.open(target, 'w'))
  pf:write('pipeline main() {\n  let label = "r\xc3\xa9sum\xc3\xa9 \xf0\x9f\x98\x80"; let x: int = "oops"\n  let y: int = 2\n}\n')
  pf:close()
  vim.cmd('edit ' .. vim.fn.fnameescape(target))
  local pbuf = api.nvim_get_current_buf()
  cursor_to('let x')
  vim.cmd('normal! vf";\27') -- charwise: from `let x` to the closing quote of "oops"
  -- what :'<,'>HarnProbe runs, with a callback: the answer, then the diagnostics (checked by the test:
  -- their columns, and whether there are any, depend on the position encoding)
  local answered = false
  harn.probe({ range = 2, line1 = 2, line2 = 2 }, function() answered = true end)
  wait(20000, function() return answered end, 'the probe command to answer')
  local diags = {}
  vim.wait(3000, function()
    diags = vim.tbl_filter(function(d) return d.source == 'harn-probe' end, vim.diagnostic.get(pbuf))
    return #diags > 0
  end, 50)
  results.probe_diags = vim.tbl_map(function(d)
    return { lnum = d.lnum, col = d.col, end_col = d.end_col, message = d.message }
  end, diags)
  results.probe_line = api.nvim_buf_get_lines(pbuf, 1, 2, false)[1]

  step('probe, linewise')
  api.nvim_win_set_cursor(0, { 3, 0 })
  vim.cmd('normal! V\27')
  vim.cmd("'<,'>HarnProbe") -- clean code: the earlier probe's diagnostics go away
  local facts = project .. '/.harn/memory/project/facts/events.jsonl'
  wait(20000, function()
    local fh = io.open(facts)
    local all = fh and fh:read('*a') or ''
    if fh then fh:close() end
    return all:find('probe typecheck `let y: int = 2`', 1, true) ~= nil
  end, 'the linewise probe to store its fact')
  results.probe_diags_after = #vim.tbl_filter(function(d) return d.source == 'harn-probe' end, vim.diagnostic.get(pbuf))

  step('hitl: approve, then the lens command and :HarnHitl are told it is already approved')
  local rid = 'hitl_approval_019df301-7a10-7c2e-9d41-5b6c7d8e9f01'
  local approved
  harn.hitl('approve', rid, 'diff reviewed', function(_, result) approved = result end)
  wait(20000, function() return approved ~= nil end, 'the approval to be answered')
  results.hitl_approve = approved
  local real_input, asked = vim.ui.input, nil
  vim.ui.input = function(o, on_confirm) asked = o.prompt; on_confirm('again') end
  vim.lsp.commands['harnState.ui.approveHitl']({ arguments = { { requestId = rid, kind = 'approval' } } },
    { client_id = harn.context_client() })
  vim.ui.input = real_input
  results.hitl_lens_prompt = asked
  wait(20000, function()
    return select(2, vim.fn.execute('messages'):gsub('already approved', '')) >= 1
  end, 'the lens answer to be refused')
  pcall(vim.cmd, 'HarnHitl deny ' .. rid .. ' not now')
  wait(20000, function()
    return select(2, vim.fn.execute('messages'):gsub('already approved', '')) >= 2
  end, 'the :HarnHitl answer to be refused')
  results.hitl_messages = vim.fn.execute('messages')

  local harn_client = vim.lsp.get_client_by_id(harn.context_client())
  results.offset_encoding = harn_client.offset_encoding
  results.client_name = harn_client.name
  results.clients = #lsp_clients() -- one per project, however many ways it was started
  for _, client in pairs(lsp_clients()) do
    vim.lsp.stop_client(client.id)
  end
  vim.wait(5000, function() return #lsp_clients() == 0 end, 50)
  results.all_messages = vim.fn.execute('messages')
end)
if not ok then
  results.error = tostring(err)
  results.current_buffer = api.nvim_buf_get_name(0)
  results.current_text = text(0):sub(1, 1500)
  results.messages = vim.fn.execute('messages')
  finish(1)
else
  finish(0)
end
