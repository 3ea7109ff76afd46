// Benchmark: time to first diagnostics and edit-to-diagnostics latency of
// advise's LSP server, side by side with clangd 19's, on the same CUDA file
// with the same compiler flags, in the same run. A program that prints
// figures, not a test: see bench/README.md.
//
//   cd bench/cuda && npm ci && node cuda_latency.mjs [options]
//
// For each server in turn (never both at once), and for each round: start
// the server, open the file (didOpen) and time until its first
// publishDiagnostics; wait --settle seconds (the editor sits idle while the
// person reads); then make --edits edits one by one, each a didChange, timing
// from the didChange to the publishDiagnostics for that version, with --gap
// ms between an answer and the next edit. The edits type a new statement
// after a statement in a function body and delete it again, or delete a ';'
// and put it back (an error that comes and goes), at places spread over the
// file. Figures: first diagnostics (median over rounds) and edit latency
// (median and 90th percentile over every edit of every round).
//
// options:
//   --advise PATH      advise binary (default: build/advise of this checkout)
//   --clangd PATH      clangd (default: clangd-19 on PATH, else /usr/lib/llvm-19/bin/clangd)
//   --clangd-arg ARG   one more argument for clangd (repeatable), e.g. --pch-storage=memory
//   --servers LIST     advise,clangd (default both)
//   --file PATH        a .cu file to open (default: a generated one, see --lines)
//   --lines N          lines of the generated file (default 1500, at least 1000)
//   --seed N           seed of the generated file and of the edit places (default 1234)
//   --cuda-path DIR    the CUDA toolkit (default /usr/local/cuda)
//   --gpu-arch ARCH    default sm_90
//   --rounds N         server starts per server (default 3)
//   --edits N          edits per round (default 20)
//   --settle S         seconds between the first diagnostics and the first edit (default 5)
//   --gap MS           pause between one edit's diagnostics and the next edit (default 250)
//   --timeout S        seconds to wait for one publishDiagnostics (default 120)
//   --json PATH        also write every measurement as JSON
//   --trace            print every publishDiagnostics as it arrives
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { generateCudaFile, mulberry32 } from './gen_cuda_file.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..', '..');

