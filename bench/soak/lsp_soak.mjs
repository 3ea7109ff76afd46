// Soak of `advise server`: a long editing session on a 6,000-line Python file
// and a 1,500-line CUDA file, as a person edits (bench/soak/typist.mjs), with
// hovers, code actions, code lenses and `advise/findings` in between. A
// program that prints figures and exits 1 when a goal is missed, not a test
// of the suite (it runs for tens of minutes): see bench/README.md.
//
//   node bench/soak/lsp_soak.mjs [options]
//
// options:
//   --advise PATH       advise binary (default: build/advise of this checkout)
//   --edits N           content changes per file (default 100000)
//   --check-every N     edits between comparisons with a fresh open (default 1000)
//   --files LIST        python,cuda (default both, one after the other)
//   --seed N            seed of the typist (default 11)
//   --python-file PATH  edit this Python file instead of the generated one
//   --cuda-file PATH    edit this CUDA file instead of the generated one
//   --json PATH         also write the measurements as JSON
//
// Goals (from issue 19), each checked and printed:
//   - resident memory flat: less than 5% growth over the last 90% of the edits
//     (mean RSS over the last tenth against the mean between 10% and 20%);
//   - after every --check-every edits, once the server is quiet, the document's
//     diagnostics equal those of a fresh open of the same text (another URI);
//   - every request answered, and the server exits 0 after shutdown and exit.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { LspClient } from './lsp_client.mjs';
import { Typist } from './typist.mjs';
import { generateTorchFile } from '../gen_torch_file.mjs';
import { generateCudaFile } from '../cuda/gen_cuda_file.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..', '..');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function parseArgs(argv) {
    const o = { advise: path.join(REPO, 'build', 'advise'), edits: 100000, checkEvery: 1000,
                files: ['python', 'cuda'], seed: 11, json: null, given: {} };
    for (let i = 2; i < argv.length; i++) {
        const a = argv[i], next = () => {
            if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
            return argv[++i];
        };
        if (a === '--advise') o.advise = path.resolve(next());
        else if (a === '--edits') o.edits = Number(next());
        else if (a === '--check-every') o.checkEvery = Number(next());
        else if (a === '--files') o.files = next().split(',').filter(Boolean);
        else if (a === '--seed') o.seed = Number(next());
        else if (a === '--json') o.json = path.resolve(next());
        else if (a === '--python-file') o.given.python = path.resolve(next());
        else if (a === '--cuda-file') o.given.cuda = path.resolve(next());
        else if (a === '-h' || a === '--help') {
            const head = fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n');
            console.log(head.slice(0, head.findIndex((l) => l.startsWith('import'))).map((l) => l.replace(/^\/\/ ?/, '')).join('\n'));
            process.exit(0);
        } else throw new Error(`unknown option ${a} (--help lists them)`);
    }
    for (const f of o.files) if (f !== 'python' && f !== 'cuda') throw new Error(`unknown file kind ${f}`);
    if (!(o.edits > 0) || !(o.checkEvery > 0)) throw new Error('--edits and --check-every take positive numbers');
    if (!fs.existsSync(o.advise)) throw new Error(`${o.advise} not found (build it with scripts/setup.sh)`);
    return o;
}

function rssKiB(pid) {
    try {
        const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s*(\d+) kB/m);
        return m ? Number(m[1]) : null;
    } catch {
        return null;
    }
}

/** one line per diagnostic, sorted: what "the same diagnostics" means */
const normalise = (diagnostics) => diagnostics.map((d) =>
    `${d.range.start.line}:${d.range.start.character}-${d.range.end.line}:${d.range.end.character} ` +
    `${d.severity} ${d.code} ${d.message}`).sort();

function firstDifference(a, b) {
    const sa = new Set(a), sb = new Set(b);
    const onlyA = a.filter((x) => !sb.has(x)), onlyB = b.filter((x) => !sa.has(x));
    return `edited only: ${onlyA.slice(0, 3).join(' | ') || '-'}; fresh only: ${onlyB.slice(0, 3).join(' | ') || '-'}`;
}

