-- End-to-end test of `advise server` with Neovim's built-in LSP client
-- (Debian 12's neovim 0.7.2; runs on later versions too).
--
--   ADVISE_BINARY=build/advise [ADVISE_SAMPLE=samples/python/benchmark_matmul.py] \
--     nvim --headless -u NONE -c "luafile tests/e2e/neovim_client.lua"
--
-- Copies the sample to a temporary folder (nothing in the repository
-- changes), starts the server with vim.lsp.start_client, attaches it to the
-- buffer, waits for the diagnostics, hovers a finding, asks for the code
-- actions of the PY002 diagnostic the way vim.lsp.buf.code_action() does,
-- resolves and applies the safe quick fix with
-- vim.lsp.util.apply_workspace_edit, checks the buffer, lets Neovim send the
-- change and waits for the new diagnostics, applies "Ignore PY003 on this
-- line", saves, and stops the client (shutdown + exit). One line per check
-- on stdout, then a PASS/FAIL line; exits with :qa! when every check passed,
-- :cquit 1 otherwise.

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
local binary = vim.fn.fnamemodify(os.getenv('ADVISE_BINARY') or (repo .. '/build/advise'), ':p')
local sample = vim.fn.fnamemodify(os.getenv('ADVISE_SAMPLE') or (repo .. '/samples/python/benchmark_matmul.py'), ':p')
local is_benchmark = vim.fn.fnamemodify(sample, ':t') == 'benchmark_matmul.py'

-- the workspace: a copy of the sample in a temporary folder
local workspace = vim.fn.tempname() .. '-advise-e2e-nvim'
vim.fn.mkdir(workspace, 'p')
local path = workspace .. '/' .. vim.fn.fnamemodify(sample, ':t')
local original = vim.fn.readfile(sample, 'b') -- binary: the last element is '' when the file ends in a newline
vim.fn.writefile(original, path, 'b')
local original_lines = vim.fn.readfile(sample)

local client_id, exit_code, exit_signal

-- LSP diagnostics of the buffer, as vim.lsp.buf.code_action() builds its context
local function lsp_diagnostics(bufnr, lnum)
  return vim.lsp.diagnostic.get_line_diagnostics(bufnr, lnum, {}, client_id)
end
local function codes(bufnr)
  local list = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(list, string.format('%s@%d:%d', tostring(d.code), d.lnum, d.col))
  end
  table.sort(list)
  return table.concat(list, ' ')
end
-- every one of `list` is among the diagnostics (other rules may add findings)
local function includes(bufnr, list)
  local have = ' ' .. codes(bufnr) .. ' '
  for _, c in ipairs(list) do
    if not have:find(' ' .. c .. ' ', 1, true) then return false end
  end
  return true
end
local function has_code(bufnr, code)
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.code == code then return d end
  end
  return nil
end

local function request(bufnr, method, params)
  local results, err = vim.lsp.buf_request_sync(bufnr, method, params, WAIT_MS)
  if not results then return nil, err or 'no answer' end
  local r = results[client_id]
  if not r then return nil, 'no answer from the advise client' end
  if r.error or r.err then return nil, show(r.error or r.err) end
  return r.result
end

-- the code actions for one LSP diagnostic; resolves the edit as
-- vim.lsp.buf.code_action() does when the server has resolveProvider
local function code_actions(bufnr, diagnostic)
  return request(bufnr, 'textDocument/codeAction', {
    textDocument = vim.lsp.util.make_text_document_params(bufnr),
    range = diagnostic.range,
    context = { diagnostics = { diagnostic } },
  })
end
local function resolve(bufnr, action)
  if action.edit then return action end
  local client = vim.lsp.get_client_by_id(client_id)
  local r = client.request_sync('codeAction/resolve', action, WAIT_MS, bufnr)
  if not r or r.err then return nil end
  return r.result
end
local function apply(action)
  local client = vim.lsp.get_client_by_id(client_id)
  -- 0.7: apply_workspace_edit(workspace_edit, offset_encoding)
  vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding or 'utf-16')
end
local function buffer_text(bufnr) return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, true), '\n') end

