-- End-to-end test of the Neovim plugin (editors/nvim) on Debian 12's neovim
-- 0.7.2 (runs on later versions too):
--
--   PATH=$(dirname ADVISE_BINARY):$PATH \
--     nvim --headless -u NONE -i NONE -n -c "luafile tests/e2e/neovim_plugin.lua"
--
-- The `advise` on PATH is the one under test (ADVISE_BINARY only tells the
-- test which one it should be). A workspace laid out as the repository is made
-- in a temporary folder (.git, samples/python/benchmark_matmul.py and
-- generate_text.py copied; nothing in the repository changes). Then:
-- a buffer opened before setup() and one opened after it get one client
-- (root found by the .git marker) with zero options; diagnostics arrive; the
-- sample's H200 profile arrives mid-session and the server's
-- workspace/codeLens/refresh brings code lenses; advise/profileChanged asks
-- for them again; :AdviseFindings fills the quickfix list ranked by cost;
-- a quick fix (textDocument/codeAction) applies; :AdviseFixAll applies the
-- safe fixes through workspace/applyEdit; :AdviseExplain opens a float with
-- the evidence; :AdviseReport shows `advise report`; :AdviseProfile runs in a
-- terminal; :checkhealth advise reports the binary; a missing binary gives one
-- error message and no Lua error. One line per check, then a PASS/FAIL line;
-- :qa! when every check passed, :cquit 1 otherwise.

local WAIT_MS = tonumber(os.getenv('ADVISE_E2E_TIMEOUT_MS') or '') or 10000

local passed, failed = 0, 0
local function out(s) io.stdout:write(s .. '\n') io.stdout:flush() end
local function check(ok, what, detail)
  if ok then
    passed = passed + 1
    out('ok - ' .. what)
  else
    failed = failed + 1
    out('not ok - ' .. what .. (detail ~= nil and ('\n    ' .. tostring(detail):gsub('\n', '\n    ')) or ''))
  end
  return ok
end
local Abort = {}
local function require_(ok, what, detail)
  if not check(ok, what, detail) then error(Abort, 0) end
end
local function show(v) return vim.inspect(v):sub(1, 2000) end

local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
local repo = vim.fn.fnamemodify(here .. '/../..', ':p'):gsub('/$', '')
local plugin = repo .. '/editors/nvim'
local expected_binary = os.getenv('ADVISE_BINARY') and vim.fn.fnamemodify(os.getenv('ADVISE_BINARY'), ':p') or nil

