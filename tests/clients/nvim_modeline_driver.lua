-- Issue 27 item 10: a modeline inside data shown in a harn-state: buffer sets no option.
-- The user has modelines on (`set modeline`; Neovim's default, except for root), the project
-- holds a fact whose claim is a modeline, and its document (first line: `# Fact — <claim>`) is
-- opened, `:edit`ed, left and `:edit`ed again, and split (when Neovim applies modelines: window-local
-- options each time a loaded buffer is entered, buffer-local ones when it is read). Writes JSON to $PROBE_OUT.
local out_path = assert(os.getenv('PROBE_OUT'))
local project = assert(os.getenv('PROJECT'))
local uri = assert(os.getenv('FACT_URI'))
local results = {}
local api = vim.api

local function text()
  return table.concat(api.nvim_buf_get_lines(0, 0, -1, false), '\n')
end

local ok, err = pcall(function()
  vim.o.hidden = true
  vim.o.modeline = true -- global: what a new buffer starts with
  vim.o.modelines = 5
  vim.opt.runtimepath:prepend(assert(os.getenv('PLUGIN_DIR')))
  vim.cmd('runtime! plugin/harn.lua')
  local harn = require('harn')
  harn.setup({ cmd = vim.split(assert(os.getenv('HARN_LS_CMD')), '\t'), trusted = false })
  vim.cmd('cd ' .. vim.fn.fnameescape(project))
  -- a plain file with the same modeline: proves modelines are on in this Neovim
  vim.cmd('edit ' .. vim.fn.fnameescape(project .. '/modeline-control.md'))
  results.control_textwidth = vim.bo.textwidth
  harn.open_target(uri)
  assert(vim.wait(20000, function() return text():find('textwidth=13', 1, true) ~= nil end, 50),
    'the fact document did not load: ' .. text():sub(1, 200))
  results.first_line = api.nvim_buf_get_lines(0, 0, 1, false)[1]
  results.name = api.nvim_buf_get_name(0)
  local buf = api.nvim_get_current_buf()
  results.after_open = { tw = vim.bo.textwidth, fdc = vim.wo.foldcolumn, list = vim.wo.list }
  vim.cmd('edit') -- re-read: modelines of the buffer's text now
  assert(vim.wait(20000, function() return text():find('textwidth=13', 1, true) ~= nil end, 50), 'not reloaded')
  results.after_edit = { tw = vim.bo.textwidth, fdc = vim.wo.foldcolumn, list = vim.wo.list }
  vim.cmd('edit ' .. vim.fn.fnameescape(project .. '/modeline-control.md'))
  vim.cmd('setlocal textwidth=0 foldcolumn=0 nolist')
  vim.cmd('edit ' .. vim.fn.fnameescape(results.name))
  results.after_back = { tw = vim.bo.textwidth, fdc = vim.wo.foldcolumn, list = vim.wo.list, same = api.nvim_get_current_buf() == buf }
  vim.cmd('split')
  results.after_split = { tw = vim.bo.textwidth, fdc = vim.wo.foldcolumn, list = vim.wo.list }
  results.buffer_modeline = vim.bo.modeline
  results.global_modeline = vim.go.modeline
  results.modelineexpr = vim.o.modelineexpr
end)
results.error = (not ok) and tostring(err) or nil
local f = assert(io.open(out_path, 'w'))
f:write(vim.fn.json_encode(results))
f:close()
vim.cmd(ok and 'qall!' or 'cquit! 1')
