// Benchmark: edit-to-diagnostics latency and peak memory of advise's LSP
// server, side by side with pyright's, on the same scripted edit session.
// A program that prints figures, not a test: see bench/README.md.
//
//   cd bench && npm ci && node lsp_latency.mjs [options]
//
// options:
//   --advise PATH      advise binary (default: ../build/advise from this folder)
//   --pyright PATH     pyright's langserver script (default: node_modules/pyright/langserver.index.js)
//   --servers LIST     advise,pyright (default both)
//   --file PATH        a Python file to edit (repeatable; default: the stdlib's _pydecimal.py,
//                      a generated PyTorch-dense module of 6,000+ lines, and a 50-line
//                      training script repeated 120 times)
//   --edits N          edits per session (default 240, at least 200 for the figures the goal names)
//   --timeout S        seconds to wait for the diagnostics of one edit (default 30)
//   --seed N           seed of the edit script (default 7)
//   --json PATH        also write every measurement as JSON
//   --trace            print every publishDiagnostics as it arrives
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { generateTorchFile, mulberry32 } from './gen_torch_file.mjs';
import { generateRepeatedScript } from './gen_repeated_script.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..');

// ---------------------------------------------------------------- options
function parseArgs(argv) {
    const o = {
        advise: path.join(REPO, 'build', 'advise'),
        pyright: path.join(HERE, 'node_modules', 'pyright', 'langserver.index.js'),
        servers: ['advise', 'pyright'],
        files: [],
        edits: 240,
        timeout: 30,
        seed: 7,
        json: null,
        trace: false,
    };
    for (let i = 2; i < argv.length; i++) {
        const a = argv[i], next = () => {
            if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
            return argv[++i];
        };
        if (a === '--advise') o.advise = path.resolve(next());
        else if (a === '--pyright') o.pyright = path.resolve(next());
        else if (a === '--servers') o.servers = next().split(',').filter(Boolean);
        else if (a === '--file') o.files.push(path.resolve(next()));
        else if (a === '--edits') o.edits = Number(next());
        else if (a === '--timeout') o.timeout = Number(next());
        else if (a === '--seed') o.seed = Number(next());
        else if (a === '--json') o.json = path.resolve(next());
        else if (a === '--trace') o.trace = true;
        else if (a === '-h' || a === '--help') {
            const head = fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n');
            console.log(head.slice(0, head.findIndex((l) => l.startsWith('import'))).map((l) => l.replace(/^\/\/ ?/, '')).join('\n'));
            process.exit(0);
        } else throw new Error(`unknown option ${a} (--help lists them)`);
    }
    for (const s of o.servers) if (s !== 'advise' && s !== 'pyright') throw new Error(`unknown server ${s}`);
    if (!(o.edits > 0) || !(o.timeout > 0)) throw new Error('--edits and --timeout take positive numbers');
    return o;
}

// ---------------------------------------------------------------- the machine
function cpuModel() {
    try {
        const m = fs.readFileSync('/proc/cpuinfo', 'utf8').match(/^model name\s*:\s*(.*)$/m);
        if (m) return m[1].trim();
    } catch {}
    return os.cpus()[0]?.model ?? 'unknown';
}

function versionOf(cmd, args) {
    const r = spawnSync(cmd, args, { encoding: 'utf8' });
    return r.status === 0 ? r.stdout.trim() : null;
}