-- messages given to vim.notify (the plugin's errors go there)
local notes = {}
local real_notify = vim.notify
vim.notify = function(msg, level, opts)
  table.insert(notes, { msg = msg, level = level })
  return real_notify(msg, level, opts)
end

-- the workspace: the repository's layout, copied
local workspace = vim.fn.tempname() .. '-advise-e2e-nvim-plugin'
local root = workspace .. '/project'
vim.fn.mkdir(root .. '/.git', 'p')
vim.fn.mkdir(root .. '/samples/python', 'p')
local function copy(from, to) vim.fn.writefile(vim.fn.readfile(from, 'b'), to, 'b') end
local bench = root .. '/samples/python/benchmark_matmul.py'
local gen = root .. '/samples/python/generate_text.py'
copy(repo .. '/samples/python/benchmark_matmul.py', bench)
copy(repo .. '/samples/python/generate_text.py', gen)
local original_bench = vim.fn.readfile(bench)
local repo_samples = {}
for _, f in ipairs({ 'benchmark_matmul.py', 'generate_text.py' }) do
  repo_samples[f] = table.concat(vim.fn.readfile(repo .. '/samples/python/' .. f, 'b'), '\n')
end

local advise, client

local function wait(pred, ms) return vim.wait(ms or WAIT_MS, pred, 20) end
local function has_code(bufnr, code)
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.code == code then return d end
  end
  return nil
end
local function codes(bufnr)
  local list = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do table.insert(list, tostring(d.code) .. '@' .. d.lnum) end
  return table.concat(list, ' ')
end
local function advise_clients()
  local list = {}
  for _, c in ipairs((vim.lsp.get_clients or vim.lsp.get_active_clients)()) do
    if c.name == 'advise' then table.insert(list, c) end
  end
  return list
end
local function request(bufnr, method, params)
  local results, err = vim.lsp.buf_request_sync(bufnr, method, params, WAIT_MS)
  if not results then return nil, err or 'no answer' end
  local r = results[client.id]
  if not r then return nil, 'no answer from the advise client' end
  if r.error or r.err then return nil, show(r.error or r.err) end
  return r.result
end
local function buf_lines(bufnr) return vim.api.nvim_buf_get_lines(bufnr, 0, -1, true) end
local function find_buf(pred)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_valid(b) and pred(b) then return b end
  end
  return nil
end

local function run()
  require_(vim.fn.executable('advise') == 1, 'advise is on PATH: ' .. vim.fn.exepath('advise'))
  if expected_binary then
    check(vim.fn.resolve(vim.fn.exepath('advise')) == vim.fn.resolve(expected_binary),
      'the advise on PATH is the binary under test', vim.fn.exepath('advise'))
  end
  vim.opt.runtimepath:prepend(plugin)
  vim.cmd('filetype on')

  -- a buffer open before setup(), one opened after it
  vim.cmd('edit ' .. vim.fn.fnameescape(bench))
  local b1 = vim.api.nvim_get_current_buf()
  check(vim.bo[b1].filetype == 'python', 'the sample is a python buffer', vim.bo[b1].filetype)
  advise = require('advise')
  advise.setup({})
  local ok = wait(function() return has_code(b1, 'PY002') ~= nil and has_code(b1, 'PY003') ~= nil end)
  require_(ok, 'setup({}): diagnostics arrive in the buffer opened before setup (PY002, PY003)', codes(b1))
  local clients = advise_clients()
  require_(#clients == 1, 'one advise client', #clients)
  client = clients[1]
  check(client.config.root_dir == root, 'its root is the folder holding .git', client.config.root_dir)
  check(vim.deep_equal(client.config.cmd, { 'advise', 'server' }), 'it runs `advise server` from PATH', show(client.config.cmd))
  local all_advise = true
  for _, d in ipairs(vim.diagnostic.get(b1)) do all_advise = all_advise and d.source == 'advise' end
  check(all_advise, 'every diagnostic has source "advise"')

  vim.cmd('edit ' .. vim.fn.fnameescape(gen))
  local b2 = vim.api.nvim_get_current_buf()
  ok = wait(function() return #vim.diagnostic.get(b2) > 0 end)
  check(ok, 'a buffer opened after setup (FileType) gets diagnostics too', codes(b2))
  check(#advise_clients() == 1 and client.attached_buffers[b2] and client.attached_buffers[b1],
    'the second buffer of the root reuses the client', #advise_clients())
  vim.cmd('buffer ' .. b1)

  -- the profile arrives: workspace/codeLens/refresh brings the lenses
  local lenses0 = vim.lsp.codelens.get(b1)
  check(#lenses0 == 0, 'no code lenses before any profile', show(lenses0))
  local refreshes = advise._lens_refreshes()
  -- count the server's workspace/codeLens/refresh requests (Neovim 0.7 has no
  -- handler of its own: the plugin's answers them)
  local server_refreshes = 0
  local h = client.config.handlers or {}
  local lens_handler = h['workspace/codeLens/refresh']
  if lens_handler then
    h['workspace/codeLens/refresh'] = function(...)
      server_refreshes = server_refreshes + 1
      return lens_handler(...)
    end
  end
  local folder = root .. '/.advise/profiles'
  vim.fn.mkdir(folder, 'p')
  copy(repo .. '/samples/profiles/benchmark_matmul.json', folder .. '/benchmark_matmul.json.part')
  vim.loop.fs_rename(folder .. '/benchmark_matmul.json.part', folder .. '/benchmark_matmul.json')
  ok = wait(function() return #vim.lsp.codelens.get(b1) > 0 end)
  local titles = {}
  for _, l in ipairs(vim.lsp.codelens.get(b1)) do table.insert(titles, l.command and l.command.title or '?') end
  check(ok and advise._lens_refreshes() > refreshes, 'after the profile arrives: code lenses (asked again on the refresh)',
    show(titles))
  check(table.concat(titles, '\n'):find('GPU', 1, true) ~= nil, 'a lens names the GPU time', show(titles))
  if lens_handler then
    check(wait(function() return server_refreshes > 0 end), "the server's workspace/codeLens/refresh is answered by the plugin")
  end
  local ns = vim.api.nvim_get_namespaces()['vim_lsp_codelens:' .. client.id]
  if ns then
    check(#vim.api.nvim_buf_get_extmarks(b1, ns, 0, -1, {}) > 0, 'the lenses are displayed (virtual text)')
  end
  ok = wait(function()
    local d = has_code(b1, 'PY003')
    return d and d.message:find('measured:', 1, true) ~= nil
  end)
  check(ok, 'the diagnostics carry the measured figures', show(has_code(b1, 'PY003')))

  -- advise/profileChanged: the handler is registered and asks for lenses again
  check(type(client.config.handlers) == 'table' and client.config.handlers['advise/profileChanged'] ~= nil,
    'the client handles advise/profileChanged')
  refreshes = advise._lens_refreshes()
  client.config.handlers['advise/profileChanged'](nil, { profiles = { folder .. '/benchmark_matmul.json' } },
    { client_id = client.id, method = 'advise/profileChanged' })
  ok = wait(function() return advise._lens_refreshes() >= refreshes + 2 end)
  check(ok, 'advise/profileChanged refreshes the lenses of both buffers', advise._lens_refreshes() - refreshes)

  -- :AdviseFindings: the quickfix list, ranked by cost
  local ranked
  vim.fn.setqflist({}, 'r', { title = 'none', items = {} })
  advise.findings(function(items) ranked = items end)
  ok = wait(function() return ranked ~= nil end)
  require_(ok and #ranked > 0, ':AdviseFindings answers with findings', show(ranked))
  local qf = vim.fn.getqflist({ title = 1, items = 1 })
  check(qf.title:find('advise', 1, true) ~= nil and #qf.items == #ranked, 'the quickfix list holds them',
    show({ title = qf.title, n = #qf.items }))
  local nonincreasing = true
  for i = 2, #ranked do
    nonincreasing = nonincreasing and ranked[i].cost_seconds <= ranked[i - 1].cost_seconds
  end
  local costs = {}
  for _, it in ipairs(ranked) do table.insert(costs, it.cost_seconds) end
  check(nonincreasing and ranked[1].cost_seconds > 0, 'ranked by cost (non-increasing, the first one measured)', show(costs))
  local first = qf.items[1]
  check(first and vim.api.nvim_buf_get_name(first.bufnr) == bench and first.text:match('^P[YR]%d%d%d .+ %(%a+ [%d.]+ [µm]?s%)$'),
    'each entry reads "CODE message (gain/cost)" at its file and line', show(first))
  local texts = {}
  for i = 1, math.min(5, #qf.items) do table.insert(texts, qf.items[i].text) end
  out('    top: ' .. table.concat(texts, '\n         '))
  local qfwin = false
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.fn.getwininfo(w)[1].quickfix == 1 then qfwin = true end
  end
  check(qfwin, 'the quickfix window is open')
  vim.cmd('cclose')
  vim.cmd('buffer ' .. b1)

  -- :AdviseExplain: the float with the message and the evidence
  local py3 = has_code(b1, 'PY003')
  vim.api.nvim_win_set_cursor(0, { py3.lnum + 1, py3.col })
  local fbuf, fwin = advise.explain()
  local ftext = fbuf and table.concat(buf_lines(fbuf), '\n') or ''
  check(fwin and vim.api.nvim_win_is_valid(fwin) and vim.api.nvim_win_get_config(fwin).relative ~= ''
    and ftext:find('PY003', 1, true) and ftext:find('Evidence:', 1, true) and ftext:find('ran 15 times', 1, true),
    ':AdviseExplain opens a float with the full message and the evidence', ftext:sub(1, 800))
  if fwin and vim.api.nvim_win_is_valid(fwin) then vim.api.nvim_win_close(fwin, true) end

  -- a code action: PY002's quick fix, applied to the copy
  local py2 = has_code(b1, 'PY002')
  local lsp_py2
  for _, d in ipairs(vim.lsp.diagnostic.get_line_diagnostics(b1, py2.lnum, {}, client.id)) do
    if d.code == 'PY002' then lsp_py2 = d end
  end
  require_(lsp_py2, 'the PY002 LSP diagnostic')
  local actions, err = request(b1, 'textDocument/codeAction', {
    textDocument = vim.lsp.util.make_text_document_params(b1),
    range = lsp_py2.range,
    context = { diagnostics = { lsp_py2 } },
  })
  local fix
  for _, a in ipairs(actions or {}) do
    if a.kind == 'quickfix' and a.isPreferred and not a.title:find('^Ignore') then fix = a end
  end
  require_(fix, 'textDocument/codeAction offers a preferred quick fix for PY002', err or show(actions))
  if not fix.edit then
    local r = vim.lsp.buf_request_sync(b1, 'codeAction/resolve', fix, WAIT_MS)
    fix = r and r[client.id] and r[client.id].result or fix
  end
  require_(fix.edit, 'the quick fix has an edit', show(fix))
  vim.lsp.util.apply_workspace_edit(fix.edit, client.offset_encoding or 'utf-16')
  local lines = buf_lines(b1)
  check(#lines == #original_bench + 2 and lines[62] == '    if torch.cuda.is_available():'
    and lines[63] == '        torch.cuda.synchronize()' and lines[64] == '    elapsed = time.perf_counter() - t0',
    'the quick fix inserts torch.cuda.synchronize() before the clock read',
    table.concat(vim.list_slice(lines, 59, 66), '\n'))
  ok = wait(function() return has_code(b1, 'PY002') == nil end)
  check(ok, 'after the edit the server drops PY002', codes(b1))

  -- :AdviseFixAll on the second buffer: workspace/applyEdit from the server
  vim.cmd('buffer ' .. b2)
  local before = table.concat(buf_lines(b2), '\n')
  check(before:find('caches = torch.zeros(shape).to(prompt.device)', 1, true) ~= nil, 'generate_text.py as copied')
  vim.cmd('AdviseFixAll')
  ok = wait(function()
    return table.concat(buf_lines(b2), '\n'):find('caches = torch.zeros(shape, device=prompt.device)', 1, true) ~= nil
  end)
  check(ok, ':AdviseFixAll applies the safe fix (torch.zeros(shape, device=...))',
    table.concat(vim.list_slice(buf_lines(b2), 105, 108), '\n'))

  -- :AdviseReport: `advise report` of the root in a scratch buffer
  vim.cmd('buffer ' .. b1)
  local report_buf
  advise.report(function(b) report_buf = b or -1 end)
  ok = wait(function() return report_buf ~= nil end, 30000)
  local rtext = (report_buf and report_buf > 0) and table.concat(buf_lines(report_buf), '\n') or ''
  check(ok and report_buf > 0 and vim.bo[report_buf].buftype == 'nofile' and rtext:find('PY003', 1, true) ~= nil,
    ':AdviseReport shows the report in a scratch buffer', rtext:sub(1, 600))
  if report_buf and report_buf > 0 then vim.cmd('bwipeout! ' .. report_buf) end

  -- :AdviseProfile: `advise profile -- CMD` in a terminal, then the lenses again
  vim.cmd('buffer ' .. b1)
  refreshes = advise._lens_refreshes()
  vim.cmd('AdviseProfile echo advise-profile-ran-here')
  local term = vim.api.nvim_get_current_buf()
  check(vim.bo[term].buftype == 'terminal', ':AdviseProfile opens a terminal split', vim.bo[term].buftype)
  ok = wait(function()
    return table.concat(buf_lines(term), '\n'):find('advise-profile-ran-here', 1, true) ~= nil
      and advise._lens_refreshes() > refreshes
  end, 20000)
  check(ok, 'the command runs under advise profile in the root, and the lenses are asked again after it',
    table.concat(buf_lines(term), '\n'):sub(1, 600))
  vim.cmd('bwipeout! ' .. term)

  -- :checkhealth advise
  vim.cmd('buffer ' .. b1)
  local hok, herr = pcall(vim.cmd, 'checkhealth advise')
  local hbuf = find_buf(function(b) return vim.bo[b].filetype == 'checkhealth' end)
  local htext = hbuf and table.concat(buf_lines(hbuf), '\n') or ''
  out('    ' .. htext:gsub('\n', '\n    '))
  check(hok and hbuf and not htext:find('ERROR', 1, true) and not htext:find('Failed to run', 1, true),
    ':checkhealth advise runs without error', herr or htext)
  check(htext:find('advise binary: ' .. vim.fn.exepath('advise'), 1, true) and htext:find('version: advise ', 1, true),
    ':checkhealth advise reports the binary and its version', htext)
  check(htext:find('root of', 1, true) and htext:find(root, 1, true) and htext:find('1 profile in ' .. folder, 1, true),
    ':checkhealth advise reports the root and its profile', htext)
  if hbuf then vim.cmd('bwipeout! ' .. hbuf) end

  -- a missing binary: one clear error, no Lua error
  for _, c in ipairs(advise_clients()) do vim.lsp.stop_client(c.id) end
  wait(function() return #advise_clients() == 0 end)
  notes = {}
  local sok, serr = pcall(advise.setup, { path = workspace .. '/no-such/advise' })
  vim.cmd('silent! edit! ' .. vim.fn.fnameescape(workspace .. '/other.py'))
  vim.cmd('silent! edit! ' .. vim.fn.fnameescape(workspace .. '/other2.py'))
  local errors = {}
  for _, n in ipairs(notes) do
    if n.level == vim.log.levels.ERROR then table.insert(errors, n.msg) end
  end
  check(sok and #errors == 1 and errors[1]:find('not found', 1, true) ~= nil and #advise_clients() == 0,
    'a missing binary: one error message, no client, no Lua error', serr or show(notes))
end

local ok, e = xpcall(run, function(e)
  if e == Abort then return e end
  return debug.traceback(tostring(e), 2)
end)
if not ok and e ~= Abort then check(false, 'the test ran without a Lua error', e) end
for _, c in ipairs(advise_clients()) do vim.lsp.stop_client(c.id, true) end
for f, text in pairs(repo_samples) do
  check(table.concat(vim.fn.readfile(repo .. '/samples/python/' .. f, 'b'), '\n') == text,
    'the repository sample ' .. f .. ' is untouched')
end
vim.fn.delete(workspace, 'rf')
local success = failed == 0 and passed > 0
local v = vim.version()
out(string.format('%s: neovim %d.%d.%d plugin (editors/nvim) against %s', success and 'PASS' or 'FAIL',
  v.major, v.minor, v.patch, vim.fn.exepath('advise')))
out(string.format('neovim-plugin: %d passed, %d failed', passed, failed))
if success then vim.cmd('qa!') else vim.cmd('cquit 1') end
