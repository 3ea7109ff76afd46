-- The :Advise* commands, available once editors/nvim is on 'runtimepath' at
-- startup, whether the server is started by require('advise').setup() or by
-- vim.lsp.enable('advise') (Neovim 0.11+). Starting nothing else.
if vim.g.loaded_advise or vim.fn.has('nvim-0.7') ~= 1 then return end
vim.g.loaded_advise = true
require('advise').create_commands()
