// End-to-end test of the advise extension in a real VS Code: code-server
// (VS Code 1.139 in the browser) with the packaged .vsix installed, driven
// by Debian's Chromium through puppeteer-core.
//
//   node vscode_e2e.mjs --code-server ENTRY.js --vsix advise.vsix --advise BINARY [--out DIR] [--screenshot FILE]
//
// 1. Opens the repository's samples/ folder (read only: its files are hashed
//    before and after), opens the advise view container and waits for the
//    Findings view to list the ranked findings: the first group and the first
//    finding are those `advise report` ranks first (also when grouped by
//    rule). Opens the top finding's file: the heat map shades its hot lines.
//    Takes the sidebar screenshot (--screenshot), then opens the HTML report.
// 2. Opens a scratch COPY of two samples in a temporary folder: applies the
//    PY002 quick fix from the Findings view's context menu ("Apply fix"),
//    saves with Ctrl+S, and compares the file with `advise check --fix
//    --select PY002` on another copy; then turns on
//    "editor.codeActionsOnSave": {"source.fixAll.advise": "explicit"}, edits
//    the second sample, saves, and compares it with `advise check --fix`.
//    Before the fixes, a profile copied into the scratch folder must refresh
//    the view with gains, and a killed `advise server` must be restarted;
//    after them, "Open rule documentation" and "Ignore on this line" (saved:
//    the suppression comment is on the line, the finding leaves the view).
// 3. Restarts code-server with workspace trust on and opens an untrusted
//    folder whose settings name another binary (a script that leaves a mark):
//    the findings still come (from the machine's advise.path), the script
//    never ran, "Profile a command" is not offered; in the light theme, the
//    heat map shades lines.
//
// Prints one line per check, then "N passed, M failed"; exits 0 only when
// every check passed. Every wait has a timeout; screenshots of failures go
// to --out.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync }
    from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..', '..', '..');
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
    return acc;
}, []));
const node = process.execPath;
const codeServer = resolve(args['code-server'] ?? '');
const vsix = resolve(args.vsix ?? join(here, '..', '..', 'advise.vsix'));
const advise = resolve(args.advise ?? join(repo, 'build', 'advise'));
const browserPath = args.browser ?? '/usr/bin/chromium';
const WAIT = Number(process.env.ADVISE_VSCODE_E2E_WAIT_MS || 90000);
const started = Date.now();

// ---- checks --------------------------------------------------------------------------

let passed = 0, failed = 0;
function check(ok, what, detail) {
    if (ok) { passed++; console.log(`ok - ${what}`); }
    else { failed++; console.log(`not ok - ${what}${detail !== undefined ? `\n    ${String(detail).replace(/\n/g, '\n    ')}` : ''}`); }
    return ok;
}
class Abort extends Error {}
function require_(ok, what, detail) { if (!check(ok, what, detail)) throw new Abort(what); }
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, f, ms = WAIT, every = 250) {
    const end = Date.now() + ms;
    let last;
    for (;;) {
        try { last = await f(); } catch (e) { last = undefined; }
        if (last) return last;
        if (Date.now() > end) throw new Error(`timed out after ${ms} ms: ${what}`);
        await sleep(every);
    }
}

// ---- a private code-server ------------------------------------------------------------

const work = mkdtempSync(join(tmpdir(), 'advise-vscode-e2e-'));
// screenshots: --out, else a folder of their own, kept when a check failed
const out = resolve(args.out ?? mkdtempSync(join(tmpdir(), 'advise-vscode-e2e-shots-')));
mkdirSync(out, { recursive: true });
const dirs = { user: join(work, 'user'), ext: join(work, 'extensions'), config: join(work, 'config'),
               data: join(work, 'data'), chrome: join(work, 'chrome'), scratch: join(work, 'scratch'), expected: join(work, 'expected') };
