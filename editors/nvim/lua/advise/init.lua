-- advise for Neovim: starts `advise server` for Python and CUDA/C/C++ buffers
-- (one client per project root) and adds the commands :AdviseFindings,
-- :AdviseProfile, :AdviseReport, :AdviseFixAll and :AdviseExplain.
--
--   require('advise').setup({})          -- Neovim 0.7 or later
--
-- Options (all optional):
--   cmd          the server command (default { 'advise', 'server' })
--   path         the advise binary; shorthand for cmd = { path, 'server' }
--   settings     the server's settings (docs/lsp.md "Settings"): sent as
--                initializationOptions and answered on workspace/configuration
--                (section "advise")
--   filetypes    default { 'python', 'cuda', 'c', 'cpp' }
--   root_markers default { 'advise.toml', '.git' }: the nearest folder holding
--                the first marker, else the second, ... (as the server finds a
--                document's project); a file under none uses its own folder
--   on_attach    function(client, bufnr), called after advise's own
--
-- Works on Neovim 0.7 (vim.lsp.start_client + buf_attach_client) and later
-- (vim.lsp.start where it exists).

local M = {}

local api = vim.api

local defaults = {
  cmd = { 'advise', 'server' },
  filetypes = { 'python', 'cuda', 'c', 'cpp' },
  root_markers = { 'advise.toml', '.git' },
  settings = nil,
  on_attach = nil,
}

local state = {
  config = nil, -- the effective options (setup's, else the defaults)
  clients = {}, -- root -> client id (the vim.lsp.start_client path)
  missing_notified = false,
  last_buf = nil, -- the last advise buffer entered (for :checkhealth)
  lens_refreshes = 0, -- how many times lenses were asked for again (tests read it)
}

local function has(feature) return vim.fn.has(feature) == 1 end

local function notify(msg, level)
  vim.notify('advise: ' .. msg, level or vim.log.levels.INFO)
end

local function config()
  return state.config or vim.deepcopy(defaults)
end

--- The effective options (those of setup(), else the defaults).
function M.config() return config() end

--- The advise binary named by the options (the first word of cmd).
function M.binary() return config().cmd[1] end

-- ---- compatibility ----------------------------------------------------------------

local function get_clients(filter)
  filter = filter or {}
  if vim.lsp.get_clients then return vim.lsp.get_clients(filter) end
  local out = {}
  for _, c in ipairs(vim.lsp.get_active_clients()) do
    if (not filter.name or c.name == filter.name)
      and (not filter.bufnr or (c.attached_buffers and c.attached_buffers[filter.bufnr])) then
      table.insert(out, c)
    end
  end
  return out
end

local function client_request(client, method, params, handler, bufnr)
  if has('nvim-0.11') then return client:request(method, params, handler, bufnr) end
  return client.request(method, params, handler, bufnr)
end

local function client_notify(client, method, params)
  if has('nvim-0.11') then return client:notify(method, params) end
  return client.notify(method, params)
end

local function client_buffers(client)
  local out = {}
  for bufnr, attached in pairs(client.attached_buffers or {}) do
    if attached and api.nvim_buf_is_valid(bufnr) then table.insert(out, bufnr) end
  end
  table.sort(out)
  return out
end

-- byte index of an LSP position's character in `line`
local function byte_col(line, character, encoding)
  if encoding == 'utf-8' then return math.min(character, #line) end
  local ok, col
  if has('nvim-0.11') then
    ok, col = pcall(vim.str_byteindex, line, encoding, character, false)
  else
    ok, col = pcall(vim.str_byteindex, line, character, encoding ~= 'utf-32')
  end
  if ok and col then return col end
  return math.min(character, #line)
end

-- ---- roots ------------------------------------------------------------------------

local function exists(path) return vim.loop.fs_stat(path) ~= nil end

--- The project root of a file: the nearest folder holding the first of
--- `markers`, else the second, ...; nil when none holds any.
function M.find_root(path, markers)
  markers = markers or config().root_markers
  local start = vim.fn.fnamemodify(path, ':p:h')
  for _, marker in ipairs(markers) do
    local dir = start
    while dir and dir ~= '' do
      if exists(dir .. '/' .. marker) then return dir end
      local parent = vim.fn.fnamemodify(dir, ':h')
      if parent == dir then break end
      dir = parent
    end
  end
  return nil
end

local function buffer_path(bufnr)
  if not api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].buftype ~= '' then return nil end
  local name = api.nvim_buf_get_name(bufnr)
  if name == '' or name:match('^%a[%w+.-]*://') then return nil end
  return vim.fn.fnamemodify(name, ':p')
end

--- The root advise uses for a buffer (its project, else its folder); nil for
--- buffers that are no file.
function M.root_for(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  local path = buffer_path(bufnr)
  if not path then return nil end
  return M.find_root(path) or vim.fn.fnamemodify(path, ':h')
end

-- ---- the client ---------------------------------------------------------------------

local function binary_found()
  local bin = M.binary()
  if vim.fn.executable(bin) == 1 then return true end
  if not state.missing_notified then
    state.missing_notified = true
    notify(string.format("the language server binary `%s` was not found (not on PATH or not executable); "
      .. "install advise or pass its path: require('advise').setup({ path = '/path/to/advise' })", bin),
      vim.log.levels.ERROR)
  end
  return false
end

local function settings_value()
  local s = config().settings
  if type(s) ~= 'table' or next(s) == nil then return vim.empty_dict() end
  return s
end

--- Asks the server for fresh code lenses for one buffer and shows them with
--- vim.lsp.codelens.
function M.refresh_lenses(bufnr, client_id)
  if not api.nvim_buf_is_valid(bufnr) then return end
  state.lens_refreshes = state.lens_refreshes + 1
  local codelens = vim.lsp.codelens
  if codelens.enable then -- 0.12+: the built-in provider asks and redraws
    local refresh = vim.lsp.handlers['workspace/codeLens/refresh']
    if client_id and refresh then
      refresh(nil, nil, { client_id = client_id, method = 'workspace/codeLens/refresh' })
    else
      codelens.enable(true, { bufnr = bufnr })
    end
    return
  end
  -- 0.7 .. 0.11: refresh() works on the current buffer (0.10 also takes { bufnr })
  api.nvim_buf_call(bufnr, function() codelens.refresh({ bufnr = bufnr }) end)
end

local function refresh_client_lenses(client_id)
  local client = vim.lsp.get_client_by_id(client_id)
  if not client then return end
  for _, bufnr in ipairs(client_buffers(client)) do M.refresh_lenses(bufnr, client_id) end
end

--- Handler of advise's notification `advise/profileChanged` {profiles: [...]}:
--- the profiles changed, so the lenses of the client's buffers are asked again
--- (diagnostics the server publishes again by itself).
function M.on_profile_changed(_, result, ctx)
  state.last_profiles = result and result.profiles
  vim.schedule(function() refresh_client_lenses(ctx.client_id) end)
end

local function handlers()
  local h = {
    ['advise/profileChanged'] = M.on_profile_changed,
  }
  -- Neovim before 0.10 has no handler for the server's request
  -- workspace/codeLens/refresh: answer it and refresh.
  if not vim.lsp.handlers['workspace/codeLens/refresh'] then
    h['workspace/codeLens/refresh'] = function(_, _, ctx)
      vim.schedule(function() refresh_client_lenses(ctx.client_id) end)
      return vim.NIL
    end
  end
  return h
end

local function capabilities()
  return vim.tbl_deep_extend('force', vim.lsp.protocol.make_client_capabilities(), {
    workspace = { configuration = true, codeLens = { refreshSupport = true } },
  })
end

local function on_attach(client, bufnr)
  state.last_buf = bufnr
  if vim.lsp.codelens.enable then
    vim.lsp.codelens.enable(true, { bufnr = bufnr }) -- 0.12+: asks now and after edits
  else
    M.refresh_lenses(bufnr, client.id)
  end
  -- ask again when the diagnostics change (the first analysis waits for the
  -- profiles to be read, a code lens request does not) and after a save
  local group = api.nvim_create_augroup('advise_lenses', { clear = false })
  api.nvim_clear_autocmds({ group = group, buffer = bufnr })
  local id = client.id
  api.nvim_create_autocmd({ 'DiagnosticChanged', 'BufWritePost' }, {
    group = group,
    buffer = bufnr,
    callback = function(args)
      if vim.lsp.get_client_by_id(id) then M.refresh_lenses(args.buf, id) end
    end,
  })
  local user = config().on_attach
  if user then user(client, bufnr) end
end

local function client_config(root)
  local cfg = config()
  local settings = settings_value()
  return {
    name = 'advise',
    cmd = cfg.cmd,
    root_dir = root,
    init_options = next(settings) ~= nil and settings or nil,
    settings = { advise = settings },
    capabilities = capabilities(),
    handlers = handlers(),
    on_attach = on_attach,
  }
end

--- Starts (or reuses) the client of the buffer's root and attaches the
--- buffer. Returns the client id, or nil.
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  if not api.nvim_buf_is_loaded(bufnr) then return nil end
  if not vim.tbl_contains(config().filetypes, vim.bo[bufnr].filetype) then return nil end
  local root = M.root_for(bufnr)
  if not root then return nil end
  if not binary_found() then return nil end
  local id
  if vim.lsp.start then
    -- 0.8.x attaches the current buffer whatever opts.bufnr says (0.9 reads it)
    api.nvim_buf_call(bufnr, function() id = vim.lsp.start(client_config(root), { bufnr = bufnr }) end)
  else
    id = state.clients[root]
    local client = id and vim.lsp.get_client_by_id(id)
    if not client or client.is_stopped() then
      id = vim.lsp.start_client(client_config(root))
      if not id then return nil end
    end
    vim.lsp.buf_attach_client(bufnr, id)
  end
  if id then state.clients[root] = id end
  return id
end

--- The advise client of a buffer: the one attached to it, else the one of its
--- root, else the only one running.
function M.client_for(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  local attached = get_clients({ name = 'advise', bufnr = bufnr })
  if #attached > 0 then return attached[1] end
  local all = get_clients({ name = 'advise' })
  local root = M.root_for(bufnr)
  for _, c in ipairs(all) do
    if root and c.config.root_dir == root then return c end
  end
  if #all == 1 then return all[1] end
  return nil
end

local function client_or_complain(bufnr)
  local client = M.client_for(bufnr)
  if not client then
    notify('no advise server runs for this buffer (open a Python or CUDA file of the project first)',
      vim.log.levels.WARN)
  end
  return client
end

-- ---- formatting ---------------------------------------------------------------------

--- "690 µs", "85.1 ms", "1.25 s"
function M.format_seconds(s)
  if type(s) ~= 'number' then return '?' end
  local units = { { 1e-6, 'µs' }, { 1e-3, 'ms' }, { 1, 's' } }
  local scaled, unit = s / 1e-6, 'µs'
  for _, u in ipairs(units) do
    local v = s / u[1]
    if v < 999.5 or u[2] == 's' then
      scaled, unit = v, u[2]
      break
    end
  end
  local text = string.format('%.3g', scaled)
  if text:find('e') then text = string.format('%.0f', scaled) end
  return text .. ' ' .. unit
end

-- the "(gain/cost)" of a finding: its estimated gain, else its measured cost
local function figures(f)
  if type(f.gain) == 'table' and type(f.gain.seconds) == 'number' then
    return 'gain ' .. M.format_seconds(f.gain.seconds)
  end
  if type(f.cost_seconds) == 'number' and f.cost_seconds > 0 then
    return 'cost ' .. M.format_seconds(f.cost_seconds)
  end
  return nil
end

local function first_line(s) return (tostring(s or ''):gsub('\n.*', '')) end

local qf_types = { 'E', 'W', 'I', 'N' }

--- The quickfix items of an advise/findings answer, ranked by cost
--- (cost_seconds, highest first; the server's order among equal costs).
function M.findings_to_items(findings, encoding)
  local ranked = {}
  for i, f in ipairs(findings or {}) do table.insert(ranked, { i = i, f = f }) end
  table.sort(ranked, function(a, b)
    local ca, cb = tonumber(a.f.cost_seconds) or 0, tonumber(b.f.cost_seconds) or 0
    if ca ~= cb then return ca > cb end
    return a.i < b.i
  end)
  local files = {}
  local function line_of(fname, lnum)
    if files[fname] == nil then
      files[fname] = vim.fn.filereadable(fname) == 1 and vim.fn.readfile(fname) or false
    end
    return files[fname] and files[fname][lnum] or ''
  end
  local items = {}
  for _, r in ipairs(ranked) do
    local f = r.f
    local fname = vim.uri_to_fname(f.uri)
    local start = f.range and f.range.start or { line = 0, character = 0 }
    local stop = f.range and f.range['end'] or start
    local text = string.format('%s %s', tostring(f.code or '?'), first_line(f.message))
    local fig = figures(f)
    if fig then text = text .. ' (' .. fig .. ')' end
    table.insert(items, {
      filename = fname,
      lnum = start.line + 1,
      col = byte_col(line_of(fname, start.line + 1), start.character, encoding) + 1,
      end_lnum = stop.line + 1,
      end_col = byte_col(line_of(fname, stop.line + 1), stop.character, encoding) + 1,
      type = qf_types[f.severity] or 'W',
      text = text,
      cost_seconds = tonumber(f.cost_seconds) or 0, -- ignored by setqflist; kept for callers
    })
  end
  return items
end

-- ---- commands -----------------------------------------------------------------------

--- :AdviseFindings — the workspace's findings, ranked by cost, in the quickfix
--- list (opened). `on_done(items)` is called after, when given.
function M.findings(on_done)
  local bufnr = api.nvim_get_current_buf()
  local client = client_or_complain(bufnr)
  if not client then return end
  client_request(client, 'advise/findings', vim.empty_dict(), function(err, result)
    if err then
      notify('advise/findings failed: ' .. tostring(err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    local items = M.findings_to_items(result, client.offset_encoding or 'utf-16')
    vim.fn.setqflist({}, ' ', { title = 'advise findings (ranked by cost)', items = items })
    if #items == 0 then
      notify('no findings')
    else
      vim.cmd('botright copen')
    end
    if on_done then on_done(items) end
  end, bufnr)
end

--- :AdviseFixAll — applies the buffer's safe fixes (the server command
--- advise.applySafeFixes, which answers with workspace/applyEdit).
function M.fix_all(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  local client = client_or_complain(bufnr)
  if not client then return end
  client_request(client, 'workspace/executeCommand', {
    command = 'advise.applySafeFixes',
    arguments = { vim.uri_from_bufnr(bufnr) },
  }, function(err)
    if err then notify('advise.applySafeFixes failed: ' .. tostring(err.message), vim.log.levels.ERROR) end
  end, bufnr)
end

local function root_or_cwd(bufnr)
  local client = M.client_for(bufnr)
  return M.root_for(bufnr) or (client and client.config.root_dir) or vim.fn.getcwd()
end

local function refresh_root(root)
  for _, c in ipairs(get_clients({ name = 'advise' })) do
    if c.config.root_dir == root then
      refresh_client_lenses(c.id)
      -- the server republishes diagnostics itself once its watcher sees the
      -- new profile (within a second); ask for lenses again after that too
      vim.defer_fn(function() refresh_client_lenses(c.id) end, 1500)
    end
  end
end

--- :AdviseProfile {cmd} — `advise profile -- {cmd}` in a terminal split, in
--- the root of the current buffer; the lenses are refreshed when it ends.
--- Returns the terminal's buffer and job id.
function M.profile(command)
  if not command or command == '' then
    notify('usage: :AdviseProfile {command}', vim.log.levels.WARN)
    return
  end
  if not binary_found() then return end
  local root = root_or_cwd(api.nvim_get_current_buf())
  vim.cmd('botright new')
  local term = api.nvim_get_current_buf()
  local shell_cmd = vim.fn.shellescape(vim.fn.exepath(M.binary())) .. ' profile -- ' .. command
  local job = vim.fn.termopen(shell_cmd, {
    cwd = root,
    on_exit = function(_, code)
      vim.schedule(function()
        state.last_profile_exit = code
        refresh_root(root)
      end)
    end,
  })
  return term, job
end

local function scratch(lines, name)
  vim.cmd('botright new')
  local buf = api.nvim_get_current_buf()
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  pcall(api.nvim_buf_set_name, buf, name)
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  return buf
end

--- :AdviseReport — `advise report` for the current buffer's root, in a
--- scratch buffer. `on_done(bufnr)` is called after, when given.
function M.report(on_done)
  if not binary_found() then return end
  local root = root_or_cwd(api.nvim_get_current_buf())
  local out, err = {}, {}
  local function strip(data)
    if data[#data] == '' then table.remove(data) end
    return data
  end
  local job = vim.fn.jobstart({ vim.fn.exepath(M.binary()), 'report' }, {
    cwd = root,
    stdout_buffered = true,
    stderr_buffered = true,
    on_stdout = function(_, data) out = strip(data) end,
    on_stderr = function(_, data) err = strip(data) end,
    on_exit = function(_, code)
      vim.schedule(function()
        if code ~= 0 then
          notify(string.format('advise report failed (exit status %d): %s', code, table.concat(err, '\n')),
            vim.log.levels.ERROR)
          if on_done then on_done(nil) end
          return
        end
        local buf = scratch(out, 'advise report: ' .. root)
        if on_done then on_done(buf) end
      end)
    end,
  })
  if job <= 0 then notify('could not run advise report', vim.log.levels.ERROR) end
end

local function advise_diagnostics_at(bufnr, lnum)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    local last = d.end_lnum or d.lnum
    if d.source == 'advise' and d.lnum <= lnum and lnum <= last then table.insert(out, d) end
  end
  return out
end

--- The lines :AdviseExplain shows for the advise diagnostics of a line
--- (markdown): each finding's full message, its evidence and its gain.
function M.explain_lines(bufnr, lnum)
  local lines = {}
  for i, d in ipairs(advise_diagnostics_at(bufnr, lnum)) do
    if i > 1 then vim.list_extend(lines, { '', '---', '' }) end
    local data = d.user_data and d.user_data.lsp and d.user_data.lsp.data or {}
    table.insert(lines, string.format('**%s**', tostring(d.code or 'advise')))
    table.insert(lines, '')
    vim.list_extend(lines, vim.split(d.message or '', '\n', { plain = true }))
    local evidence = type(data) == 'table' and data.evidence or nil
    if type(evidence) == 'table' and #evidence > 0 then
      vim.list_extend(lines, { '', 'Evidence:' })
      for _, e in ipairs(evidence) do
        local text = type(e) == 'table' and (e.text or vim.inspect(e)) or tostring(e)
        table.insert(lines, '- ' .. text:gsub('\n', ' '))
      end
    end
    local gain = type(data) == 'table' and data.gain or nil
    if type(gain) == 'table' and type(gain.seconds) == 'number' then
      local model = type(gain.model) == 'table' and gain.model.text or nil
      table.insert(lines, '')
      table.insert(lines, string.format('Estimated gain: %s (%s)%s', M.format_seconds(gain.seconds),
        tostring(gain.scope or 'program'), model and (': ' .. model) or ''))
    end
  end
  return lines
end

--- :AdviseExplain — the full message and evidence of the advise findings on
--- the cursor's line in a floating window. Returns its buffer and window.
function M.explain()
  local bufnr = api.nvim_get_current_buf()
  local lnum = api.nvim_win_get_cursor(0)[1] - 1
  local lines = M.explain_lines(bufnr, lnum)
  if #lines == 0 then
    notify('no advise finding on this line')
    return nil
  end
  return vim.lsp.util.open_floating_preview(lines, 'markdown', {
    border = 'rounded',
    focus_id = 'advise-explain',
    max_width = math.max(40, math.floor(vim.o.columns * 0.8)),
    wrap = true,
  })
end

--- How many times lenses were asked for again (for tests).
function M._lens_refreshes() return state.lens_refreshes end

--- The last buffer an advise client attached to or that was entered.
function M._last_buf() return state.last_buf end

function M.create_commands()
  local cmd = api.nvim_create_user_command
  cmd('AdviseFindings', function() M.findings() end,
    { desc = 'advise: the workspace findings, ranked by cost, in the quickfix list' })
  cmd('AdviseProfile', function(args) M.profile(args.args) end,
    { nargs = '+', complete = 'shellcmd', desc = 'advise: profile a command (advise profile -- {cmd})' })
  cmd('AdviseReport', function() M.report() end, { desc = 'advise: the report of the project (advise report)' })
  cmd('AdviseFixAll', function() M.fix_all() end, { desc = "advise: apply the buffer's safe fixes" })
  cmd('AdviseExplain', function() M.explain() end,
    { desc = 'advise: the full message and evidence of the finding at the cursor' })
end

--- Sets advise up: options (see the top of this file), a FileType
--- autocommand that attaches matching buffers, the buffers already open, and
--- the commands.
function M.setup(opts)
  opts = opts or {}
  if type(opts) ~= 'table' then
    notify('setup() takes a table of options', vim.log.levels.ERROR)
    return
  end
  local cfg = vim.deepcopy(defaults)
  if opts.path then cfg.cmd = { opts.path, 'server' } end
  if opts.cmd then cfg.cmd = type(opts.cmd) == 'string' and { opts.cmd, 'server' } or opts.cmd end
  if opts.filetypes then cfg.filetypes = opts.filetypes end
  if opts.root_markers then cfg.root_markers = opts.root_markers end
  if opts.settings then cfg.settings = opts.settings end
  if opts.on_attach then cfg.on_attach = opts.on_attach end
  state.config = cfg
  state.missing_notified = false

  local group = api.nvim_create_augroup('advise', { clear = true })
  api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = cfg.filetypes,
    callback = function(args) M.attach(args.buf) end,
  })
  api.nvim_create_autocmd('BufEnter', {
    group = group,
    callback = function(args)
      if #get_clients({ name = 'advise', bufnr = args.buf }) > 0 then state.last_buf = args.buf end
    end,
  })
  M.create_commands()
  for _, bufnr in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(bufnr) then M.attach(bufnr) end
  end
end

return M
