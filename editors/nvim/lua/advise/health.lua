-- :checkhealth advise — the binary, its version, the current buffer's root and
-- the profiles advise merges there. Works with Neovim 0.7's health#report_*
-- functions and with vim.health (report_* in 0.8/0.9, start/ok/... from 0.10).

local M = {}

local h = vim.health or {}
local function reporter(new, old)
  if h[new] then return h[new] end
  if h[old] then return h[old] end
  return function(...) return vim.fn['health#' .. old](...) end
end
local start = reporter('start', 'report_start')
local ok = reporter('ok', 'report_ok')
local info = reporter('info', 'report_info')
local warn = reporter('warn', 'report_warn')
local error_ = reporter('error', 'report_error')

-- the value of `dir` in the [profile] table of an advise.toml, if any
local function profile_dir_of(toml)
  if vim.fn.filereadable(toml) ~= 1 then return nil end
  local section
  for _, line in ipairs(vim.fn.readfile(toml)) do
    local s = line:gsub('#.*$', '')
    local table_name = s:match('^%s*%[%s*([^%]]-)%s*%]%s*$')
    if table_name then
      section = table_name
    elseif section == 'profile' then
      local v = s:match('^%s*dir%s*=%s*"(.-)"%s*$') or s:match("^%s*dir%s*=%s*'(.-)'%s*$")
      if v then return v end
    end
  end
  return nil
end

--- The profile folder advise reads for a root: the `profileDir` setting, else
--- advise.toml's [profile] dir, else .advise/profiles; and where it came from.
function M.profile_dir(root, settings)
  local dir, from
  if type(settings) == 'table' and type(settings.profileDir) == 'string' then
    dir, from = settings.profileDir, 'the profileDir setting'
  else
    dir = profile_dir_of(root .. '/advise.toml')
    if dir then
      from = 'advise.toml [profile] dir'
    else
      dir, from = '.advise/profiles', 'the default'
    end
  end
  if not dir:match('^/') then dir = root .. '/' .. dir end
  return dir, from
end

-- the buffer :checkhealth was run from (it opens a buffer of its own first)
local function user_buffer()
  local candidates = { vim.fn.bufnr('#'), require('advise')._last_buf(), vim.api.nvim_get_current_buf() }
  for _, b in ipairs(candidates) do
    if b and b > 0 and vim.api.nvim_buf_is_valid(b) and vim.bo[b].buftype == ''
      and vim.api.nvim_buf_get_name(b) ~= '' then
      return b
    end
  end
  return nil
end

function M.check()
  local advise = require('advise')
  local cfg = advise.config()
  start('advise')

  if vim.fn.has('nvim-0.7') == 1 then
    ok('Neovim 0.7 or later')
  else
    error_('advise needs Neovim 0.7 or later')
  end

  -- the binary and its version
  local bin = advise.binary()
  local path = vim.fn.exepath(bin)
  if path == '' then
    error_(string.format('the advise binary `%s` was not found', bin), {
      'put advise on PATH, or pass its path: require("advise").setup({ path = "/path/to/advise" })',
    })
  else
    ok(string.format('advise binary: %s', path))
    local out = vim.fn.system({ path, '--version' })
    if vim.v.shell_error == 0 then
      ok(string.format('version: %s', vim.trim(out)))
    else
      error_(string.format('`%s --version` failed (exit status %d): %s', path, vim.v.shell_error, vim.trim(out)))
    end
  end

  -- the root of the current buffer and its profiles
  local buf = user_buffer()
  local root, where
  if buf then
    root = advise.root_for(buf)
    where = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':~:.')
  end
  if not root then
    root = vim.fn.getcwd()
    info(string.format('no file buffer: looking at the current folder %s', root))
  elseif advise.find_root(vim.api.nvim_buf_get_name(buf)) then
    ok(string.format('root of %s: %s (markers: %s)', where, root, table.concat(cfg.root_markers, ', ')))
  else
    warn(string.format('%s is under no folder holding %s: its own folder %s is used', where,
      table.concat(cfg.root_markers, ' or '), root))
  end
  local running = {}
  for _, c in ipairs((vim.lsp.get_clients or vim.lsp.get_active_clients)()) do
    if c.name == 'advise' then table.insert(running, string.format('%d (%s)', c.id, c.config.root_dir or '?')) end
  end
  if #running > 0 then
    ok('advise servers running: ' .. table.concat(running, ', '))
  else
    info('no advise server runs yet (one starts when a ' .. table.concat(cfg.filetypes, '/') .. ' file is opened)')
  end

  local dir, from = M.profile_dir(root, cfg.settings)
  local profiles = vim.fn.isdirectory(dir) == 1 and vim.fn.glob(dir .. '/*.json', false, true) or {}
  if #profiles > 0 then
    ok(string.format('%d profile%s in %s (%s)', #profiles, #profiles == 1 and '' or 's', dir, from))
  else
    info(string.format('no profiles in %s (%s): run :AdviseProfile {command} on a machine with a GPU', dir, from))
  end
end

return M