async function soakOne(kind, o) {
    const language = kind === 'python' ? 'python' : 'cuda';
    const text = o.given[kind] ? fs.readFileSync(o.given[kind], 'utf8')
        : kind === 'python' ? generateTorchFile(6000, o.seed) : generateCudaFile(1500, o.seed).text;
    const base = fs.mkdtempSync(path.join(os.tmpdir(), `advise-soak-${kind}-`));
    const name = o.given[kind] ? path.basename(o.given[kind]) : kind === 'python' ? 'torch_models.py' : 'kernels.cu';
    const work = path.join(base, 'work'), fresh = path.join(base, 'fresh');
    fs.mkdirSync(work);
    fs.mkdirSync(fresh);
    const docPath = path.join(work, name), freshPath = path.join(fresh, name);
    fs.writeFileSync(docPath, text);
    const uri = pathToFileURL(docPath).href, freshUri = pathToFileURL(freshPath).href;
    const quietMs = kind === 'python' ? 1500 : 3000;

    const client = new LspClient(o.advise, ['server', '--stdio'], work);
    const published = new Map(); // uri -> { version, diagnostics, at }
    client.onNotification = (method, params) => {
        if (method === 'textDocument/publishDiagnostics')
            published.set(params.uri, { version: params.version, diagnostics: params.diagnostics, at: Date.now() });
    };
    /** waits until `u` has diagnostics of `version` and none came for quietMs; false on timeout */
    const quiet = async (u, version, timeoutMs = 180000) => {
        const end = Date.now() + timeoutMs;
        for (;;) {
            const p = published.get(u);
            if (p && p.version === version && Date.now() - p.at >= quietMs) return true;
            if (Date.now() > end || client.exited) return false;
            await sleep(50);
        }
    };

    const started = Date.now();
    const init = await client.request('initialize', {
        processId: process.pid, rootUri: pathToFileURL(work).href,
        workspaceFolders: [{ uri: pathToFileURL(work).href, name: 'soak' }],
        capabilities: { textDocument: { publishDiagnostics: { versionSupport: true }, hover: {}, codeAction: {} } },
    });
    if (init.error) throw new Error(`initialize failed: ${init.error.message}`);
    client.notify('initialized', {});
    let version = 1;
    client.notify('textDocument/didOpen', { textDocument: { uri, languageId: language, version, text } });
    if (!await quiet(uri, version)) throw new Error(`no diagnostics after didOpen: ${client.stderrTail}`);

    const lines = text.split('\n');
    const typist = new Typist(lines, kind, o.seed);
    const inflight = [];
    const send = (method, params) => {
        const p = client.request(method, params);
        inflight.push(p);
        return p;
    };
    const stats = { kind, file: name, lines0: lines.length, edits: 0, requests: 0, checks: 0, mismatches: [],
                    rss: [], checkpoints: [], unanswered: [], errorAnswers: {} };
    let sinceRequests = 0;
    while (stats.edits < o.edits) {
        const step = typist.next();
        if (step.pause) {
            sinceRequests++;
            const pos = typist.cursor;
            const here = { textDocument: { uri }, position: pos };
            // an editor asks at the cursor as the person moves on
            const hover = send('textDocument/hover', here);
            const onLine = (published.get(uri)?.diagnostics ?? []).filter((d) => d.range.start.line === pos.line);
            send('textDocument/codeAction', { textDocument: { uri },
                range: { start: { line: pos.line, character: 0 }, end: pos }, context: { diagnostics: onLine } });
            if (sinceRequests % 5 === 0) send('textDocument/codeLens', { textDocument: { uri } });
            if (sinceRequests % 40 === 0) send('advise/findings', { paths: [docPath] });
            stats.requests = client.nextId - 1;
            await hover; // the pace: typing goes on once the editor has its hover
            while (inflight.length > 32) await inflight.shift();
            continue;
        }
        version++;
        client.notify('textDocument/didChange', { textDocument: { uri, version }, contentChanges: [step.change] });
        stats.edits++;
        if (stats.edits % 250 === 0) stats.rss.push([stats.edits, rssKiB(client.pid)]);
        if (stats.edits % o.checkEvery === 0) {
            const now = lines.join('\n');
            const settled = await quiet(uri, version);
            fs.writeFileSync(freshPath, now);
            client.notify('textDocument/didOpen', { textDocument: { uri: freshUri, languageId: language, version: 1, text: now } });
            const freshSettled = await quiet(freshUri, 1);
            let edited = normalise(published.get(uri)?.diagnostics ?? []);
            let opened = normalise(published.get(freshUri)?.diagnostics ?? []);
            if (settled && freshSettled && JSON.stringify(edited) !== JSON.stringify(opened)) {
                await sleep(10000); // a slow full pass still on its way gets its chance
                edited = normalise(published.get(uri)?.diagnostics ?? []);
                opened = normalise(published.get(freshUri)?.diagnostics ?? []);
            }
            client.notify('textDocument/didClose', { textDocument: { uri: freshUri } });
            published.delete(freshUri);
            stats.checks++;
            // what the server holds besides its own state: the text and its findings
            stats.checkpoints.push({ edits: stats.edits, lines: lines.length, diagnostics: edited.length,
                                     rssKiB: rssKiB(client.pid) });
            if (!settled || !freshSettled)
                stats.mismatches.push(`edit ${stats.edits}: no quiet diagnostics for the ${!settled ? 'edited' : 'fresh'} document`);
            else if (JSON.stringify(edited) !== JSON.stringify(opened))
                stats.mismatches.push(`edit ${stats.edits}: ${firstDifference(edited, opened)}`);
            const late = client.overdue(60000);
            if (late.length) stats.unanswered.push(`edit ${stats.edits}: ${late.slice(0, 5).join(', ')}`);
            if (o.progress) process.stderr.write(`\r${kind}: ${stats.edits} edits, ${stats.checks} checks, ` +
                `${stats.mismatches.length} mismatches, RSS ${rssKiB(client.pid)} KiB   `);
        }
        if (client.exited) break;
    }
    await Promise.race([Promise.all(inflight), sleep(60000)]);
    stats.unanswered.push(...client.overdue(0).map((r) => `at the end: ${r}`));
    stats.errorAnswers = Object.fromEntries(client.errors);
    stats.lines1 = lines.length;
    stats.requests = client.nextId - 1;
    stats.answered = client.answered;
    stats.wallSeconds = (Date.now() - started) / 1000;
    const crashed = client.exited;
    if (!crashed) {
        await client.request('shutdown', null);
        client.notify('exit', null);
    }
    const exit = await Promise.race([client.exitPromise, sleep(5000).then(() => null)]);
    if (!exit) client.child.kill('SIGKILL');
    stats.exit = crashed ? `died during the session (${JSON.stringify(crashed)})` : exit ? `code ${exit.code}${exit.signal ? ` signal ${exit.signal}` : ''}` : 'did not exit within 5 s';
    stats.exitOk = !crashed && exit && exit.code === 0;
    if (!stats.exitOk) stats.stderrTail = client.stderrTail;
    fs.rmSync(base, { recursive: true, force: true });
    return stats;
}