// ---------------------------------------------------------------- options
function parseArgs(argv) {
    const o = {
        advise: path.join(REPO, 'build', 'advise'),
        clangd: null,
        clangdArgs: [],
        servers: ['advise', 'clangd'],
        file: null,
        lines: 1500,
        seed: 1234,
        cudaPath: '/usr/local/cuda',
        gpuArch: 'sm_90',
        rounds: 3,
        edits: 20,
        settle: 5,
        gap: 250,
        timeout: 120,
        json: null,
        trace: false,
    };
    for (let i = 2; i < argv.length; i++) {
        const a = argv[i], next = () => {
            if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
            return argv[++i];
        };
        if (a === '--advise') o.advise = path.resolve(next());
        else if (a === '--clangd') o.clangd = next();
        else if (a === '--clangd-arg') o.clangdArgs.push(next());
        else if (a === '--servers') o.servers = next().split(',').filter(Boolean);
        else if (a === '--file') o.file = path.resolve(next());
        else if (a === '--lines') o.lines = Number(next());
        else if (a === '--seed') o.seed = Number(next());
        else if (a === '--cuda-path') o.cudaPath = path.resolve(next());
        else if (a === '--gpu-arch') o.gpuArch = next();
        else if (a === '--rounds') o.rounds = Number(next());
        else if (a === '--edits') o.edits = Number(next());
        else if (a === '--settle') o.settle = Number(next());
        else if (a === '--gap') o.gap = Number(next());
        else if (a === '--timeout') o.timeout = Number(next());
        else if (a === '--json') o.json = path.resolve(next());
        else if (a === '--trace') o.trace = true;
        else if (a === '-h' || a === '--help') {
            const head = fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n');
            console.log(head.slice(0, head.findIndex((l) => l.startsWith('import'))).map((l) => l.replace(/^\/\/ ?/, '')).join('\n'));
            process.exit(0);
        } else throw new Error(`unknown option ${a} (--help lists them)`);
    }
    for (const s of o.servers) if (s !== 'advise' && s !== 'clangd') throw new Error(`unknown server ${s}`);
    if (!(o.rounds > 0) || !(o.edits > 0) || !(o.timeout > 0) || !(o.settle >= 0) || !(o.gap >= 0))
        throw new Error('--rounds, --edits, --timeout take positive numbers; --settle and --gap non-negative ones');
    if (!o.file && !(o.lines >= 1000)) throw new Error('--lines: at least 1000');
    if (!o.clangd) {
        const onPath = spawnSync('sh', ['-c', 'command -v clangd-19'], { encoding: 'utf8' });
        o.clangd = onPath.status === 0 ? onPath.stdout.trim() : '/usr/lib/llvm-19/bin/clangd';
    }
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

function firstLine(cmd, args) {
    const r = spawnSync(cmd, args, { encoding: 'utf8' });
    if (r.status !== 0 && !r.stdout) return null;
    return (r.stdout || r.stderr).split('\n').find((l) => l.trim()) ?? null;
}

// ---------------------------------------------------------------- the flags both servers get
// advise writes the header shim here (analysis/cuda/cuda_flags.c: cuda_shim_dir);
// create it the same way when advise has not run yet
function shimDir() {
    const base = process.env.XDG_CACHE_HOME || path.join(process.env.HOME || '/tmp', '.cache');
    const dir = path.join(base, 'advise', 'cuda13-shim');
    const header = path.join(dir, 'texture_fetch_functions.h');
    if (!fs.existsSync(header)) {
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(header, "/* advise: CUDA 13 removed this header; clang 19's CUDA wrapper still includes it */\n");
    }
    return dir;
}

function cudaFlags(o) {
    return ['-x', 'cuda', '--cuda-host-only', `--cuda-gpu-arch=${o.gpuArch}`, '-nocudalib', `--cuda-path=${o.cudaPath}`,
            '-std=c++17', '-isystem', path.join(o.cudaPath, 'include', 'cccl'), '-isystem', shimDir(),
            '-Wno-unknown-cuda-version'];
}

// ---------------------------------------------------------------- the edits
// statements alone on their line inside a function body, outside macros
function findEditPoints(text) {
    const lines = text.split('\n');
    const points = [];
    let depth = 0, inComment = false;
    for (let i = 0; i < lines.length; i++) {
        const line = lines[i];
        const trimmed = line.trim();
        const continued = i > 0 && lines[i - 1].trimEnd().endsWith('\\');
        if (depth > 0 && !inComment && !continued && /^\s+[A-Za-z_(*].*;$/.test(line) && !trimmed.startsWith('#') &&
            !trimmed.startsWith('for') && !trimmed.startsWith('return') && !trimmed.endsWith('\\') && /^[\x20-\x7e]*$/.test(line))
            points.push({ line: i, indent: line.length - line.trimStart().length, length: line.length });
        // a rough brace count: good enough to find function bodies in ordinary code
        let s = line.replace(/"([^"\\]|\\.)*"|'([^'\\]|\\.)*'/g, '""');
        if (inComment) {
            const end = s.indexOf('*/');
            if (end < 0) continue;
            s = s.slice(end + 2);
            inComment = false;
        }
        s = s.replace(/\/\*.*?\*\//g, '').replace(/\/\/.*$/, '');
        if (s.includes('/*')) {
            s = s.slice(0, s.indexOf('/*'));
            inComment = true;
        }
        if (s.trimStart().startsWith('#')) continue;
        for (const c of s) depth += c === '{' ? 1 : c === '}' ? -1 : 0;
        if (depth < 0) depth = 0;
    }
    return points;
}

const TYPED = [
    'float bench_tmp = 0.5f * 3.0f;',
    'int bench_count = 0;',
    'const float bench_scale = 1.0f / 256.0f;',
    'unsigned int bench_mask = 0xffffffffu;',
    'double bench_acc = 0.0;',
];

// one edit: {range, text} in LSP positions; the script returns the file to its
// original text after every pair of edits
function planEdits(points, count, seed) {
    const rnd = mulberry32(seed ^ 0x5bd1e995);
    if (points.length < 4) throw new Error(`too few statements to edit (${points.length})`);
    // places spread over the file, in a shuffled order
    const places = [];
    const pairs = Math.ceil(count / 2);
    for (let i = 0; i < pairs; i++) {
        const lo = Math.floor((i * points.length) / pairs), hi = Math.max(lo + 1, Math.floor(((i + 1) * points.length) / pairs));
        places.push(points[lo + Math.floor(rnd() * (hi - lo))]);
    }
    for (let i = places.length - 1; i > 0; i--) {
        const j = Math.floor(rnd() * (i + 1));
        [places[i], places[j]] = [places[j], places[i]];
    }
    const pos = (line, character) => ({ line, character });
    const edits = [];
    places.forEach((p, k) => {
        if (k % 2 === 0) {
            // press Enter at the end of the statement and type a new one; then delete it
            const typed = ' '.repeat(p.indent) + TYPED[k % TYPED.length];
            edits.push({ kind: 'type a statement', range: { start: pos(p.line, p.length), end: pos(p.line, p.length) }, text: '\n' + typed });
            edits.push({ kind: 'delete it', range: { start: pos(p.line, p.length), end: pos(p.line + 1, typed.length) }, text: '' });
        } else {
            // delete the ';' (a compile error), then type it again
            edits.push({ kind: "delete a ';'", range: { start: pos(p.line, p.length - 1), end: pos(p.line, p.length) }, text: '' });
            edits.push({ kind: "type the ';'", range: { start: pos(p.line, p.length - 1), end: pos(p.line, p.length - 1) }, text: ';' });
        }
    });
    return edits.slice(0, count);
}

function applyEdit(text, edit) {
    const lines = text.split('\n');
    const offset = (p) => lines.slice(0, p.line).reduce((n, l) => n + l.length + 1, 0) + p.character;
    return text.slice(0, offset(edit.range.start)) + edit.text + text.slice(offset(edit.range.end));
}

// the background index would compete for the CPU with the edits being timed
function clangdArgs(o, work) {
    return [`--compile-commands-dir=${work.dbDir}`, '--background-index=false', '--log=error', ...o.clangdArgs];
}

// ---------------------------------------------------------------- one session with one server
async function session(name, o, work, round) {
    const cmd = name === 'advise' ? o.advise : o.clangd;
    const args = name === 'advise' ? ['server'] : clangdArgs(o, work);
    const proc = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    proc.stderr.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
    const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
    proc.on('error', (e) => { stderr += `\n${e.message}`; });
    const conn = createMessageConnection(new StreamMessageReader(proc.stdout), new StreamMessageWriter(proc.stdin));

    const uri = pathToFileURL(work.file).href;
    let waiter = null; // {version, resolve}
    const arrivals = [];
    conn.onNotification('textDocument/publishDiagnostics', (p) => {
        if (p.uri !== uri) return;
        const t = performance.now();
        if (o.trace) console.error(`  ${name}: version ${p.version ?? '-'}: ${p.diagnostics.length} diagnostics at ${t.toFixed(1)} ms`);
        arrivals.push({ t, version: p.version, diagnostics: p.diagnostics });
        if (waiter && (p.version === undefined || p.version === null || p.version >= waiter.version)) {
            const w = waiter;
            waiter = null;
            w.resolve({ t, diagnostics: p.diagnostics, version: p.version });
        }
    });
    conn.onNotification(() => {});
    conn.onRequest((method) => (method === 'workspace/configuration' ? [] : null));
    conn.listen();

    const waitFor = (version) => new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
            waiter = null;
            reject(new Error(`${name}: no diagnostics for version ${version} after ${o.timeout} s\n${stderr}`));
        }, o.timeout * 1000);
        waiter = { version, resolve: (r) => { clearTimeout(timer); resolve(r); } };
    });

    const init = await Promise.race([
        conn.sendRequest('initialize', {
            processId: process.pid,
            rootUri: pathToFileURL(path.dirname(work.file)).href,
            workspaceFolders: null,
            capabilities: {
                general: { positionEncodings: ['utf-16'] },
                textDocument: {
                    synchronization: { didSave: false, dynamicRegistration: false },
                    publishDiagnostics: { versionSupport: true, relatedInformation: false },
                },
                workspace: { configuration: false },
            },
            initializationOptions: name === 'advise' ? { cudaBuildDir: work.dbDir } : {},
        }),
        exited.then((e) => { throw new Error(`${name} exited (${e.code ?? e.signal}) during initialize:\n${stderr}`); }),
    ]);
    const sync = init.capabilities?.textDocumentSync;
    const incremental = (typeof sync === 'number' ? sync : sync?.change) === 2;
    const serverVersion = init.serverInfo ? `${init.serverInfo.name} ${init.serverInfo.version ?? ''}`.trim() : null;
    conn.sendNotification('initialized', {});

    let text = work.text, version = 1;
    const t0 = performance.now();
    const first = waitFor(version);
    conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'cuda', version, text } });
    const opened = await first;
    const firstMs = opened.t - t0;
    const firstDiagnostics = opened.diagnostics;

    await new Promise((r) => setTimeout(r, o.settle * 1000));

    const edits = [];
    for (const edit of work.edits) {
        version++;
        text = applyEdit(text, edit);
        const answer = waitFor(version);
        const t = performance.now();
        conn.sendNotification('textDocument/didChange', {
            textDocument: { uri, version },
            contentChanges: [incremental ? { range: edit.range, text: edit.text } : { text }],
        });
        const got = await answer;
        edits.push({ kind: edit.kind, ms: got.t - t, diagnostics: got.diagnostics.length, errors: got.diagnostics.filter((d) => d.severity === 1).length });
        await new Promise((r) => setTimeout(r, o.gap));
    }

    try {
        await Promise.race([conn.sendRequest('shutdown'), new Promise((r) => setTimeout(r, 5000))]);
        conn.sendNotification('exit');
    } catch {}
    const killer = setTimeout(() => proc.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(killer);
    conn.dispose();
    return { server: name, round, firstMs, firstDiagnostics, edits, serverVersion, incremental, publishes: arrivals.length };
}