for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
mkdirSync(join(dirs.user, 'User'), { recursive: true });
// advise.path is machine-overridable: in code-server (a remote window) the
// machine's settings give it, as a user would set it there
mkdirSync(join(dirs.user, 'Machine'), { recursive: true });
writeFileSync(join(dirs.user, 'Machine', 'settings.json'), JSON.stringify({
    'advise.path': advise,
    ...(process.env.ADVISE_VSCODE_E2E_TRACE ? { 'advise.trace.server': 'verbose' } : {}),   // for debugging: the messages in the logs
}, null, 2));
writeFileSync(join(dirs.user, 'User', 'settings.json'), JSON.stringify({
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.colorTheme': 'Default Dark Modern',
    'extensions.ignoreRecommendations': true,
    'extensions.autoCheckUpdates': false,
    'update.mode': 'none',
    'telemetry.telemetryLevel': 'off',
    'window.restoreWindows': 'none',
    'chat.disableAIFeatures': true,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    'editor.minimap.enabled': false,
    'files.autoSave': 'off',
    'git.enabled': false,
}, null, 2));
const env = { ...process.env, XDG_CONFIG_HOME: dirs.config, XDG_DATA_HOME: dirs.data, PATH: `${dirname(node)}:${process.env.PATH}` };
const csArgs = ['--user-data-dir', dirs.user, '--extensions-dir', dirs.ext];

function freePort() {
    return new Promise((res, rej) => {
        const s = createServer();
        s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => res(port)); });
        s.on('error', rej);
    });
}

function hashTree(root) {
    const h = createHash('sha256');
    const walk = (d) => {
        for (const name of readdirSync(d).sort()) {
            const p = join(d, name);
            if (statSync(p).isDirectory()) walk(p);
            else h.update(relative(root, p)).update(readFileSync(p));
        }
    };
    walk(root);
    return h.digest('hex');
}

let server, browser, page;
const cleanup = async () => {
    try { await browser?.close(); } catch { /* gone */ }
    if (server && server.exitCode === null) {
        server.kill('SIGTERM');
        await Promise.race([new Promise((r) => server.once('exit', r)), sleep(5000)]);
        if (server.exitCode === null) server.kill('SIGKILL');
    }
};

async function shot(name) {
    try { await page?.screenshot({ path: join(out, `${name}.png`) }); } catch { /* no page */ }
}

// ---- the workbench, as a person sees it ----------------------------------------------------

/** the rows of the tree in the pane titled `title`: [{label, level, index}] in screen order */
async function rowsOf(title) {
    return page.evaluate((title) => {
        const panes = [...document.querySelectorAll('.pane')];
        const pane = panes.find((p) => p.querySelector('.pane-header')?.getAttribute('aria-label')?.startsWith(title) ||
                                       p.querySelector('.pane-header .title')?.textContent?.trim() === title);
        if (!pane) return null;
        return [...pane.querySelectorAll('.monaco-list-row')]
            .map((r) => ({ label: r.getAttribute('aria-label') ?? '', level: Number(r.getAttribute('aria-level') ?? 0),
                           index: Number(r.getAttribute('data-index') ?? 0), text: r.textContent ?? '',
                           expanded: r.getAttribute('aria-expanded') === 'true' }))
            .sort((a, b) => a.index - b.index);
    }, title);
}

/** waits until the rows of a view stay the same for `quiet` ms (a refresh after a save has landed) */
async function settle(title, quiet = 1500, ms = 20000) {
    const end = Date.now() + ms;
    let last = JSON.stringify(await rowsOf(title)), since = Date.now();
    while (Date.now() < end) {
        await sleep(250);
        const now = JSON.stringify(await rowsOf(title));
        if (now !== last) { last = now; since = Date.now(); }
        else if (Date.now() - since >= quiet) return;
    }
}

async function openAdviseContainer() {
    const item = await until('the advise activity bar item',
                             () => page.$('.activitybar li.action-item:has(a[class*="view-extension-advise"])'));
    const selected = await item.evaluate((e) => e.getAttribute('aria-selected') === 'true');
    if (!selected) await item.click();
    await until('the Findings view', () => rowsOf('Findings'), 20000);
}

async function runCommand(title) {
    await page.keyboard.press('F1');
    await until('the command palette', () => page.$('.quick-input-widget:not([style*="display: none"]) input'), 10000);
    await page.keyboard.type(title);
    await sleep(400);
    await page.keyboard.press('Enter');
    await sleep(300);
}

/** the items of the open context menu (VS Code draws it, in a shadow root on the web) */
async function menuItems() {
    const items = await page.$$('pierce/.monaco-menu .action-item .action-label');
    const out = [];
    for (const e of items) out.push({ e, text: (await e.evaluate((x) => x.textContent ?? '')).trim() });
    return out.filter((x) => x.text);
}