// ---------------------------------------------------------------- the files
function stdlibDecimal() {
    const r = spawnSync('python3', ['-c', 'import sysconfig;print(sysconfig.get_paths()["stdlib"])'], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error('python3 is needed to find the standard library (and to plan the edits)');
    const p = path.join(r.stdout.trim(), '_pydecimal.py');
    if (!fs.existsSync(p)) throw new Error(`${p} not found`);
    return p;
}

// Statements inside function bodies that start their line and end theirs
// (nothing but a comment after them), on ASCII lines: where the script types.
const PLAN_PY = String.raw`
import ast, json, sys
src = sys.stdin.read()
lines = src.split("\n")
tree = ast.parse(src)
out = []
def visit(node, in_function):
    for child in ast.iter_child_nodes(node):
        fn = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
        if in_function and isinstance(child, ast.stmt) and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first, last = child.lineno - 1, child.end_lineno - 1
            text, tail = lines[first], lines[last][child.end_col_offset:]
            simple = not hasattr(child, "body")
            if (simple and text.isascii() and lines[last].isascii() and len(text) - len(text.lstrip(" ")) == child.col_offset
                    and (tail.strip() == "" or tail.strip().startswith("#"))):
                names = sorted({(n.col_offset, len(n.id)) for n in ast.walk(child)
                                if isinstance(n, ast.Name) and n.lineno == child.lineno and n.end_lineno == child.lineno})
                out.append({"line": first, "end": last, "indent": child.col_offset,
                            "endCol": len(lines[last]), "names": names})
        visit(child, in_function or fn)
visit(tree, False)
print(json.dumps(out))
`;

const TYPED = {
    generic: [
        'result = self._fix(context)',
        'digits = len(str(self._int))',
        'if context is None: context = getcontext()',
        'exp = min(self._exp, other._exp)',
        'ans = _dec_from_triple(0, "1", exp)',
        'n = max(len(self._int), prec) + 2',
        'assert isinstance(other, Decimal)',
        'rounding = context._set_rounding(ROUND_HALF_EVEN)',
        'coeff = int(self._int) * 10 ** shift',
        'return self._round(places, rounding)',
    ],
    torch: [
        'torch.cuda.synchronize()',
        'buf = torch.zeros(3, 4).cuda()',
        'running_loss += loss.item()',
        'torch.cuda.empty_cache()',
        'x = x.to(device, non_blocking=True)',
        'stats = model.state_dict()',
        'mask = torch.ones(8, 8, device=device)',
        'print(f"step {step} loss {loss:.4f}")',
        'scale = 1.0 / math.sqrt(x.size(-1))',
        'out = F.layer_norm(out, out.shape[-1:])',
    ],
};

const PASTE = {
    generic: ['# TODO: check the rounding here', 'tmp = None', 'del tmp'],
    torch: ['# keep a copy for debugging', 'debug_copy = torch.empty(16, 16).cuda()', 'del debug_copy'],
};

// The scripted session: at places spread over the file, visited in a shuffled
// order, a person (1) puts the cursor after a name in a statement, types "_2"
// and deletes it again; at every other place (2) presses Enter at the end of
// the statement and types a new one character by character, fixing a typo on
// the way; at the places in between, now and then, (3) pastes a three-line
// block and undoes the paste. Each keystroke, paste or undo is one incremental
// didChange. The script ends with the first place that brings it to `count`
// edits (so it may hold a few more), leaving no half-typed statement behind.
export function planEdits(text, count, seed, flavour) {
    const r = spawnSync('python3', ['-c', PLAN_PY], { input: text, encoding: 'utf8', maxBuffer: 1 << 28 });
    if (r.status !== 0) throw new Error(`planning the edits failed: ${r.stderr}`);
    const candidates = JSON.parse(r.stdout).filter((c) => c.names.length > 0);
    const rnd = mulberry32(seed);
    const typed = TYPED[flavour], paste = PASTE[flavour];
    // one statement from each of spotCount equal slices of the file, in a shuffled order
    const spotCount = Math.max(16, Math.ceil(count / 10));
    if (candidates.length < spotCount) throw new Error(`too few statements in function bodies to edit (${candidates.length})`);
    const spots = [];
    for (let i = 0; i < spotCount; i++) {
        const lo = Math.floor((i * candidates.length) / spotCount), hi = Math.floor(((i + 1) * candidates.length) / spotCount);
        spots.push(candidates[lo + Math.floor(rnd() * (hi - lo))]);
    }
    for (let i = spots.length - 1; i > 0; i--) {
        const j = Math.floor(rnd() * (i + 1));
        [spots[i], spots[j]] = [spots[j], spots[i]];
    }
    const inserted = []; // [original line after which, line count] of the places done
    const shift = (line) => inserted.reduce((n, [after, k]) => n + (after < line ? k : 0), 0);
    const edits = [];
    const pos = (line, character) => ({ line, character });
    const insert = (line, character, t) => edits.push({ range: { start: pos(line, character), end: pos(line, character) }, text: t });
    const remove = (l1, c1, l2, c2) => edits.push({ range: { start: pos(l1, c1), end: pos(l2, c2) }, text: '' });
    for (let s = 0; edits.length < count; s++) {
        if (s === spots.length) throw new Error('the edit script ran out of places');
        const spot = spots[s], line = spot.line + shift(spot.line), end = spot.end + shift(spot.line);
        // (1) rename a name for a moment
        const [col, len] = spot.names[Math.floor(rnd() * spot.names.length)];
        insert(line, col + len, '_');
        insert(line, col + len + 1, '2');
        remove(line, col + len + 1, line, col + len + 2);
        remove(line, col + len, line, col + len + 1);
        if (s % 2 === 0) {
            // (2) Enter, then a new statement typed key by key, with a typo fixed
            insert(end, spot.endCol, '\n' + ' '.repeat(spot.indent));
            const stmt = typed[Math.floor(rnd() * typed.length)];
            const typo = 2 + Math.floor(rnd() * (stmt.length - 3));
            let c = spot.indent;
            for (let i = 0; i < stmt.length; i++) {
                if (i === typo) {
                    insert(end + 1, c, 'x');
                    remove(end + 1, c, end + 1, c + 1);
                }
                insert(end + 1, c++, stmt[i]);
            }
            inserted.push([spot.end, 1]);
        } else if (s % 4 === 1) {
            // (3) paste a block below the statement, then undo the paste
            const block = paste.map((l) => '\n' + ' '.repeat(spot.indent) + l).join('');
            insert(end, spot.endCol, block);
            remove(end, spot.endCol, end + paste.length, spot.indent + paste[paste.length - 1].length);
        }
    }
    return edits;
}

export function applyChange(lines, change) {
    const { start, end } = change.range;
    const head = lines[start.line].slice(0, start.character), tail = lines[end.line].slice(end.character);
    const middle = (head + change.text + tail).split('\n');
    lines.splice(start.line, end.line - start.line + 1, ...middle);
}

// ---------------------------------------------------------------- statistics
function percentile(sorted, p) {
    if (!sorted.length) return NaN;
    const rank = Math.ceil((p / 100) * sorted.length) - 1; // nearest rank
    return sorted[Math.min(sorted.length - 1, Math.max(0, rank))];
}

function summarise(latencies) {
    const done = latencies.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
    const all = latencies.map((x) => (Number.isFinite(x) ? x : Infinity)).sort((a, b) => a - b);
    return {
        count: latencies.length,
        timeouts: latencies.length - done.length,
        p50: percentile(all, 50),
        p95: percentile(all, 95),
        max: all.length ? all[all.length - 1] : NaN,
        mean: done.length ? done.reduce((a, b) => a + b, 0) / done.length : NaN,
        min: done.length ? done[0] : NaN,
    };
}

// ---------------------------------------------------------------- memory
function procStatus(pid) {
    try {
        const t = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
        const kb = (k) => Number((t.match(new RegExp(`^${k}:\\s*(\\d+) kB`, 'm')) || [])[1] || 0);
        return { hwm: kb('VmHWM'), rss: kb('VmRSS') };
    } catch {
        return null;
    }
}

function descendants(pid) {
    const out = [];
    let tasks = [];
    try {
        tasks = fs.readdirSync(`/proc/${pid}/task`);
    } catch {
        return out;
    }
    for (const tid of tasks) {
        let kids = '';
        try {
            kids = fs.readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8');
        } catch {}
        for (const k of kids.split(/\s+/).filter(Boolean)) out.push(Number(k), ...descendants(Number(k)));
    }
    return out;
}

// CPU seconds the server's process has used (all its threads; children that exited and were waited for too)
function cpuSeconds(pid) {
    try {
        const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').slice(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').lastIndexOf(')') + 2).split(' ');
        // fields 14-17 of stat: utime stime cutime cstime, counted from the state field (3)
        return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100;
    } catch {
        return NaN;
    }
}

