-- Headless Neovim with the harn plugin on a big project: the load's work-done progress is shown
-- (harn.progress, fed by LspProgress on 0.10+ or User LspProgressUpdate on 0.7-0.9).
-- Writes JSON to $PROBE_OUT; exits 0 on success, 1 on failure.
local out_path = assert(os.getenv('PROBE_OUT'))
local project = assert(os.getenv('PROJECT'))
local results = { nvim = tostring(vim.version().major) .. '.' .. vim.version().minor }

local function finish(code)
  local f = assert(io.open(out_path, 'w'))
  f:write(vim.fn.json_encode(results))
  f:close()
  vim.cmd((code == 0) and 'qall!' or ('cquit! ' .. code))
end

local ok, err = pcall(function()
  vim.opt.runtimepath:prepend(os.getenv('PLUGIN_DIR'))
  local cmd = vim.split(os.getenv('HARN_LS_CMD'), '\t')
  local harn = require('harn')
  if harn.uses_lsp_config() then
    vim.lsp.config('harn_ls', { cmd = cmd }) -- 0.11+: a user's own configuration refines the plugin's
    harn.setup({})
  else
    harn.setup({ cmd = cmd })
  end
  vim.cmd('edit ' .. vim.fn.fnameescape(project .. '/harn.toml'))
  local progress = require('harn.progress')
  local function ended()
    for _, line in ipairs(progress.seen) do
      if line:find('Harn: loading', 1, true) and line:find('records in', 1, true) then
        return true
      end
    end
    return false
  end
  assert(vim.wait(60000, ended, 50), 'no end of the load seen: ' .. vim.inspect(progress.seen))
  results.seen = progress.seen
end)
if not ok then
  results.error = tostring(err)
  finish(1)
else
  finish(0)
end
