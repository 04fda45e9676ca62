-- Loads harn.nvim with default settings; call require('harn').setup({...}) to configure it.
if vim.g.loaded_harn or vim.fn.has('nvim-0.7') == 0 then
  return
end
vim.g.loaded_harn = true
if not vim.g.harn_no_auto_setup then
  -- Deferred so that a setup() call from the user's config (which runs later) wins.
  vim.schedule(function()
    local harn = require('harn')
    if not harn._setup_done then
      harn.setup()
    end
  end)
end