// peak RSS of the server: VmHWM of its process, plus its child processes' if it has any
function peakRss(pid) {
    const pids = [pid, ...descendants(pid)];
    let hwm = 0, rss = 0;
    for (const p of pids) {
        const s = procStatus(p);
        if (s) {
            hwm += s.hwm;
            rss += s.rss;
        }
    }
    return { hwmKiB: hwm, rssKiB: rss, processes: pids.length };
}

// ---------------------------------------------------------------- one session
const withTimeout = (promise, ms, what) =>
    new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`timeout: ${what}`)), ms);
        promise.then((v) => (clearTimeout(t), resolve(v)), (e) => (clearTimeout(t), reject(e)));
    });

async function runSession(server, opts, file, text, edits) {
    const cmd = server === 'advise' ? [opts.advise, ['server', '--stdio']] : [process.execPath, [opts.pyright, '--stdio']];
    const workspace = fs.mkdtempSync(path.join(os.tmpdir(), `lsp-bench-${server}-`));
    const docPath = path.join(workspace, path.basename(file));
    fs.writeFileSync(docPath, text);
    const uri = pathToFileURL(docPath).href;

    const child = spawn(cmd[0], cmd[1], { cwd: workspace, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderrTail = '';
    child.stderr.on('data', (d) => (stderrTail = (stderrTail + d).slice(-4000)));
    let exited = false;
    const exitPromise = new Promise((resolve) => child.on('exit', (code, signal) => ((exited = true), resolve({ code, signal }))));
    child.on('error', (e) => (stderrTail += `\nspawn error: ${e.message}`));
    const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
    conn.onError(() => {});
    conn.onClose(() => {});

    // requests a server may send; answered with defaults
    conn.onRequest('workspace/configuration', (p) => p.items.map(() => null));
    conn.onRequest('client/registerCapability', () => null);
    conn.onRequest('client/unregisterCapability', () => null);
    conn.onRequest('window/workDoneProgress/create', () => null);
    conn.onRequest('workspace/workspaceFolders', () => [{ uri: pathToFileURL(workspace).href, name: 'bench' }]);
    conn.onRequest((method) => {
        if (opts.trace) console.error(`[${server}] request ${method} (answered null)`);
        return null;
    });
    conn.onNotification((method) => {
        if (opts.trace && method !== '$/progress') console.error(`[${server}] ${method}`);
    });

    // diagnostics: the newest publish, and who waits for which version
    let waiter = null; // {version, resolve, sentAt}
    let versionless = 0, publishes = 0, lastDiagnostics = [];
    let latest = { diagnostics: [], at: 0 }; // any publish, a full pass after a quick one included
    const publishedVersions = new Map();
    conn.onNotification('textDocument/publishDiagnostics', (p) => {
        const at = performance.now();
        if (p.uri !== uri) return;
        publishes++;
        latest = { diagnostics: p.diagnostics, at };
        const hasVersion = typeof p.version === 'number';
        if (hasVersion) publishedVersions.set(p.version, (publishedVersions.get(p.version) || 0) + 1);
        if (opts.trace) console.error(`[${server}] publish v${p.version} ${p.diagnostics.length} diagnostics at ${at.toFixed(1)}`);
        if (!waiter) return;
        // without a version, the first publish after the change stands for it
        if (hasVersion ? p.version === waiter.version : at >= waiter.sentAt) {
            if (!hasVersion) versionless++;
            lastDiagnostics = p.diagnostics;
            const w = waiter;
            waiter = null;
            w.resolve(at - w.sentAt);
        }
    });
    conn.listen();

    const waitFor = (version, sentAt) => new Promise((resolve) => (waiter = { version, resolve, sentAt }));
    const result = { server, latencies: [], open: NaN, versionless: 0, publishes: 0, error: null, lastDiagnostics: [] };
    const start = performance.now();
    try {
        await withTimeout(
            conn.sendRequest('initialize', {
                processId: process.pid,
                clientInfo: { name: 'advise-lsp-bench', version: '1' },
                rootUri: pathToFileURL(workspace).href,
                workspaceFolders: [{ uri: pathToFileURL(workspace).href, name: 'bench' }],
                capabilities: {
                    // push diagnostics with versions; positions in UTF-16 (the default of both)
                    textDocument: {
                        synchronization: { dynamicRegistration: false, didSave: true },
                        publishDiagnostics: { versionSupport: true, relatedInformation: true, tagSupport: { valueSet: [1, 2] } },
                    },
                    workspace: { workspaceFolders: true },
                    window: { workDoneProgress: false },
                },
            }),
            60000,
            'initialize',
        );
        conn.sendNotification('initialized', {});
        let version = 1;
        let sentAt = performance.now();
        let wait = waitFor(version, sentAt);
        await conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version, text } });
        result.open = await withTimeout(wait, Math.max(60, opts.timeout) * 1000, 'diagnostics after didOpen');
        // let the server finish whatever it does after its first publish
        await new Promise((r) => setTimeout(r, 500));
        const cpuBefore = cpuSeconds(child.pid);

        let consecutiveTimeouts = 0;
        const lines = text.split('\n');
        for (const change of edits) {
            applyChange(lines, change);
            version++;
            sentAt = performance.now();
            wait = waitFor(version, sentAt);
            await conn.sendNotification('textDocument/didChange', { textDocument: { uri, version }, contentChanges: [change] });
            try {
                result.latencies.push(await withTimeout(wait, opts.timeout * 1000, `diagnostics for version ${version}`));
                consecutiveTimeouts = 0;
            } catch {
                waiter = null;
                result.latencies.push(Infinity);
                if (++consecutiveTimeouts >= 5) throw new Error(`5 edits in a row without diagnostics (stopped at version ${version})`);
            }
        }
        result.finalText = lines.join('\n');
        result.memory = peakRss(child.pid);
        result.cpuEdits = cpuSeconds(child.pid) - cpuBefore;
        // advise answers an edit with a quick pass over the edited statement and
        // follows it with a full pass: the cross-check takes the settled answer
        // (no publish for 3 s), not the timed one; on a loaded machine the full
        // pass may come later, so a differing answer gets up to 60 s to settle
        if (server === 'advise') {
            const settleEnd = performance.now() + 60000;
            for (;;) {
                while (performance.now() - latest.at < 3000 && performance.now() < settleEnd)
                    await new Promise((r) => setTimeout(r, 100));
                result.crossCheck = crossCheck(opts, file, result.finalText, latest.diagnostics);
                if (!result.crossCheck || performance.now() >= settleEnd) break;
                await new Promise((r) => setTimeout(r, 1000));
            }
        }
        lastDiagnostics = latest.diagnostics;
    } catch (e) {
        result.error = e.message;
        result.memory = peakRss(child.pid);
    }
    result.seconds = (performance.now() - start) / 1000;
    result.versionless = versionless;
    result.publishes = publishes;
    result.repeatedPublishes = [...publishedVersions.values()].filter((n) => n > 1).length;
    result.lastDiagnostics = lastDiagnostics;

    // clean shutdown: shutdown, exit, then wait; terminate only when that fails
    if (!exited) {
        try {
            await withTimeout(conn.sendRequest('shutdown'), 10000, 'shutdown');
            await conn.sendNotification('exit');
        } catch (e) {
            result.shutdownProblem = e.message;
        }
        let status = await Promise.race([exitPromise, new Promise((r) => setTimeout(() => r(null), 5000))]);
        if (!status) {
            result.shutdownProblem = (result.shutdownProblem ? result.shutdownProblem + '; ' : '') + 'did not exit within 5 s of exit: SIGTERM';
            child.kill('SIGTERM');
            status = await Promise.race([exitPromise, new Promise((r) => setTimeout(() => r(null), 5000))]);
            if (!status) {
                child.kill('SIGKILL');
                status = await exitPromise;
            }
        }
        result.exit = status;
    }
    conn.dispose();
    if (result.error) result.stderrTail = stderrTail;
    fs.rmSync(workspace, { recursive: true, force: true });
    return result;
}