/**
 * Clicks the open menu's item named `text` as a person does: the pointer rests
 * on the item first. A click that arrived with no hover before it was not
 * taken (the menu stayed open; seen on an idle machine and in CI); if the menu
 * still stays open, Enter runs the item the pointer highlighted.
 * True when the menu closed.
 */
async function clickMenuItem(menu, text) {
    const item = menu.find((m) => m.text === text);
    if (!item) return false;
    const closed = () => until('the context menu to close', async () => ((await menuItems()).length ? null : true), 3000)
        .catch(() => false);
    await item.e.hover();
    await sleep(150);
    await item.e.click();
    if (await closed()) return true;
    console.log(`# the menu stayed open after a click on "${text}": Enter`);
    await page.keyboard.press('Enter');
    return closed();
}

/** drags the sash at the sidebar's right edge so that the sidebar is `width` pixels wide */
async function widenSidebar(width) {
    const side = await (await page.$('.part.sidebar'))?.boundingBox();
    if (!side) return;
    const edge = side.x + side.width;
    const sashes = await page.$$('.monaco-sash.vertical');
    for (const sash of sashes) {
        const box = await sash.boundingBox();
        if (!box || box.height < 300 || Math.abs(box.x + box.width / 2 - edge) > 8) continue;
        const y = box.y + box.height / 2;
        await page.mouse.move(box.x + box.width / 2, y);
        await page.mouse.down();
        await page.mouse.move(side.x + width, y, { steps: 12 });
        await page.mouse.up();
        return;
    }
}

async function openWorkbench(folder) {
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(folder)}`, { waitUntil: 'domcontentloaded' });
    await until('the workbench', () => page.$('.monaco-workbench .part.editor'), WAIT);
}

/** the `advise server` processes this test's code-server started (its descendants) */
function adviseServers() {
    const parent = new Map();
    for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
        try {
            const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
            parent.set(Number(pid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
        } catch { /* gone */ }
    }
    const out = [];
    for (const pid of parent.keys()) {
        let p = pid, mine = false;
        for (let i = 0; i < 64 && p > 1; i++) { if (p === server.pid) { mine = true; break; } p = parent.get(p) ?? 0; }
        if (!mine) continue;
        try {
            const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
            if (argv[0] === advise && argv[1] === 'server') out.push(pid);
        } catch { /* gone */ }
    }
    return out;
}

// ---- expectations from the CLI --------------------------------------------------------------

function topOfReport(cwd) {
    const r = spawnSync(advise, ['report'], { cwd, encoding: 'utf8', maxBuffer: 64 << 20 });
    const m = /^#1\s+\S+\s+\S+\s+\S+\s+(\S+):(\d+):\d+\s+(\S+)/m.exec(r.stdout ?? '');
    return m ? { path: m[1], line: Number(m[2]), code: m[3] } : null;
}

function fixedCopy(source, name, extraText, select) {
    const dir = mkdtempSync(join(dirs.expected, 'x-'));
    const file = join(dir, name);
    writeFileSync(file, readFileSync(source, 'utf8') + extraText);
    const r = spawnSync(advise, ['check', '--fix', ...(select ? ['--select', select] : []), file], { cwd: dir, encoding: 'utf8' });
    if (r.status === 2) throw new Error(`advise check --fix: ${r.stderr}`);
    return readFileSync(file, 'utf8');
}

// ---- the test ---------------------------------------------------------------------------

let port;
/** starts code-server on a free port with `extra` options (after stopping the one running) */
async function startCodeServer(extra) {
    if (server && server.exitCode === null) {
        server.kill('SIGTERM');
        await Promise.race([new Promise((r) => server.once('exit', r)), sleep(10000)]);
    }
    port = await freePort();
    server = spawn(node, [codeServer, ...csArgs, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry',
                          '--disable-update-check', ...extra], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let serverLog = '';
    server.stdout.on('data', (d) => { serverLog += d; });
    server.stderr.on('data', (d) => { serverLog += d; });
    await until('code-server listening', () => /HTTP server listening/.test(serverLog), 60000, 100);
    console.log(`# code-server on 127.0.0.1:${port} after ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** the lines of the visible editor whose gutter holds a heat map bar (an SVG data URI) */
