-- Neovim 0.11+: the `harn_ls` configuration that `vim.lsp.enable('harn_ls')` (run by the plugin's
-- setup) starts. It is the lowest layer: a user's own `vim.lsp.config('harn_ls', {...})` refines it.
return require('harn').lsp_config()