// Does the advise server's last answer match `advise check` on the final text?
// (shows that the incremental edits left the server with the text we meant)
function crossCheck(opts, file, finalText, diagnostics) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lsp-bench-check-'));
    const p = path.join(dir, path.basename(file));
    fs.writeFileSync(p, finalText);
    const r = spawnSync(opts.advise, ['check', '--format', 'json', '--fail-on', 'never', '--no-config', p], { encoding: 'utf8', maxBuffer: 1 << 28 });
    fs.rmSync(dir, { recursive: true, force: true });
    let report;
    try {
        report = JSON.parse(r.stdout); // exit status 2 with a report: a syntax error, findings for what parsed
    } catch {
        return `advise check failed: ${r.stderr.trim()}`;
    }
    const want = report.findings.map((f) => `${f.code}@${f.range.start.line - 1}`).sort();
    const got = diagnostics.map((d) => `${typeof d.code === 'object' ? d.code.value : d.code}@${d.range.start.line}`).sort();
    return JSON.stringify(want) === JSON.stringify(got) ? null : `server has ${got.length} diagnostics, advise check ${want.length}`;
}

// ---------------------------------------------------------------- printing
const fmtMs = (x) => (x === Infinity ? 'timeout' : Number.isNaN(x) ? '-' : x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : x.toFixed(0));
const fmtMiB = (kib) => (kib ? (kib / 1024).toFixed(1) : '-');
const ratio = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && a > 0 ? (b / a >= 100 ? (b / a).toFixed(0) : (b / a).toFixed(1)) + 'x' : '-');
const pad = (s, n) => String(s).padStart(n);