async function heatGutterLines() {
    // glyph margin decorations: div.cgmr in the editor's margin (.glyph-margin-widgets in recent versions)
    return page.evaluate(() => [...document.querySelectorAll('.editor-instance .cgmr')]
        .filter((e) => (getComputedStyle(e).backgroundImage || '').includes('data:image/svg+xml')).length);
}

try {
    for (const [what, p] of [['code-server', codeServer], ['the .vsix', vsix], ['the advise binary', advise], ['Chromium', browserPath]])
        require_(existsSync(p), `${what} is there: ${p}`);

    // -- install the extension as a user would --
    const install = spawnSync(node, [codeServer, ...csArgs, '--install-extension', vsix], { env, encoding: 'utf8', timeout: 120000 });
    require_(install.status === 0 && /successfully installed/.test(install.stdout + install.stderr),
             'code-server --install-extension advise.vsix', `${install.stdout}\n${install.stderr}`);

    await startCodeServer(['--disable-workspace-trust']);
    browser = await puppeteer.launch({
        executablePath: browserPath, headless: true, userDataDir: dirs.chrome,
        args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--window-size=1600,1000'],
        defaultViewport: { width: 1600, height: 1000 },
    });
    page = await browser.newPage();
    const consoleErrors = [];
    page.on('console', (m) => { if (m.type() === 'error' && /advise/i.test(m.text())) consoleErrors.push(m.text()); });

    // ---- 1. the repository's samples: the ranked findings ----
    const samples = join(repo, 'samples');
    const before = hashTree(samples);
    const top = topOfReport(samples);
    require_(top, 'advise report ranks a first finding in samples/');
    await openWorkbench(samples);
    await openAdviseContainer();
    const t0 = Date.now();
    const rows = await until('the Findings view to list findings', async () => {
        const r = await rowsOf('Findings');
        return r && r.filter((x) => x.level === 2).length >= 10 ? r : null;
    });
    console.log(`# findings listed ${((Date.now() - t0) / 1000).toFixed(1)} s after the view opened`);
    const groups = rows.filter((r) => r.level === 1), items = rows.filter((r) => r.level === 2);
    check(groups.length >= 2 && new Set(groups.map((g) => g.text)).size === groups.length, 'the Findings view groups the findings by file', groups.map((g) => g.label).join('\n'));
    const topFile = top.path.replace(/^samples\//, '');
    check(groups[0]?.label.startsWith(topFile) || groups[0]?.text.startsWith(topFile),
          `the first group is the file of advise report's #1 (${topFile})`, groups[0] && JSON.stringify(groups[0]));
    check(items[0]?.label.includes(top.code) && items[0]?.label.includes(`line ${top.line}`),
          `the first finding is advise report's #1 (${top.code} at line ${top.line})`, items[0]?.label);
    check(/ — about \d[\d.]* (ns|µs|ms|s)/.test(items[0]?.label ?? ''), 'the first finding says its estimated gain', items[0]?.label);
    check(items.some((r) => / — (about|costs) /.test(r.label)) && items.some((r) => /^(error|warning|info|hint) [A-Z]{2}\d{3}: /.test(r.label)),
          'findings carry their severity, code and gain', items.slice(0, 5).map((r) => r.label).join('\n'));

    // grouped by rule, then by file again (the view title's toggle, here from the palette)
    await runCommand('advise: Group findings by rule');
    const byRule = await until('the findings grouped by rule', async () => {
        const r = await rowsOf('Findings');
        const g = r?.find((x) => x.level === 1);
        return g && g.text.startsWith(`${top.code} `) ? g : null;
    }, 15000).catch(() => null);
    check(byRule, `grouped by rule, the first group is ${top.code}'s`, byRule?.text);
    await runCommand('advise: Group findings by file');
    await until('the findings grouped by file again', async () => {
        const r = await rowsOf('Findings');
        return r?.find((x) => x.level === 1)?.text.startsWith(topFile);
    }, 15000).catch(() => null);

    // the Profile view, when the server reports profiles
    await page.evaluate(() => {
        const header = [...document.querySelectorAll('.pane-header')].find((h) => h.textContent?.includes('Profile'));
        if (header && header.getAttribute('aria-expanded') === 'false') header.click();
    });
    const profileRows = await until('the Profile view', () => rowsOf('Profile'), 15000).catch(() => []);
    console.log(`# Profile view: ${profileRows.length} rows${profileRows[0] ? `, first: ${profileRows[0].label}` : ''}`);

    // open the top finding (a click reveals its line) and widen the sidebar for the picture
    const topRow = await page.$(`.pane .monaco-list-row[data-index="${items[0].index}"]`);
    await topRow?.click();
    await until('the top finding\'s file in the editor', () => page.$(`.tab[aria-label^="${topFile.split('/').pop()}"]`), 20000)
        .then(() => check(true, 'clicking the top finding opens its file'))
        .catch((e) => check(false, 'clicking the top finding opens its file', e.message));
    await widenSidebar(780);
    await sleep(3000); // diagnostics, lenses and the heat map arrive
    const shaded = await until('heat map bars in the gutter', () => heatGutterLines(), 15000).catch(() => 0);
    check(shaded >= 2, `the heat map shades the hot lines of ${topFile.split('/').pop()} in the gutter (${shaded} visible)`);
    if (args.screenshot) {
        await page.screenshot({ path: resolve(args.screenshot) });
        console.log(`# screenshot: ${resolve(args.screenshot)}`);
    }
    await shot('1-samples');

    // the HTML report in a webview (advise report --format html, run by the extension)
    await runCommand('advise: Open report');
    const report = await until('the report\'s webview tab', () => page.$('.tab[aria-label^="advise report: samples"]'), 60000)
        .catch(() => null);
    check(report, 'advise: Open report shows the HTML report in a webview tab');

    // ---- 2. a scratch copy laid out as the repository: a profile arrives, the server crashes,
    //         a quick fix from the Findings view, then fix-all on save ----
    const quickName = 'benchmark_matmul.py', saveName = 'train_classifier.py';
    const scratchDir = join(dirs.scratch, 'samples', 'python');
    mkdirSync(scratchDir, { recursive: true });
    copyFileSync(join(samples, 'python', quickName), join(scratchDir, quickName));
    copyFileSync(join(samples, 'python', saveName), join(scratchDir, saveName));
    const original = readFileSync(join(scratchDir, quickName), 'utf8');
    const expectedQuick = fixedCopy(join(samples, 'python', quickName), quickName, '', 'PY002');
    check(expectedQuick !== original, 'advise check --fix --select PY002 changes the sample (the fix to expect)');
    await openWorkbench(dirs.scratch);
    await openAdviseContainer();
    const unprofiled = await until('the scratch findings in the Findings view', async () => {
        const r = await rowsOf('Findings');
        return r && r.some((x) => x.level === 2 && x.label.includes('PY002')) ? r : null;
    });
    check(!unprofiled.some((x) => x.level === 2 && x.label.includes(' — about ')), 'without a profile no finding shows a gain',
          unprofiled.map((x) => x.label).join('\n'));

    // a profile arrives (written beside, then renamed, as advise profile does): the server
    // re-reads the folder and tells the client, which refreshes the view
    const profiles = join(dirs.scratch, '.advise', 'profiles');
    mkdirSync(profiles, { recursive: true });
    copyFileSync(join(samples, 'profiles', 'benchmark_matmul.json'), join(profiles, '.incoming.tmp'));
    renameSync(join(profiles, '.incoming.tmp'), join(profiles, 'benchmark_matmul.json'));
    const tProfile = Date.now();
    await until('the Findings view to show the new profile\'s gains', async () => {
        const r = await rowsOf('Findings');
        return r && r.some((x) => x.level === 2 && x.label.includes(' — about ')) ? r : null;
    }, 30000).then(() => check(true, `a new profile refreshes the Findings view with gains (${((Date.now() - tProfile) / 1000).toFixed(1)} s)`))
        .catch((e) => check(false, 'a new profile refreshes the Findings view with gains', e.message));

    // the server crashes: the client restarts it (after its back-off) and the views come back
    const pids = adviseServers();
    check(pids.length === 1, 'one advise server runs for the window', pids.join(' '));
    if (pids.length) {
        process.kill(pids[0], 'SIGKILL');
        const restarted = await until('a new advise server after the crash', () => {
            const now = adviseServers();
            return now.length && !now.includes(pids[0]) ? now : null;
        }, 30000).catch(() => null);
        check(restarted, 'the client restarts advise server after it was killed', restarted?.join(' '));
        await sleep(1500);
        const back = await until('the findings after the restart', async () => {
            const r = await rowsOf('Findings');
            return r && r.some((x) => x.level === 2 && x.label.includes('PY002')) ? r : null;
        }, 30000).catch(() => null);
        check(back, 'the Findings view lists the findings again after the restart');
    }

    // after the restart the view refreshes as diagnostics come back: a menu
    // opened on a row that is then re-rendered loses the click (seen in CI),
    // so the view settles first and the fix is tried again if it did not land
    let dirty = null;
    for (let attempt = 1; attempt <= 3 && !dirty; attempt++) {
        await settle('Findings');
        const py002 = await until('PY002 in the Findings view', async () => {
            const r = await rowsOf('Findings');
            return r?.find((x) => x.level === 2 && x.label.includes('PY002'));
        });
        const row = await page.$(`.pane .monaco-list-row[data-index="${py002.index}"]`);
        await row.click({ button: 'right' });
        const menu = await until('the context menu', async () => { const m = await menuItems(); return m.length ? m : null; }, 10000);
        if (attempt === 1)
            check(['Apply fix', 'Ignore on this line', 'Open rule documentation'].every((t) => menu.some((m) => m.text === t)),
                  'the finding\'s context menu offers Apply fix, Ignore on this line, Open rule documentation', menu.map((m) => m.text).join(', '));
        await clickMenuItem(menu, 'Apply fix');
        dirty = await until('the fix in the editor (dirty)', () => page.$(`.tab.dirty[aria-label^="${quickName}"]`),
                            attempt < 3 ? 10000 : 30000).catch((e) => { if (attempt === 3) throw e; return null; });
        if (!dirty) await page.keyboard.press('Escape');
    }
    await page.keyboard.down('Control'); await page.keyboard.press('s'); await page.keyboard.up('Control');
    const fixed = await until('the fixed file on disk', () => {
        const t = readFileSync(join(scratchDir, quickName), 'utf8');
        return t !== original ? t : null;
    }, 20000).catch(() => readFileSync(join(scratchDir, quickName), 'utf8'));
    check(fixed === expectedQuick, 'Apply fix (PY002) from the Findings view, saved, equals advise check --fix --select PY002',
          diffHint(expectedQuick, fixed));
    await shot('2-quick-fix');

    // fix-all on save: the client advertises source.fixAll.advise and VS Code runs it on save
    mkdirSync(join(dirs.scratch, '.vscode'), { recursive: true });
    writeFileSync(join(dirs.scratch, '.vscode', 'settings.json'),
                  JSON.stringify({ 'editor.codeActionsOnSave': { 'source.fixAll.advise': 'explicit' } }, null, 2));
    const saveOriginal = readFileSync(join(scratchDir, saveName), 'utf8');
    const typed = '# saved by the e2e test';
    const expectedSave = fixedCopy(join(samples, 'python', saveName), saveName, typed, null);
    check(expectedSave !== saveOriginal + typed, 'advise check --fix changes the second sample (the fixes to expect)');
    await sleep(1500); // the settings file is watched
    // quick open: Enter only once the file is in the list (its search is slow on a loaded
    // machine, and an Enter before it opens nothing); tried again if the editor did not open it
    for (let attempt = 1; ; attempt++) {
        await page.keyboard.press('Escape');
        await page.keyboard.down('Control'); await page.keyboard.press('p'); await page.keyboard.up('Control');
        await until('quick open', () => page.$('.quick-input-widget:not([style*="display: none"]) input'), 10000);
        await page.keyboard.type(saveName);
        await until(`${saveName} in the quick open list`, () => page.$$eval('.quick-input-widget .monaco-list-row',
            (rows, name) => rows.some((r) => (r.getAttribute('aria-label') ?? '').includes(name)), saveName), 20000)
            .catch(() => null);
        await page.keyboard.press('Enter');
        const opened = await until(`${saveName} in the editor`, () => page.$(`.tab.active[aria-label^="${saveName}"]`),
                                   attempt < 3 ? 10000 : 20000).catch((e) => { if (attempt === 3) throw e; return null; });
        if (opened) break;
    }
    await sleep(500);
    await page.click('.editor-instance .view-lines');
    await page.keyboard.down('Control'); await page.keyboard.press('End'); await page.keyboard.up('Control');
    await page.keyboard.type(typed);
    await sleep(2500); // the server analyses the edit
    await page.keyboard.down('Control'); await page.keyboard.press('s'); await page.keyboard.up('Control');
    const saved = await until('the saved file with its fixes', () => {
        const t = readFileSync(join(scratchDir, saveName), 'utf8');
        return t !== saveOriginal && t !== saveOriginal + typed ? t : null;
    }, 20000).catch(() => readFileSync(join(scratchDir, saveName), 'utf8'));
    check(saved === expectedSave, 'editor.codeActionsOnSave source.fixAll.advise applies the safe fixes on save (= advise check --fix)',
          diffHint(expectedSave, saved));
    await shot('3-fix-all-on-save');

    // the rule's documentation, then "Ignore on this line", from a finding's context menu
    // a menu opened on a row that the view then re-renders never shows or
    // loses the click (seen in CI): settle, and try again up to three times
    const menuOf = async (code) => {
        for (let attempt = 1; ; attempt++) {
            await settle('Findings');
            const r = await until(`${code} in the Findings view`, async () =>
                (await rowsOf('Findings'))?.find((x) => x.level === 2 && x.label.includes(` ${code}: `)), 30000);
            await (await page.$(`.pane .monaco-list-row[data-index="${r.index}"]`)).click({ button: 'right' });
            const menu = await until('the context menu', async () => { const m = await menuItems(); return m.length ? m : null; }, 10000)
                .catch((e) => { if (attempt === 3) throw e; return null; });
            if (menu) return menu;
            await page.keyboard.press('Escape');
        }
    };
    // the first file's group is long: fold it so that the second file's findings are on screen
    const firstGroup = (await rowsOf('Findings')).find((x) => x.level === 1 && x.text.includes(quickName));
    if (firstGroup?.expanded) await (await page.$(`.pane .monaco-list-row[data-index="${firstGroup.index}"]`)).click();
    let docTab = null;
    for (let attempt = 1; attempt <= 3 && !docTab; attempt++) {
        await clickMenuItem(await menuOf('PY001'), 'Open rule documentation');
        docTab = await until('the rule page', () => page.$('.tab[aria-label*="PY001"]'), attempt < 3 ? 10000 : 20000).catch(() => null);
        if (!docTab) await page.keyboard.press('Escape');
    }
    check(docTab, 'Open rule documentation shows PY001\'s page', docTab ? await docTab.evaluate((e) => e.getAttribute('aria-label')) : undefined);
    const beforeIgnore = readFileSync(join(scratchDir, saveName), 'utf8');
    await clickMenuItem(await menuOf('PY001'), 'Ignore on this line');
    await until('the suppression in the editor (dirty)', () => page.$(`.tab.dirty[aria-label^="${saveName}"]`), 30000);
    await page.keyboard.down('Control'); await page.keyboard.press('s'); await page.keyboard.up('Control');
    const ignored = await until('the suppression on disk', () => {
        const t = readFileSync(join(scratchDir, saveName), 'utf8');
        return t !== beforeIgnore ? t : null;
    }, 20000).catch(() => beforeIgnore);
    const marked = ignored.split('\n').filter((l) => /# advise: ignore\[PY001\]/.test(l));
    check(marked.length === 1 && marked[0].includes('loss.item()'),
          'Ignore on this line writes "# advise: ignore[PY001]" on the loss.item() line', marked.join('\n') || diffHint(beforeIgnore, ignored));
    const gone = await until('PY001 gone from the Findings view', async () => {
        const r = await rowsOf('Findings');
        return r && r.some((x) => x.level === 2) && !r.some((x) => x.label.includes(' PY001: ')) ? r : null;
    }, 20000).catch(() => null);
    check(gone, 'after the save the Findings view no longer lists the ignored PY001');

    // ---- 3. Restricted Mode (workspace trust on, the folder untrusted), in the light theme ----
    // the workspace names a binary of its own: it must not be used; profiling must not be offered
    const untrusted = join(work, 'untrusted');
    mkdirSync(join(untrusted, 'samples', 'python'), { recursive: true });
    mkdirSync(join(untrusted, '.advise', 'profiles'), { recursive: true });
    mkdirSync(join(untrusted, '.vscode'), { recursive: true });
    copyFileSync(join(samples, 'python', quickName), join(untrusted, 'samples', 'python', quickName));
    copyFileSync(join(samples, 'profiles', 'benchmark_matmul.json'), join(untrusted, '.advise', 'profiles', 'benchmark_matmul.json'));
    writeFileSync(join(untrusted, '.vscode', 'settings.json'), JSON.stringify({ 'advise.path': join(untrusted, 'not-advise') }));
    writeFileSync(join(untrusted, 'not-advise'), '#!/bin/sh\ntouch "$(dirname "$0")/RAN"\nexit 1\n', { mode: 0o755 });
    const userSettings = join(dirs.user, 'User', 'settings.json');
    writeFileSync(userSettings, JSON.stringify({
        ...JSON.parse(readFileSync(userSettings, 'utf8')),
        'workbench.colorTheme': 'Default Light Modern',
        'security.workspace.trust.enabled': true,
        'security.workspace.trust.startupPrompt': 'never',
        'security.workspace.trust.banner': 'never',
        'security.workspace.trust.untrustedFiles': 'open',
    }, null, 2));
    await startCodeServer([]);
    await openWorkbench(untrusted);
    await openAdviseContainer();
    const restricted = await until('findings in Restricted Mode', async () => {
        const r = await rowsOf('Findings');
        return r && r.some((x) => x.level === 2) ? r : null;
    }, WAIT).catch(() => null);
    check(restricted, 'Restricted Mode: advise runs with the binary of the machine\'s settings, not the workspace\'s');
    check(!existsSync(join(untrusted, 'RAN')), 'Restricted Mode: the binary named by the workspace never ran');
    await page.keyboard.press('F1');
    await until('the command palette', () => page.$('.quick-input-widget:not([style*="display: none"]) input'), 10000);
    await page.keyboard.type('advise: ');
    await sleep(800);
    const offered = await page.$$eval('.quick-input-widget .monaco-list-row', (rows) => rows.map((r) => r.getAttribute('aria-label') ?? ''));
    await page.keyboard.press('Escape');
    check(offered.some((l) => l.includes('Check workspace')) && !offered.some((l) => l.includes('Profile a command')),
          'Restricted Mode: the palette offers advise\'s commands but not "Profile a command"', offered.join('\n'));
    // open the file from its hottest finding (PR001 sits on the line with most of the GPU time)
    const hot = (await rowsOf('Findings')).find((x) => x.level === 2 && x.label.includes('PR001'))
        ?? (await rowsOf('Findings')).find((x) => x.level === 2);
    await (await page.$(`.pane .monaco-list-row[data-index="${hot.index}"]`))?.click();
    await until(`${quickName} in the editor`, () => page.$(`.tab.active[aria-label^="${quickName}"]`), 20000).catch(() => null);
    const lightShaded = await until('heat map bars in the light theme', () => heatGutterLines(), 20000).catch(() => 0);
    check(lightShaded >= 2, `the heat map shades lines in the light theme too (${lightShaded} visible)`);
    await widenSidebar(700);
    await sleep(1500);
    await shot('4-restricted-light');

    check(hashTree(samples) === before, 'the repository\'s samples/ are unchanged');
    check(consoleErrors.length === 0, 'no advise error in the browser console', consoleErrors.slice(0, 5).join('\n'));
} catch (e) {
    check(false, e instanceof Abort ? `stopped: ${e.message}` : `the run went through without an exception`, e instanceof Abort ? undefined : e.stack);
    await shot('failure');
} finally {
    await cleanup();
    if (!process.env.ADVISE_VSCODE_E2E_KEEP) rmSync(work, { recursive: true, force: true, maxRetries: 3 });
    if (!args.out && !failed) rmSync(out, { recursive: true, force: true });
}

function diffHint(want, got) {
    if (want === got) return undefined;
    const a = want.split('\n'), b = got.split('\n');
    for (let i = 0; i < Math.max(a.length, b.length); i++)
        if (a[i] !== b[i]) return `first difference at line ${i + 1}:\n  want: ${a[i]}\n  got:  ${b[i]}`;
    return 'different';
}

console.log(`# ${((Date.now() - started) / 1000).toFixed(1)} s in all${failed || args.out ? `; screenshots in ${out}` : ''}`);
console.log(`${failed ? 'FAIL' : 'PASS'}: the advise extension in code-server`);
console.log(`vscode-e2e: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