// Resident memory is judged on windows, not single samples: it rises and
// falls by some megabytes as the fresh-open checks and advise/findings come and
// go. Growth: the mean of the last tenth of the samples against the mean of
// the samples between 10% and 20% of the edits.
function judge(s) {
    const samples = s.rss.filter(([, k]) => k);
    const mean = (xs) => xs.reduce((a, [, k]) => a + k, 0) / xs.length;
    const early = samples.filter(([e]) => e >= s.edits * 0.1 && e < s.edits * 0.2);
    const late = samples.filter(([e]) => e >= s.edits * 0.9);
    s.rssEarlyKiB = early.length ? mean(early) : NaN;
    s.rssLateKiB = late.length ? mean(late) : NaN;
    s.rssMaxAfter10KiB = Math.max(...samples.filter(([e]) => e >= s.edits * 0.1).map(([, k]) => k));
    s.rssGrowth = (s.rssLateKiB - s.rssEarlyKiB) / s.rssEarlyKiB;
    s.goals = {
        memoryFlat: s.rssGrowth < 0.05,
        incrementalEqualsFull: s.mismatches.length === 0 && s.checks > 0,
        allAnswered: s.unanswered.length === 0 && s.answered === s.requests,
        exitsCleanly: s.exitOk,
    };
    return Object.values(s.goals).every(Boolean);
}

function print(s) {
    const mib = (k) => (k / 1024).toFixed(1);
    const yes = (b) => (b ? 'met' : 'MISSED');
    console.log(`\n${s.file} (${s.kind}): ${s.lines0} lines at the start, ${s.lines1} at the end`);
    console.log(`  edits                 ${s.edits} in ${s.wallSeconds.toFixed(0)} s`);
    console.log(`  requests answered     ${s.answered}/${s.requests}` +
                (Object.keys(s.errorAnswers).length ? ` (answered with an error: ${JSON.stringify(s.errorAnswers)})` : ''));
    console.log(`  fresh-open checks     ${s.checks}, ${s.mismatches.length} differed`);
    for (const m of s.mismatches.slice(0, 5)) console.log(`    ${m}`);
    for (const u of s.unanswered.slice(0, 5)) console.log(`    unanswered: ${u}`);
    console.log(`  RSS, MiB              ${mib(s.rssEarlyKiB)} mean at 10-20% of the edits, ${mib(s.rssLateKiB)} over the last 10% ` +
                `(${(s.rssGrowth * 100).toFixed(1)}%), at most ${mib(s.rssMaxAfter10KiB)} after 10%`);
    console.log(`  exit                  ${s.exit}`);
    if (s.stderrTail) console.log(`  server stderr (tail):\n    ${s.stderrTail.split('\n').join('\n    ')}`);
    console.log(`  goals: memory flat (< 5%): ${yes(s.goals.memoryFlat)}; incremental = fresh open: ${yes(s.goals.incrementalEqualsFull)}; ` +
                `every request answered: ${yes(s.goals.allAnswered)}; clean exit: ${yes(s.goals.exitsCleanly)}`);
}

async function main() {
    const o = parseArgs(process.argv);
    o.progress = process.stderr.isTTY;
    console.log('advise LSP soak: edits as a person types, with requests in between');
    console.log(`date     ${new Date().toISOString()}`);
    console.log(`machine  ${os.cpus()[0]?.model ?? '?'}, ${os.cpus().length} cores, load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
    console.log(`advise   ${o.advise}`);
    console.log(`session  ${o.edits} edits per file (seed ${o.seed}), a fresh-open comparison every ${o.checkEvery}`);
    const results = [];
    let ok = true;
    for (const kind of o.files) {
        const s = await soakOne(kind, o);
        if (o.progress) process.stderr.write('\n');
        ok = judge(s) && ok;
        print(s);
        results.push(s);
    }
    if (o.json) fs.writeFileSync(o.json, JSON.stringify({ date: new Date().toISOString(), options: o, results }, null, 2));
    console.log(`\nsoak: ${ok ? 'every goal met' : 'a goal was MISSED'}`);
    process.exit(ok ? 0 : 1);
}

main().catch((e) => {
    console.error(`soak: ${e.stack ?? e}`);
    process.exit(2);
});