function printTable(file, info, results) {
    const a = results.advise, p = results.pyright;
    const rows = [];
    const row = (label, av, pv, r) => rows.push(`  ${label.padEnd(30)}${pad(av, 12)}${pad(pv, 12)}${pad(r, 16)}`);
    rows.push(`  ${''.padEnd(30)}${pad('advise', 12)}${pad('pyright', 12)}${pad('pyright/advise', 16)}`);
    const sa = a ? summarise(a.latencies) : null, sp = p ? summarise(p.latencies) : null;
    const get = (s, k) => (s ? s[k] : NaN);
    row('didOpen -> diagnostics, ms', fmtMs(a?.open ?? NaN), fmtMs(p?.open ?? NaN), ratio(a?.open, p?.open));
    for (const [k, label] of [['p50', 'edit -> diagnostics p50, ms'], ['p95', 'edit -> diagnostics p95, ms'], ['max', 'edit -> diagnostics max, ms'], ['mean', 'edit -> diagnostics mean, ms']])
        row(label, fmtMs(get(sa, k)), fmtMs(get(sp, k)), ratio(get(sa, k), get(sp, k)));
    row('edits answered / sent', a ? `${a.latencies.length - sa.timeouts}/${a.latencies.length}` : '-', p ? `${p.latencies.length - sp.timeouts}/${p.latencies.length}` : '-', '');
    row('peak RSS (VmHWM), MiB', fmtMiB(a?.memory?.hwmKiB), fmtMiB(p?.memory?.hwmKiB), ratio(a?.memory?.hwmKiB, p?.memory?.hwmKiB));
    row('diagnostics at the end', a ? a.lastDiagnostics.length : '-', p ? p.lastDiagnostics.length : '-', '');
    row('server CPU per edit, ms', a ? fmtMs((a.cpuEdits * 1000) / a.latencies.length) : '-', p ? fmtMs((p.cpuEdits * 1000) / p.latencies.length) : '-', ratio(a?.cpuEdits, p?.cpuEdits));
    row('session wall time, s', a ? a.seconds.toFixed(1) : '-', p ? p.seconds.toFixed(1) : '-', '');
    console.log(`\n${path.basename(file)}: ${info.lines.toLocaleString('en-US')} lines, ${info.bytes.toLocaleString('en-US')} bytes, ${info.edits} edits (${info.source})`);
    console.log(rows.join('\n'));
    for (const r of [a, p].filter(Boolean)) {
        const notes = [];
        if (r.error) notes.push(`session stopped: ${r.error}`);
        if (r.versionless) notes.push(`${r.versionless} publishes without a version, matched as the first publish after the change`);
        if (r.repeatedPublishes) notes.push(`${r.repeatedPublishes} versions published more than once (the first one counts)`);
        if (r.memory?.processes > 1) notes.push(`RSS summed over ${r.memory.processes} processes`);
        if (r.shutdownProblem) notes.push(`shutdown: ${r.shutdownProblem}`);
        else if (r.exit && (r.exit.code !== 0 || r.exit.signal)) notes.push(`exit status ${r.exit.code ?? r.exit.signal}`);
        if (r.crossCheck !== undefined) notes.push(r.crossCheck ? `cross-check FAILED: ${r.crossCheck}` : 'last diagnostics match `advise check` on the final text');
        if (r.stderrTail) notes.push(`stderr: ${r.stderrTail.trim().split('\n').slice(-3).join(' | ')}`);
        for (const n of notes) console.log(`  ${r.server}: ${n}`);
    }
    if (sa && sp) {
        const speed = sp.p50 / sa.p50;
        console.log(`  goal: advise p50 <= 5 ms: ${sa.p50 <= 5 ? 'met' : 'MISSED'} (${fmtMs(sa.p50)} ms); ` +
            `>= 100x faster than pyright at p50: ${speed >= 100 ? 'met' : 'MISSED'} (${Number.isFinite(speed) ? speed.toFixed(0) : '-'}x)`);
    }
}