// ---------------------------------------------------------------- figures
const median = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN;
};
const percentile = (xs, p) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
};
const ms = (x) => (Number.isFinite(x) ? `${x.toFixed(0)} ms` : '-');

function describeDiagnostics(ds) {
    const errors = ds.filter((d) => d.severity === 1);
    const text = `${ds.length} (${errors.length} errors)`;
    return errors.length ? `${text}; first error: line ${errors[0].range.start.line + 1}: ${errors[0].message}` : text;
}

async function main() {
    const o = parseArgs(process.argv);
    const work = { dbDir: fs.mkdtempSync(path.join(os.tmpdir(), 'advise-cuda-bench-')) };
    let points;
    if (o.file) {
        work.file = o.file;
        work.text = fs.readFileSync(o.file, 'utf8');
        points = findEditPoints(work.text);
    } else {
        const g = generateCudaFile(o.lines, o.seed);
        work.file = path.join(work.dbDir, 'kernels.cu');
        work.text = g.text;
        points = g.editPoints;
        fs.writeFileSync(work.file, work.text);
    }
    if (!/#\s*include\s*[<"]cuda_runtime\.h[>"]/.test(work.text)) console.warn('warning: the file does not include cuda_runtime.h');
    work.edits = planEdits(points, o.edits, o.seed);
    const flags = cudaFlags(o);
    fs.writeFileSync(path.join(work.dbDir, 'compile_commands.json'), JSON.stringify([{
        directory: path.dirname(work.file), file: work.file, arguments: ['clang++', ...flags, '-c', work.file],
    }], null, 2));

    const lineCount = work.text.split('\n').length - (work.text.endsWith('\n') ? 1 : 0);
    const clangdVersion = o.servers.includes('clangd') ? firstLine(o.clangd, ['--version']) : null;
    console.log('CUDA edit latency: advise server vs clangd');
    console.log(`  date      ${new Date().toISOString()}`);
    console.log(`  machine   ${cpuModel()}, ${os.cpus().length} CPUs, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.type()} ${os.release()}`);
    console.log(`  file      ${work.file}: ${lineCount} lines${o.file ? '' : ` (generated, seed ${o.seed})`}`);
    console.log(`  flags     ${flags.join(' ')}`);
    console.log(`  database  ${work.dbDir}/compile_commands.json (advise: cudaBuildDir; clangd: --compile-commands-dir)`);
    if (clangdVersion) console.log(`  clangd    ${o.clangd}: ${clangdVersion}; ${clangdArgs(o, work).filter((a) => !a.startsWith('--compile-commands-dir')).join(' ')}`);
    if (o.servers.includes('advise')) console.log(`  advise    ${o.advise} server`);
    console.log(`  runs      ${o.rounds} rounds per server, ${work.edits.length} edits each, ${o.settle} s idle after opening, ${o.gap} ms between edits`);
    console.log('');

    const results = [];
    for (const name of o.servers) {
        for (let r = 0; r < o.rounds; r++) {
            const res = await session(name, o, work, r);
            results.push(res);
            const em = res.edits.map((e) => e.ms);
            console.log(`  ${name.padEnd(6)} round ${r + 1}: first diagnostics ${ms(res.firstMs)} (${describeDiagnostics(res.firstDiagnostics)}); ` +
                        `edits: median ${ms(median(em))}, max ${ms(Math.max(...em))}${res.incremental ? '' : ' (full-text sync)'}`);
        }
    }

    const by = (name) => results.filter((r) => r.server === name);
    const figure = (name) => {
        const rs = by(name);
        if (!rs.length) return null;
        const edits = rs.flatMap((r) => r.edits.map((e) => e.ms));
        const errEdits = rs.flatMap((r) => r.edits.filter((e) => e.kind === "delete a ';'").map((e) => e.ms));
        return {
            first: median(rs.map((r) => r.firstMs)),
            firstMin: Math.min(...rs.map((r) => r.firstMs)),
            editMedian: median(edits),
            editP90: percentile(edits, 90),
            errorEditMedian: median(errEdits),
            diagnostics: rs[0].firstDiagnostics.length,
        };
    };
    const a = figure('advise'), c = figure('clangd');
    console.log('');
    const row = (label, f) => `  ${label.padEnd(42)}${(a ? ms(f(a)) : '-').padStart(10)}${(c ? ms(f(c)) : '-').padStart(10)}` +
                              (a && c ? `${(f(a) / f(c)).toFixed(2).padStart(10)}` : '');
    console.log(`  ${''.padEnd(42)}${'advise'.padStart(10)}${'clangd'.padStart(10)}${'ratio'.padStart(10)}`);
    console.log(row('first diagnostics after didOpen (median)', (x) => x.first));
    console.log(row('first diagnostics after didOpen (best)', (x) => x.firstMin));
    console.log(row('diagnostics after an edit (median)', (x) => x.editMedian));
    console.log(row('diagnostics after an edit (90th percentile)', (x) => x.editP90));
    console.log(row("  of which: an edit that makes an error", (x) => x.errorEditMedian));
    if (a && c) {
        console.log('');
        console.log(`  goals: first diagnostics no slower than clangd: ${a.first <= c.first ? 'met' : 'NOT met'} ` +
                    `(ratio ${(a.first / c.first).toFixed(2)}); after an edit at most half of clangd's time: ` +
                    `${a.editMedian <= c.editMedian / 2 ? 'met' : 'NOT met'} (ratio ${(a.editMedian / c.editMedian).toFixed(2)})`);
    }
    if (o.json) fs.writeFileSync(o.json, JSON.stringify({ options: o, file: work.file, lines: lineCount, flags, clangdVersion, results }, null, 2));
    fs.rmSync(work.dbDir, { recursive: true, force: true });
}

main().catch((e) => {
    console.error(e.stack || String(e));
    process.exit(1);
});