local function run()
  require_(vim.fn.executable(binary) == 1, 'the server binary is executable: ' .. binary)
  client_id = vim.lsp.start_client({
    name = 'advise',
    cmd = { binary, 'server' },
    root_dir = workspace,
    on_exit = function(code, signal) exit_code, exit_signal = code, signal end,
  })
  require_(client_id ~= nil, 'vim.lsp.start_client starts the server')

  vim.cmd('edit ' .. vim.fn.fnameescape(path))
  local bufnr = vim.api.nvim_get_current_buf()
  vim.bo[bufnr].filetype = 'python' -- -u NONE: no filetype detection; the languageId comes from it
  require_(vim.lsp.buf_attach_client(bufnr, client_id), 'vim.lsp.buf_attach_client attaches the buffer')

  local ok = vim.wait(WAIT_MS, function() return has_code(bufnr, 'PY002') ~= nil end, 20)
  require_(ok, 'diagnostics arrive (PY002 among them)', codes(bufnr))
  local client = vim.lsp.get_client_by_id(client_id)
  check(client.offset_encoding == 'utf-16', 'offset encoding utf-16', client.offset_encoding)
  if is_benchmark then
    check(includes(bufnr, { 'PY002@61:14', 'PY003@102:16', 'PY004@92:12', 'PY004@93:12' }),
      'diagnostics include PY002 at line 62, PY004 at 93 and 94, PY003 at 103', codes(bufnr))
  end
  local all_advise = true
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    all_advise = all_advise and d.source == 'advise'
  end
  check(all_advise, 'every diagnostic has source "advise"')

  local py2 = has_code(bufnr, 'PY002')
  check(py2.severity == vim.diagnostic.severity.WARN, 'PY002 is a warning', py2.severity)
  local hover = request(bufnr, 'textDocument/hover', {
    textDocument = vim.lsp.util.make_text_document_params(bufnr),
    position = { line = py2.lnum, character = py2.col + 2 },
  })
  check(type(hover) == 'table' and type(hover.contents) == 'table' and hover.contents.kind == 'markdown'
    and hover.contents.value:find('PY002', 1, true) ~= nil,
    'hover on PY002: markdown naming the rule', show(hover))

  -- PY002: the safe quick fix
  local lsp_py2
  for _, d in ipairs(lsp_diagnostics(bufnr, py2.lnum)) do
    if d.code == 'PY002' then lsp_py2 = d end
  end
  require_(lsp_py2 and lsp_py2.data, 'the LSP diagnostic keeps its data', show(lsp_py2))
  local actions, err = code_actions(bufnr, lsp_py2)
  require_(type(actions) == 'table' and #actions > 0, 'code actions for PY002', err or show(actions))
  local fix
  for _, a in ipairs(actions) do
    if a.kind == 'quickfix' and a.isPreferred and not a.title:find('^Ignore') then fix = a end
  end
  require_(fix, 'a preferred quick fix for PY002', show(actions))
  fix = resolve(bufnr, fix)
  require_(fix and fix.edit, 'the quick fix resolves to an edit', show(fix))
  check(fix.edit.changes ~= nil and fix.edit.documentChanges == nil,
    'a client without documentChanges support gets `changes`', show(fix.edit))
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  apply(fix)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, true)
  check(vim.api.nvim_buf_get_changedtick(bufnr) > tick, 'the buffer changed')
  check(#lines == #original_lines + 2 and lines[61] == '        c = a @ b' and lines[62] == '    if torch.cuda.is_available():'
    and lines[63] == '        torch.cuda.synchronize()' and lines[64] == '    elapsed = time.perf_counter() - t0',
    'torch.cuda.synchronize() inserted after the timed loop, before the clock read (lines 62-63)',
    table.concat(vim.list_slice(lines, 59, 66), '\n'))
  -- the server sees the change through Neovim's own didChange
  ok = vim.wait(WAIT_MS, function() return has_code(bufnr, 'PY002') == nil and has_code(bufnr, 'PY003') ~= nil end, 20)
  check(ok, 'after the change: PY002 gone, PY003 still there', codes(bufnr))
  if is_benchmark then
    check(includes(bufnr, { 'PY003@104:16', 'PY004@94:12', 'PY004@95:12' }),
      'after the change: the findings moved down two lines', codes(bufnr))
  end

  -- PY003: "Ignore PY003 on this line"
  local py3 = has_code(bufnr, 'PY003')
  require_(py3, 'PY003 is published', codes(bufnr))
  local lsp_py3
  for _, d in ipairs(lsp_diagnostics(bufnr, py3.lnum)) do
    if d.code == 'PY003' then lsp_py3 = d end
  end
  require_(lsp_py3, 'the PY003 LSP diagnostic', show(lsp_diagnostics(bufnr, py3.lnum)))
  actions, err = code_actions(bufnr, lsp_py3)
  local ignore
  for _, a in ipairs(actions or {}) do
    if a.title == 'Ignore PY003 on this line' then ignore = a end
  end
  require_(ignore, 'an "Ignore PY003 on this line" action', err or show(actions))
  ignore = resolve(bufnr, ignore)
  require_(ignore and ignore.edit, 'the ignore action has an edit', show(ignore))
  apply(ignore)
  local line = vim.api.nvim_buf_get_lines(bufnr, py3.lnum, py3.lnum + 1, true)[1]
  check(line == '                torch.cuda.synchronize()  # advise: ignore[PY003]',
    'the ignore comment is appended to the line', line)
  ok = vim.wait(WAIT_MS, function() return has_code(bufnr, 'PY003') == nil end, 20)
  check(ok, 'after the ignore comment: PY003 gone', codes(bufnr))

  -- save (didSave), then stop: shutdown + exit
  vim.cmd('silent write')
  check(table.concat(vim.fn.readfile(path, 'b'), '\n') == buffer_text(bufnr) .. '\n', 'the saved copy has the edits')
  vim.lsp.stop_client(client_id)
  ok = vim.wait(WAIT_MS, function() return exit_code ~= nil end, 20)
  check(ok and exit_code == 0 and (exit_signal == 0 or exit_signal == nil),
    'the server exits with status 0 after shutdown and exit', string.format('code %s, signal %s', exit_code, exit_signal))
  check(table.concat(vim.fn.readfile(sample, 'b'), '\n') == table.concat(original, '\n'), 'the repository sample is untouched')
end

local ok, e = xpcall(run, function(e)
  if e == Abort then return e end
  return debug.traceback(tostring(e), 2)
end)
if not ok and e ~= Abort then check(false, 'the test ran without a Lua error', e) end
if client_id and exit_code == nil then vim.lsp.stop_client(client_id, true) end
vim.fn.delete(workspace, 'rf')
local success = failed == 0 and passed > 0
out(string.format('%s: neovim %s client against %s', success and 'PASS' or 'FAIL', tostring(vim.version and
  (vim.version().major .. '.' .. vim.version().minor .. '.' .. vim.version().patch) or '?'), binary))
out(string.format('neovim-client: %d passed, %d failed', passed, failed))
if success then vim.cmd('qa!') else vim.cmd('cquit 1') end
