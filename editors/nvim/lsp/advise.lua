-- advise's language server for Neovim 0.11+:
--
--   vim.lsp.enable('advise')
--
-- with editors/nvim on 'runtimepath' and `advise` on PATH. Override fields with
-- vim.lsp.config('advise', { cmd = { '/path/to/advise', 'server' },
-- settings = { advise = { ... } } }). The commands (:AdviseFindings ...) come
-- from plugin/advise.lua.
return {
  cmd = { 'advise', 'server' },
  filetypes = { 'python', 'cuda', 'c', 'cpp' },
  root_markers = { 'advise.toml', '.git' },
  handlers = {
    -- advise's notification that the profiles changed: ask for lenses again
    ['advise/profileChanged'] = function(err, result, ctx)
      local ok, advise = pcall(require, 'advise')
      if ok then advise.on_profile_changed(err, result, ctx) end
    end,
  },
}