// ---------------------------------------------------------------- main
async function main() {
    const opts = parseArgs(process.argv);
    if (opts.servers.includes('advise') && !fs.existsSync(opts.advise)) throw new Error(`${opts.advise} not found: build advise first (cmake -S . -B build && make -C build)`);
    if (opts.servers.includes('pyright') && !fs.existsSync(opts.pyright)) throw new Error(`${opts.pyright} not found: run npm ci in bench/`);

    const files = [];
    if (opts.files.length) {
        for (const f of opts.files) files.push({ file: f, text: fs.readFileSync(f, 'utf8'), source: 'given', flavour: /torch/.test(fs.readFileSync(f, 'utf8')) ? 'torch' : 'generic' });
    } else {
        const dec = stdlibDecimal();
        files.push({ file: dec, text: fs.readFileSync(dec, 'utf8'), source: 'the Python standard library', flavour: 'generic' });
        files.push({ file: 'torch_models.py', text: generateTorchFile(6000, 1234), source: 'generated by gen_torch_file.mjs, seed 1234', flavour: 'torch' });
        files.push({ file: 'repeated_script.py', text: generateRepeatedScript(120), source: 'a 50-line training script x120, gen_repeated_script.mjs', flavour: 'torch' });
    }

    const pyrightVersion = (() => {
        try {
            return JSON.parse(fs.readFileSync(path.join(path.dirname(opts.pyright), 'package.json'), 'utf8')).version;
        } catch {
            return '?';
        }
    })();
    const commit = versionOf('git', ['-C', REPO, 'rev-parse', '--short', 'HEAD']) ?? '?';
    console.log('advise LSP benchmark: didChange -> publishDiagnostics of that version, one edit at a time');
    console.log(`date     ${new Date().toISOString()}`);
    console.log(`machine  ${cpuModel()}, ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.type()} ${os.release()}`);
    console.log(`advise   ${opts.advise} (commit ${commit})`);
    console.log(`pyright  ${pyrightVersion}, node ${process.version}; python3 ${versionOf('python3', ['-c', 'import sys;print(sys.version.split()[0])']) ?? '?'}`);
    console.log(`load     ${os.loadavg().map((x) => x.toFixed(2)).join(' ')} (1, 5, 15 min averages at the start: other work on the machine slows both servers)`);
    console.log(`session  ${opts.edits} incremental edits or more per file (seed ${opts.seed}), timeout ${opts.timeout} s per edit; push diagnostics, UTF-16 positions`);

    const report = { date: new Date().toISOString(), machine: { cpu: cpuModel(), cores: os.cpus().length }, pyright: pyrightVersion, commit, files: [] };
    for (const f of files) {
        const edits = planEdits(f.text, opts.edits, opts.seed, f.flavour);
        const info = { lines: f.text.split('\n').length - (f.text.endsWith('\n') ? 1 : 0), bytes: Buffer.byteLength(f.text), edits: edits.length, source: f.source };
        const results = {};
        for (const server of opts.servers) {
            process.stderr.write(`${path.basename(f.file)}: ${server}... `);
            const r = await runSession(server, opts, f.file, f.text, edits);
            if (server === 'advise' && r.error) delete r.crossCheck;
            const s = summarise(r.latencies);
            process.stderr.write(`${r.error ? 'stopped: ' + r.error : `p50 ${fmtMs(s.p50)} ms`} (${r.seconds.toFixed(1)} s)\n`);
            results[server] = r;
        }
        printTable(f.file, info, results);
        report.files.push({
            file: path.basename(f.file), ...info,
            servers: Object.fromEntries(Object.entries(results).map(([k, r]) => [k, {
                ...summarise(r.latencies), open: r.open, peakRssKiB: r.memory?.hwmKiB, latencies: r.latencies.map((x) => (Number.isFinite(x) ? +x.toFixed(3) : null)),
                error: r.error, versionless: r.versionless, repeatedPublishes: r.repeatedPublishes, crossCheck: r.crossCheck,
            }])),
        });
    }
    if (opts.json) fs.writeFileSync(opts.json, JSON.stringify(report, null, 1));
    console.log(`\nload at the end ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
    console.log('latency: from just before the didChange is written to the receipt of the publishDiagnostics that carries');
    console.log('its version (JSON-RPC encoding and decoding in this client included). p50/p95: nearest rank; a timeout counts as infinite.');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
    main().catch((e) => {
        console.error(`lsp_latency: ${e.message}`);
        process.exit(2);
    });
}
