-- Pure helpers of the harn.nvim plugin, and hostile links, in headless Neovim (no server needed).
local out_path = assert(os.getenv('PROBE_OUT'))
local base = assert(os.getenv('BASE'))
local results = {}
local ok, err = pcall(function()
  vim.o.hidden = true
  vim.opt.runtimepath:prepend(assert(os.getenv('PLUGIN_DIR')))
  local harn = require('harn')
  harn.setup({ cmd = { '/nonexistent/harn-ls', 'serve' } })
  results.roots = {
    home_harn_only = harn.find_root(base .. '/home/notes/todo.txt') or vim.NIL,
    project = harn.find_root(base .. '/home/work/proj/src/a.py') or vim.NIL,
    toml = harn.find_root(base .. '/home/work/tomlproj/deep/er/b.py') or vim.NIL,
    evil = harn.find_root(base .. '/home/work/proj-evil/x.py') or vim.NIL,
  }
  results.urlencode = harn.urlencode('a b&c=d/é')
  results.normalize = { harn.normalize_uri('harn-state:///index.md?q=a%20b'), harn.normalize_uri('harn-state:/x.md'),
                        harn.normalize_uri('file:///x') or vim.NIL }
  local line = [[- [a [b] \[c](harn-state:/facts/f1.md) · see [two](harn-state:/runs/r2.md) and harn-state:/skills/s.md end]]
  results.links = {
    harn.link_at(line, 4) or vim.NIL,                       -- on the first label
    harn.link_at(line, line:find('two', 1, true)) or vim.NIL,
    harn.link_at(line, line:find('harn-state:/skills', 1, true) + 3) or vim.NIL,
    harn.link_at(line, 1) or vim.NIL,                       -- on the bullet: two links, no guess
    harn.link_at('- [only](file:///p/a.py#L3) x', 1) or vim.NIL,
  }
  results.utf16 = { harn._utf16_col('aé😀b', 1), harn._utf16_col('aé😀b', 3), harn._utf16_col('aé😀b', 7), harn._utf16_col('aé😀b', 8) }
  results.encoded = {}
  for _, enc in ipairs({ 'utf-8', 'utf-16', 'utf-32' }) do
    results.encoded[enc] = { harn._encoded_col(enc, 'aé😀b', 3), harn._encoded_col(enc, 'aé😀b', 7), harn._encoded_col(enc, 'aé😀b', 8) }
  end
  -- hostile link targets: Ex command separators and control characters stay data
  local marker = base .. '/marker'
  harn.open_target('file://' .. base .. '/home/evil|call writefile([], "' .. marker .. '")#L2')
  results.evil_name = vim.api.nvim_buf_get_name(0)
  results.evil_nl = harn.open_target('file://' .. base .. '/x\ncall writefile([], "' .. marker .. '")') or vim.NIL
  results.marker = vim.loop.fs_stat(marker) ~= nil
  -- a server that dies at start: the document says so instead of loading forever
  harn.setup({ cmd = { 'sh', '-c', 'exit 3' } })
  vim.cmd('cd ' .. vim.fn.fnameescape(base .. '/home/work/proj'))
  vim.cmd('HarnIndex')
  local ok_wait = vim.wait(10000, function()
    return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n'):find('exited (code 3', 1, true) ~= nil
  end, 50)
  results.dead_server = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  assert(ok_wait, 'no exit message in the state buffer')
end)
results.error = (not ok) and tostring(err) or nil
local f = assert(io.open(out_path, 'w'))
f:write(vim.fn.json_encode(results))
f:close()
vim.cmd(ok and 'qall!' or 'cquit! 1')
