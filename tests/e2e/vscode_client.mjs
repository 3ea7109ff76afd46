// End-to-end test of `advise server` with the client libraries VS Code's
// language client is built on (vscode-jsonrpc, vscode-languageserver-protocol,
// vscode-languageserver-textdocument, pinned in package-lock.json).
//
//   node tests/e2e/vscode_client.mjs [ADVISE_BINARY [SAMPLE.py]]
//
// The binary comes from argv[2], else $ADVISE_BINARY, else build/advise; the
// sample from argv[3], else $ADVISE_SAMPLE, else samples/python/benchmark_matmul.py.
// The sample is copied to a temporary folder (the workspace), so nothing in
// the repository changes. Two sessions, each with its own server process:
//
//  1. push: capabilities like VS Code's without pull diagnostics; opens the
//     sample, waits for publishDiagnostics, checks the codes and lines, hovers
//     a finding, asks for the code actions of the PY002 diagnostic, resolves
//     and applies the safe quick fix to its own copy of the document (checked
//     against source.fixAll and `advise check --fix`), sends it as incremental
//     changes, checks the new text and the new diagnostics, applies "Ignore
//     PY003 on this line" (sent as the whole text), saves, closes (diagnostics
//     cleared), shutdown + exit (status 0).
//  2. pull: VS Code's capabilities with textDocument.diagnostic, on a file
//     with non-ASCII text (a surrogate pair in utf-16) before each finding:
//     textDocument/diagnostic with resultId and "unchanged" reports, a quick
//     fix applied in utf-16 columns, hover, nothing pushed, shutdown + exit.
//  3. profile: pull diagnostics again, in a workspace laid out as the
//     repository (samples/python/benchmark_matmul.py) with no profile yet:
//     the sample's H200 profile is copied into .advise/profiles/ mid-session
//     (written beside, then renamed, as a profiler does); the server must
//     send workspace/diagnostic/refresh and workspace/codeLens/refresh within
//     a second (ADVISE_E2E_TIMEOUT_MS / 10 when that is longer, for sanitizer
//     builds), and the next pull carries the measured evidence and the gain;
//     code lenses, a hover with figures and advise/findings with progress.
//
// Prints one line per check, then a PASS/FAIL line and "N passed, M failed";
// exits 0 only when every check passed. Every wait has a timeout.

import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, mkdtempSync, mkdirSync, readFileSync, renameSync, writeFileSync, rmSync, copyFileSync }
    from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname, basename } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as P from 'vscode-languageserver-protocol/node.js';
import { TextDocument } from 'vscode-languageserver-textdocument';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');
const binary = resolve(process.argv[2] || process.env.ADVISE_BINARY || join(repo, 'build', 'advise'));
const samplePath = resolve(process.argv[3] || process.env.ADVISE_SAMPLE ||
                           join(repo, 'samples', 'python', 'benchmark_matmul.py'));
const WAIT_MS = Number(process.env.ADVISE_E2E_TIMEOUT_MS || 10000); // one wait for the server
const TOTAL_MS = 60000;                                               // the whole run

// ---- checks ------------------------------------------------------------------

let passed = 0, failed = 0;
function check(ok, what, detail) {
    if (ok) {
        passed++;
        console.log(`ok - ${what}`);
    } else {
        failed++;
        console.log(`not ok - ${what}${detail !== undefined ? `\n    ${String(detail).replace(/\n/g, '\n    ')}` : ''}`);
    }
    return ok;
}
class Abort extends Error {}
// a check the rest of the run depends on
function require_(ok, what, detail) {
    if (!check(ok, what, detail)) throw new Abort(what);
}
function show(v) { return JSON.stringify(v, null, 1)?.slice(0, 2000); }

function withTimeout(promise, ms, what) {
    let timer;
    return Promise.race([
        promise.finally(() => clearTimeout(timer)),
        new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms); }),
    ]);
}

try {
    accessSync(binary, constants.X_OK);
} catch {
    console.log(`not ok - the server binary is executable: ${binary}`);
    console.log(`FAIL: vscode-languageserver-protocol client against ${binary}`);
    console.log('vscode-client: 0 passed, 1 failed');
    process.exit(1);
}

// ---- the workspace -------------------------------------------------------------

const workspace = mkdtempSync(join(tmpdir(), 'advise-e2e-vscode-'));
const workspaceUri = pathToFileURL(workspace).href;
const filePath = join(workspace, basename(samplePath));
copyFileSync(samplePath, filePath);
const uri = pathToFileURL(filePath).href;
const originalText = readFileSync(filePath, 'utf8');

// ---- a server and the client's side of it ------------------------------------------

const servers = [];
const logMessages = [];

// Starts `advise server` and connects to it as VS Code does; answers the
// server's requests as VS Code would.
function startServer(name) {
    const server = spawn(binary, ['server'], { cwd: workspace, stdio: ['pipe', 'pipe', 'pipe'] });
    const s = { name, server, stderr: '', spawnError: null, published: new Map(), pushes: 0, waiters: [] };
    server.stderr.on('data', (d) => { s.stderr += d; });
    server.on('error', (e) => { s.spawnError = e; });
    s.exited = new Promise((res) => server.on('exit', (code, signal) => res({ code, signal })));
    // the writer tells when a message went out, for waits on our own answers
    const writer = new P.StreamMessageWriter(server.stdin);
    const write = writer.write.bind(writer);
    s.written = [];
    writer.write = async (msg) => {
        await write(msg);
        s.written.push(msg);
        for (const w of s.writeWaiters) if (w.test(msg)) w.resolve(msg);
    };
    s.writeWaiters = [];
    s.sent = (test, what) => {
        const done = s.written.find(test);
        if (done) return Promise.resolve(done);
        return withTimeout(new Promise((resolve) => s.writeWaiters.push({ test, resolve })), WAIT_MS, what);
    };
    const connection = P.createProtocolConnection(new P.StreamMessageReader(server.stdout), writer);
    s.connection = connection;
    // pushed diagnostics, kept per URI; waiters are woken on each notification
    connection.onNotification(P.PublishDiagnosticsNotification.type, (params) => {
        s.pushes++;
        s.published.set(params.uri, params);
        const still = [];
        for (const w of s.waiters) (w.test(params) ? w.resolve(params) : still.push(w));
        s.waiters = still;
    });
    connection.onNotification(P.LogMessageNotification.type, (p) => logMessages.push({ server: name, ...p }));
    connection.onNotification(P.ShowMessageNotification.type, (p) => logMessages.push({ server: name, ...p }));
    // the settings: none, as for a user who set nothing; s.holdConfiguration()
    // keeps the answer back until s.releaseConfiguration()
    let held = null;
    s.holdConfiguration = () => { held = { release: null, promise: null }; held.promise = new Promise((r) => { held.release = r; }); };
    s.releaseConfiguration = () => { if (held) held.release(); };
    s.configurationRequests = 0;
    connection.onRequest(P.ConfigurationRequest.type, async (params) => {
        s.configurationRequests++;
        if (held) await held.promise;
        return params.items.map(() => ({}));
    });
    s.refreshes = 0; // VS Code pulls its open documents again on a refresh
    s.refreshWaiters = [];
    s.refreshed = (what) => withTimeout(new Promise((r) => s.refreshWaiters.push({ what, r })), WAIT_MS, what);
    const wake = (what) => {
        const still = [];
        for (const w of s.refreshWaiters) (w.what === what ? w.r(performance.now()) : still.push(w));
        s.refreshWaiters = still;
    };
    connection.onRequest(P.DiagnosticRefreshRequest.type, () => { s.refreshes++; wake('diagnostic refresh'); return null; });
    s.lensRefreshes = 0;
    connection.onRequest(P.CodeLensRefreshRequest.type, () => { s.lensRefreshes++; wake('codeLens refresh'); return null; });
    s.progress = [];
    connection.onNotification('$/progress', (p) => s.progress.push(p));
    connection.onRequest(P.WorkDoneProgressCreateRequest.type, () => null);
    connection.onRequest(P.RegistrationRequest.type, () => null);
    connection.onRequest(P.UnregistrationRequest.type, () => null);
    connection.onRequest(P.ApplyWorkspaceEditRequest.type,
                         () => ({ applied: false, failureReason: 'not expected in this test' }));
    connection.listen();
    s.request = (type, params, what) => withTimeout(connection.sendRequest(type, params), WAIT_MS, what);
    s.notify = (type, params) => connection.sendNotification(type, params);
    s.diagnosticsFor = (test, what) => {
        for (const p of s.published.values()) if (test(p)) return Promise.resolve(p);
        let w;
        const p = new Promise((resolve) => { w = { test, resolve }; s.waiters.push(w); });
        return withTimeout(p, WAIT_MS, what).finally(() => { s.waiters = s.waiters.filter((x) => x !== w); });
    };
    s.initialize = async (caps, root = workspace) => {
        if (s.spawnError) throw s.spawnError;
        const init = await s.request(P.InitializeRequest.type, {
            processId: process.pid,
            clientInfo: { name: 'Visual Studio Code', version: '1.90.0' },
            locale: 'en',
            rootPath: root,
            rootUri: pathToFileURL(root).href,
            workspaceFolders: [{ uri: pathToFileURL(root).href, name: basename(root) }],
            capabilities: caps,
            initializationOptions: {},
            trace: 'off',
        }, `${name}: initialize`);
        await s.notify(P.InitializedNotification.type, {});
        return init;
    };
    s.shutdown = async () => {
        const down = await s.request(P.ShutdownRequest.type, undefined, `${name}: shutdown`);
        check(down === null || down === undefined, `${name}: shutdown answers null`, show(down));
        await s.notify(P.ExitNotification.type);
        const { code, signal } = await withTimeout(s.exited, WAIT_MS, `${name}: the server to exit after exit`);
        check(code === 0 && signal === null, `${name}: the server exits with status 0 after shutdown and exit`,
              `code ${code}, signal ${signal}`);
    };
    servers.push(s);
    return s;
}

// What VS Code's language client (vscode-languageclient 9) announces, less
// pull diagnostics (textDocument.diagnostic), which switch the server from
// publishDiagnostics to pulls: the first session covers the push path, the
// second one adds pullCapabilities, as VS Code sends them.
const capabilities = {
    general: {
        positionEncodings: ['utf-16'],
        regularExpressions: { engine: 'ECMAScript', version: 'ES2020' },
        markdown: { parser: 'marked', version: '1.1.0' },
        staleRequestSupport: { cancel: true, retryOnContentModified: ['textDocument/semanticTokens/full'] },
    },
    workspace: {
        applyEdit: true,
        workspaceEdit: {
            documentChanges: true,
            resourceOperations: ['create', 'rename', 'delete'],
            failureHandling: 'textOnlyTransactional',
            normalizesLineEndings: true,
            changeAnnotationSupport: { groupsOnLabel: true },
        },
        didChangeConfiguration: { dynamicRegistration: true },
        didChangeWatchedFiles: { dynamicRegistration: true, relativePatternSupport: true },
        executeCommand: { dynamicRegistration: true },
        configuration: true,
        workspaceFolders: true,
        diagnostics: { refreshSupport: true },
    },
    textDocument: {
        synchronization: { dynamicRegistration: true, willSave: true, willSaveWaitUntil: true, didSave: true },
        publishDiagnostics: {
            relatedInformation: true,
            versionSupport: false,
            tagSupport: { valueSet: [1, 2] },
            codeDescriptionSupport: true,
            dataSupport: true,
        },
        hover: { dynamicRegistration: true, contentFormat: ['markdown', 'plaintext'] },
        codeAction: {
            dynamicRegistration: true,
            isPreferredSupport: true,
            disabledSupport: true,
            dataSupport: true,
            resolveSupport: { properties: ['edit'] },
            codeActionLiteralSupport: {
                codeActionKind: {
                    valueSet: ['', 'quickfix', 'refactor', 'refactor.extract', 'refactor.inline',
                               'refactor.rewrite', 'source', 'source.organizeImports'],
                },
            },
            honorsChangeAnnotations: false,
        },
    },
    window: {
        showMessage: { messageActionItem: { additionalPropertiesSupport: true } },
        showDocument: { support: true },
        workDoneProgress: true,
    },
};
const pullCapabilities = structuredClone(capabilities);
pullCapabilities.textDocument.diagnostic = { dynamicRegistration: true, relatedDocumentSupport: false };
const profileCapabilities = structuredClone(pullCapabilities);
profileCapabilities.workspace.codeLens = { refreshSupport: true };
profileCapabilities.textDocument.codeLens = { dynamicRegistration: true };

// ---- a document as VS Code keeps it, and edits applied to it --------------------------

class EditorDocument {
    constructor(s, uri, text) {
        this.s = s;
        this.uri = uri;
        this.doc = TextDocument.create(uri, 'python', 1, text);
    }
    get version() { return this.doc.version; }
    get text() { return this.doc.getText(); }
    open() {
        return this.s.notify(P.DidOpenTextDocumentNotification.type,
                             { textDocument: { uri: this.uri, languageId: 'python', version: this.version, text: this.text } });
    }
    // The TextEdits a WorkspaceEdit makes to this document; a versioned edit
    // for another version of the document is refused, as VS Code refuses it.
    editsOf(workspaceEdit) {
        const out = [];
        if (workspaceEdit.documentChanges) {
            for (const change of workspaceEdit.documentChanges) {
                if (!('textDocument' in change)) throw new Error(`unexpected resource operation ${show(change)}`);
                if (change.textDocument.uri !== this.uri)
                    throw new Error(`edit for another document: ${change.textDocument.uri}`);
                if (change.textDocument.version !== null && change.textDocument.version !== this.version)
                    throw new Error(`edit for version ${change.textDocument.version}, the document is at ${this.version}`);
                out.push(...change.edits);
            }
        } else if (workspaceEdit.changes) {
            for (const [u, edits] of Object.entries(workspaceEdit.changes)) {
                if (u !== this.uri) throw new Error(`edit for another document: ${u}`);
                out.push(...edits);
            }
        }
        return out;
    }
    // Applies edits and tells the server: incremental changes (what VS Code
    // sends for TextDocumentSyncKind.Incremental), or the whole text.
    async applyAndSync(edits, mode) {
        const newText = TextDocument.applyEdits(this.doc, edits);
        let contentChanges;
        if (mode === 'incremental') {
            // each change applies to the text the previous one left: bottom edits first
            const sorted = [...edits].sort((a, b) =>
                b.range.start.line - a.range.start.line || b.range.start.character - a.range.start.character);
            contentChanges = sorted.map((e) => ({ range: e.range, text: e.newText }));
        } else {
            contentChanges = [{ text: newText }];
        }
        const version = this.version + 1;
        const next = TextDocument.update(this.doc, contentChanges, version);
        if (next.getText() !== newText) throw new Error('the incremental changes do not give the edited text');
        this.doc = next;
        await this.s.notify(P.DidChangeTextDocumentNotification.type,
                            { textDocument: { uri: this.uri, version }, contentChanges });
        return newText;
    }
    // The code actions for one diagnostic, as the light bulb asks for them.
    codeActions(diagnostic, what) {
        return this.s.request(P.CodeActionRequest.type, {
            textDocument: { uri: this.uri }, range: diagnostic.range,
            context: { diagnostics: [diagnostic], triggerKind: P.CodeActionTriggerKind.Invoked },
        }, what);
    }
    // VS Code fetches a missing edit with codeAction/resolve (resolveSupport: ['edit']).
    async resolve(action, what) {
        if (action.edit) return action;
        return this.s.request(P.CodeActionResolveRequest.type, action, what);
    }
}

function lineOf(text, n) { return text.split('\n')[n]; }
const at = (d) => `${d.code}@${d.range.start.line}:${d.range.start.character}`;
function codesAt(diags) { return diags.map(at).sort().join(' '); }

// ---- session 1: push diagnostics, the sample, quick fix, ignore, hover ----------------

async function pushSession() {
    const s = startServer('push');
    const init = await s.initialize(capabilities);
    const caps = init.capabilities;
    check((caps.positionEncoding ?? 'utf-16') === 'utf-16', 'initialize: position encoding utf-16', show(caps.positionEncoding));
    const sync = caps.textDocumentSync;
    check(typeof sync === 'object' && sync.openClose === true && sync.change === P.TextDocumentSyncKind.Incremental,
          'initialize: incremental text sync with open/close', show(sync));
    check(caps.codeActionProvider?.resolveProvider === true && caps.codeActionProvider.codeActionKinds?.includes('quickfix'),
          'initialize: code actions with quickfix and resolveProvider', show(caps.codeActionProvider));
    check(caps.hoverProvider === true || typeof caps.hoverProvider === 'object', 'initialize: hover provider');
    check(caps.diagnosticProvider === undefined, 'initialize: no pull diagnostics offered to a client without them',
          show(caps.diagnosticProvider));

    // -- open: the pushed diagnostics --
    const doc = new EditorDocument(s, uri, originalText);
    await doc.open();
    const first = await s.diagnosticsFor((p) => p.uri === uri && p.version === 1, 'publishDiagnostics for version 1');
    check(first.version === 1, 'publishDiagnostics carries the document version 1', show(first.version));
    const diags = first.diagnostics;
    // benchmark_matmul.py (1-based lines): PY002 at 62, PY004 at 93 and 94, PY003 at 103
    // (other rules may add findings: these must be among them)
    const expected = ['PY002@61:14', 'PY003@102:16', 'PY004@92:12', 'PY004@93:12'];
    const sample = basename(samplePath) === 'benchmark_matmul.py';
    const includes = (diagnostics, list) => list.every((c) => diagnostics.map(at).includes(c));
    if (sample)
        check(includes(diags, expected), `diagnostics on open include ${expected.join(' ')}`, codesAt(diags));
    const py2 = diags.find((d) => d.code === 'PY002');
    require_(py2, 'a PY002 diagnostic is published', codesAt(diags));
    check(diags.every((d) => d.source === 'advise' && d.data && d.data.code === d.code),
          'each diagnostic has source "advise" and data with its code', show(diags[0]));
    check(diags.every((d) => typeof d.codeDescription?.href === 'string' && d.codeDescription.href.includes(d.code)),
          "each diagnostic's codeDescription.href links to its rule", show(diags.map((d) => d.codeDescription)));
    check(py2.severity === P.DiagnosticSeverity.Warning, 'PY002 is a warning', show(py2.severity));
    check(doc.doc.getText(py2.range) === 'time.perf_counter()', 'PY002 spans `time.perf_counter()` (utf-16 range)',
          show(doc.doc.getText(py2.range)));
    check(Array.isArray(py2.relatedInformation) && py2.relatedInformation.some((r) => r.location.uri === uri &&
          r.location.range.start.line === 58), 'PY002 relatedInformation points at the start of the measurement (line 59)',
          show(py2.relatedInformation));
    const py3 = diags.find((d) => d.code === 'PY003');
    require_(py3, 'a PY003 diagnostic is published', codesAt(diags));
    check(doc.doc.getText(py3.range) === 'torch.cuda.synchronize()', 'PY003 spans `torch.cuda.synchronize()`',
          show(doc.doc.getText(py3.range)));

    // -- hover on the finding --
    const hover = await s.request(P.HoverRequest.type, {
        textDocument: { uri }, position: { line: py2.range.start.line, character: py2.range.start.character + 3 },
    }, 'hover');
    check(hover && hover.contents?.kind === 'markdown' && hover.contents.value.includes('PY002') &&
          hover.contents.value.includes('unsynchronized-timing'),
          'hover on PY002: markdown with the rule documentation', show(hover));
    check(hover && hover.range && hover.range.start.line === py2.range.start.line, 'hover range is the finding',
          show(hover?.range));
    const noHover = await s.request(P.HoverRequest.type, {
        textDocument: { uri }, position: { line: 0, character: 2 },
    }, 'hover elsewhere');
    check(noHover === null, 'hover away from any finding: null', show(noHover));

    // -- source.fixAll, as editor.codeActionsOnSave asks for it --
    const fixAll = await s.request(P.CodeActionRequest.type, {
        textDocument: { uri },
        range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } },
        context: { diagnostics: [], only: ['source.fixAll'], triggerKind: P.CodeActionTriggerKind.Automatic },
    }, 'codeAction source.fixAll');
    const fixAllAction = (fixAll || []).find((a) => a.kind?.startsWith('source.fixAll'));
    check(fixAllAction && fixAllAction.edit, 'source.fixAll gives an action with an edit', show(fixAll));

    // -- code actions for PY002 --
    const actions = await doc.codeActions(py2, 'codeAction PY002');
    require_(Array.isArray(actions) && actions.length > 0, 'code actions for PY002', show(actions));
    const quickfixes = actions.filter((a) => a.kind === 'quickfix' && !a.title.startsWith('Ignore'));
    const fix = quickfixes.find((a) => a.isPreferred);
    require_(fix, 'a preferred (safe) quick fix for PY002', show(actions.map((a) => [a.title, a.kind, a.isPreferred])));
    check(fix.diagnostics?.length === 1 && fix.diagnostics[0].code === 'PY002', 'the quick fix names its diagnostic',
          show(fix.diagnostics));
    check(/synchronize/.test(fix.title), `quick fix title: "${fix.title}"`);
    check(actions.some((a) => a.kind === 'quickfix' && a.title === 'Ignore PY002 on this line'),
          'an "Ignore PY002 on this line" action', show(actions.map((a) => a.title)));
    const resolved = await doc.resolve(fix, 'codeAction/resolve PY002');
    require_(resolved && resolved.edit, 'the quick fix (resolved) has a WorkspaceEdit', show(resolved));
    check(Array.isArray(resolved.edit.documentChanges) && resolved.edit.documentChanges[0]?.textDocument?.version === 1,
          'the WorkspaceEdit is versioned documentChanges for version 1', show(resolved.edit));
    const fixEdits = doc.editsOf(resolved.edit);
    const fixAllText = fixAllAction?.edit ? TextDocument.applyEdits(doc.doc, doc.editsOf(fixAllAction.edit)) : null;

    // -- apply it, send it as VS Code does (incremental changes) --
    const newText = await doc.applyAndSync(fixEdits, 'incremental');
    const lines = newText.split('\n');
    const elapsedLine = lines.findIndex((l) => l === '    elapsed = time.perf_counter() - t0');
    check(elapsedLine === 63 && lines[62] === '        torch.cuda.synchronize()' &&
          lines[61] === '    if torch.cuda.is_available():' && lines[60] === '        c = a @ b',
          'the fix puts torch.cuda.synchronize() after the timed loop, before the clock read (lines 62-63)',
          lines.slice(58, 66).map((l, i) => `${59 + i}: ${l}`).join('\n'));
    check(lines.length === originalText.split('\n').length + 2 &&
          newText.replace('    if torch.cuda.is_available():\n        torch.cuda.synchronize()\n', '') === originalText,
          'the fix changes nothing else');
    // source.fixAll and `advise check --fix` apply every safe fix: the same
    // text when the PY002 fix is the only safe one, else text with it in
    const safeFixes = diags.reduce((n, d) => n + (d.data?.fixes || []).filter((f) => f.safe).length, 0);
    const fixedBlock = '        c = a @ b\n    if torch.cuda.is_available():\n        torch.cuda.synchronize()\n' +
                       '    elapsed = time.perf_counter() - t0\n';
    const sameFix = (text) => (safeFixes === 1 ? text === newText : text.includes(fixedBlock));
    if (fixAllText !== null)
        check(sameFix(fixAllText), `source.fixAll makes the quick fix's change (${safeFixes} safe fix(es) in all)`);
    const cli = join(workspace, 'cli-fixed.py');
    writeFileSync(cli, originalText);
    spawnSync(binary, ['check', '--fix', '--quiet', '--no-config', cli], { encoding: 'utf8', timeout: WAIT_MS });
    check(sameFix(readFileSync(cli, 'utf8')), "`advise check --fix` makes the quick fix's change");
    rmSync(cli);

    const second = await s.diagnosticsFor((p) => p.uri === uri && p.version === 2, 'publishDiagnostics for version 2');
    check(!second.diagnostics.some((d) => d.code === 'PY002'), 'after the fix: no PY002', codesAt(second.diagnostics));
    if (sample)
        check(includes(second.diagnostics, ['PY003@104:16', 'PY004@94:12', 'PY004@95:12']),
              'after the fix: PY003 and PY004 moved down two lines', codesAt(second.diagnostics));
    const py3b = second.diagnostics.find((d) => d.code === 'PY003');
    require_(py3b, 'after the fix: PY003 still published', codesAt(second.diagnostics));

    // -- "Ignore PY003 on this line", sent as the whole new text --
    const actions3 = await doc.codeActions(py3b, 'codeAction PY003');
    let ignore = (actions3 || []).find((a) => a.title === 'Ignore PY003 on this line');
    require_(ignore, 'an "Ignore PY003 on this line" action', show(actions3));
    ignore = await doc.resolve(ignore, 'codeAction/resolve ignore');
    require_(ignore && ignore.edit, 'the ignore action has a WorkspaceEdit', show(ignore));
    const ignoredText = await doc.applyAndSync(doc.editsOf(ignore.edit), 'full');
    check(lineOf(ignoredText, py3b.range.start.line) === '                torch.cuda.synchronize()  # advise: ignore[PY003]',
          'the ignore action appends `# advise: ignore[PY003]` to the line', lineOf(ignoredText, py3b.range.start.line));
    const third = await s.diagnosticsFor((p) => p.uri === uri && p.version === 3, 'publishDiagnostics for version 3');
    check(!third.diagnostics.some((d) => d.code === 'PY003'), 'after the ignore comment: no PY003',
          codesAt(third.diagnostics));

    // -- save, close: the diagnostics are cleared --
    writeFileSync(filePath, doc.text);
    await s.notify(P.DidSaveTextDocumentNotification.type, { textDocument: { uri } });
    await s.notify(P.DidCloseTextDocumentNotification.type, { textDocument: { uri } });
    const cleared = await s.diagnosticsFor((p) => p.uri === uri && p.diagnostics.length === 0 && p !== third,
                                           'empty publishDiagnostics after didClose');
    check(cleared.diagnostics.length === 0, 'didClose clears the diagnostics');
    await s.shutdown();
}

// ---- session 2: pull diagnostics (as VS Code asks), non-ASCII text in utf-16 -------------

// A line with a character outside the BMP (a surrogate pair in utf-16, 4
// bytes in utf-8) and an accented one before each finding, so that utf-16
// columns differ from byte and code point columns.
const unicodeText = [
    'import torch',
    '',
    '',
    'def run(loader):',
    '    for x in loader:',
    '        s = "\u{1F600}\u00e9"; torch.cuda.empty_cache()',
    '    buf = ["\u{1F600}", torch.zeros(3, 4).cuda()]',
    '    return buf, s',
    '',
].join('\n');

async function pullSession() {
    const s = startServer('pull');
    // The answer to the server's workspace/configuration request is kept back
    // until the first report is in, so that the order of the two is always the
    // same (a real client answers whenever it gets to it).
    s.holdConfiguration();
    const init = await s.initialize(pullCapabilities);
    const dp = init.capabilities.diagnosticProvider;
    check(dp && dp.interFileDependencies === false && dp.workspaceDiagnostics === false,
          'pull: initialize offers diagnosticProvider to a client with textDocument.diagnostic', show(dp));
    const u = pathToFileURL(join(workspace, 'unicode_\u00e9.py')).href;
    const doc = new EditorDocument(s, u, unicodeText);
    await doc.open();
    const pull = (previousResultId, what) => s.request(P.DocumentDiagnosticRequest.type, {
        textDocument: { uri: u }, identifier: dp?.identifier, previousResultId,
    }, what);
    const r1 = await pull(undefined, 'pull: textDocument/diagnostic');
    require_(r1 && r1.kind === 'full' && Array.isArray(r1.items), 'pull: a full report', show(r1));
    check(typeof r1.resultId === 'string', 'pull: the report has a resultId', show(r1.resultId));
    const col = (line, needle) => unicodeText.split('\n')[line].indexOf(needle); // utf-16 code units
    check(codesAt(r1.items) === `PY003@5:${col(5, 'torch.cuda')} PY004@6:${col(6, 'torch.zeros')}`,
          'pull: PY003 and PY004 at utf-16 columns after the surrogate pair', codesAt(r1.items));
    const p3 = r1.items.find((d) => d.code === 'PY003'), p4 = r1.items.find((d) => d.code === 'PY004');
    check(p3 && doc.doc.getText(p3.range) === 'torch.cuda.empty_cache()', 'pull: PY003 range covers the call',
          show(p3 && doc.doc.getText(p3.range)));
    check(p4 && doc.doc.getText(p4.range) === 'torch.zeros(3, 4).cuda()', 'pull: PY004 range covers the expression',
          show(p4 && doc.doc.getText(p4.range)));
    const r2 = await pull(r1.resultId, 'pull: again, unchanged');
    check(r2 && r2.kind === 'unchanged' && r2.resultId === r1.resultId,
          'pull: the same version with previousResultId is "unchanged"', show(r2));
    // now the settings arrive, the same as before (none): the text and the
    // settings did not change, so neither does the report
    check(s.configurationRequests === 1, 'pull: the server asked for the "advise" settings once', s.configurationRequests);
    s.releaseConfiguration();
    // (only the answers to workspace/configuration have an array for a result)
    await s.sent((m) => Array.isArray(m.result), 'pull: the settings answer to go out');
    const r2b = await pull(r1.resultId, 'pull: again after the settings answer');
    check(r2b && r2b.kind === 'unchanged' && r2b.resultId === r1.resultId,
          'pull: after a settings answer that changes nothing, the report is still "unchanged"',
          `previousResultId ${r1.resultId} -> ${JSON.stringify({ kind: r2b?.kind, resultId: r2b?.resultId, items: r2b?.items?.length })}`);
    const r2c = await pull(r2b?.resultId, 'pull: again, steady state');
    check(r2c && r2c.kind === 'unchanged', 'pull: with the newest resultId, "unchanged"', show(r2c?.kind));

    require_(p4, 'pull: a PY004 diagnostic', codesAt(r1.items));
    const actions = await doc.codeActions(p4, 'pull: codeAction PY004');
    let fix = (actions || []).find((a) => a.kind === 'quickfix' && a.isPreferred);
    require_(fix, 'pull: a preferred quick fix for PY004', show(actions));
    fix = await doc.resolve(fix, 'pull: codeAction/resolve PY004');
    require_(fix && fix.edit, 'pull: the PY004 fix has an edit', show(fix));
    const text = await doc.applyAndSync(doc.editsOf(fix.edit), 'incremental');
    check(lineOf(text, 6) === '    buf = ["\u{1F600}", torch.zeros(3, 4, device="cuda")]',
          'pull: the fix rewrites the expression after the surrogate pair', lineOf(text, 6));
    const r3 = await pull(r1.resultId, 'pull: after the change');
    check(r3 && r3.kind === 'full' && r3.resultId !== r1.resultId, 'pull: after the change, a new full report', show(r3));
    check(r3 && codesAt(r3.items) === `PY003@5:${col(5, 'torch.cuda')}`, 'pull: after the fix only PY003 is left',
          r3 && codesAt(r3.items));

    // hover in utf-16 columns
    const hover = await s.request(P.HoverRequest.type, {
        textDocument: { uri: u }, position: { line: 5, character: col(5, 'torch.cuda') + 1 },
    }, 'pull: hover');
    check(hover?.contents?.value?.includes('PY003'), 'pull: hover at a utf-16 column finds PY003', show(hover));
    check(s.pushes === 0, 'pull: nothing is pushed to a client that pulls', `${s.pushes} publishDiagnostics`);
    await s.notify(P.DidCloseTextDocumentNotification.type, { textDocument: { uri: u } });
    await s.shutdown();
}

// ---- session 3: a profile arrives mid-session -------------------------------------------

async function profileSession() {
    const sample = join(repo, 'samples', 'python', 'benchmark_matmul.py');
    const profile = join(repo, 'samples', 'profiles', 'benchmark_matmul.json');
    const root = join(workspace, 'project');
    const file = join(root, 'samples', 'python', 'benchmark_matmul.py');
    mkdirSync(dirname(file), { recursive: true });
    copyFileSync(sample, file);
    const u = pathToFileURL(file).href;
    const s = startServer('profile');
    const init = await s.initialize(profileCapabilities, root);
    const dp = init.capabilities.diagnosticProvider;
    check(init.capabilities.codeLensProvider && init.capabilities.executeCommandProvider?.commands?.includes('advise.showProfile'),
          'profile: initialize offers code lenses and advise.showProfile', show(init.capabilities.codeLensProvider));
    const text = readFileSync(file, 'utf8');
    const doc = new EditorDocument(s, u, text);
    await doc.open();
    const pull = (what) => s.request(P.DocumentDiagnosticRequest.type, { textDocument: { uri: u }, identifier: dp?.identifier }, what);
    const before = await pull('profile: pull before any profile');
    const sync0 = before?.items?.find((d) => d.code === 'PY003');
    require_(sync0, 'profile: PY003 without a profile', show(before));
    check(!sync0.message.includes('measured:') && sync0.data?.gain === null && sync0.data?.evidence?.length === 0,
          'profile: without a profile, no evidence and no gain', show(sync0));
    const lenses0 = await s.request(P.CodeLensRequest.type, { textDocument: { uri: u } }, 'profile: codeLens before');
    check(Array.isArray(lenses0) && lenses0.length === 0, 'profile: no code lenses without a profile', show(lenses0));

    // the profile arrives in the default folder, as `advise profile` leaves it
    const folder = join(root, '.advise', 'profiles');
    mkdirSync(folder, { recursive: true });
    const refreshed = s.refreshed('diagnostic refresh'), lensRefreshed = s.refreshed('codeLens refresh');
    const t0 = performance.now();
    copyFileSync(profile, join(folder, 'benchmark_matmul.json.part'));
    renameSync(join(folder, 'benchmark_matmul.json.part'), join(folder, 'benchmark_matmul-20261130-152000.json'));
    const limit = Math.max(1000, WAIT_MS / 10);
    const tDiag = await refreshed, tLens = await lensRefreshed;
    check(tDiag - t0 < limit, `profile: workspace/diagnostic/refresh within ${limit} ms of the new profile`,
          `${Math.round(tDiag - t0)} ms`);
    check(tLens - t0 < limit, `profile: workspace/codeLens/refresh within ${limit} ms of the new profile`,
          `${Math.round(tLens - t0)} ms`);
    const after = await pull('profile: pull after the refresh');
    const sync1 = after?.items?.find((d) => d.code === 'PY003');
    require_(sync1, 'profile: PY003 after the profile', show(after));
    check(sync1.message.includes('\nmeasured: this `torch.cuda.synchronize()` ran 15 times') &&
          !sync1.message.includes('est. gain'),
          'profile: the PY003 message carries the first measured line (a sync claims no gain)', sync1.message);
    check(sync1.data?.gain === null && sync1.data.evidence.length >= 1,
          'profile: data holds the evidence', show(sync1.data));
    const first = sync1.data?.evidence?.[0];
    check(first?.kind === 'measured' && first.text.startsWith('this `torch.cuda.synchronize()` ran 15 times') &&
          first.values?.[0]?.unit === 'count' && first.values[0].value === 15 && first.values[1]?.unit === 's',
          'profile: each evidence item says what it is and carries its figures as numbers', show(first));
    const gelu = after.items.find((d) => d.code === 'PY007');
    check(gelu && gelu.severity === P.DiagnosticSeverity.Warning, 'profile: PY007 raised from hint to warning by its GPU time',
          show(gelu?.severity));

    const lenses = await s.request(P.CodeLensRequest.type, { textDocument: { uri: u } }, 'profile: codeLens');
    const waits = (lenses || []).find((l) => l.range.start.line === sync1.range.start.line);
    check(waits && waits.command?.title === '3.1% of the run waiting \u00b7 5.68 ms avg \u00b7 15 syncs',
          'profile: a code lens over the synchronize line', show(lenses));
    check((lenses || []).some((l) => /^72% of GPU time \u00b7 2\.36 ms avg \u00b7 330 calls$/.test(l.command?.title)),
          'profile: a code lens over the hot matmul line', show(lenses?.map((l) => l.command?.title)));
    if (waits) {
        const ran = await s.request(P.ExecuteCommandRequest.type, waits.command, 'profile: the lens command');
        check(ran === null, 'profile: the lens command runs (a no-op)', show(ran));
    }
    const hover = await s.request(P.HoverRequest.type, { textDocument: { uri: u }, position: sync1.range.start }, 'profile: hover');
    const value = hover?.contents?.value || '';
    check(value.includes('**Measured at this line**') && value.includes('15 waits') && value.includes('measured: this `torch.cuda.synchronize()`'),
          'profile: the hover shows the figures and the finding\'s evidence', value.slice(0, 800));

    const token = 'findings-1';
    const ranked = await s.request(new P.RequestType('advise/findings'), { workDoneToken: token }, 'profile: advise/findings');
    require_(Array.isArray(ranked) && ranked.length > 0, 'profile: advise/findings returns a list', show(ranked));
    const py003 = ranked.findIndex((f) => f.code === 'PY003' && f.uri === u);
    check(ranked[0].uri === u && ranked[0].cost_seconds > 0.05 && py003 >= 0 && ranked[py003].cost_seconds > 0.08,
          'profile: advise/findings ranks by measured cost (PY003 waited 84.6 ms)', show(ranked.slice(0, 3)));
    check(py003 >= 0 && ranked[py003].evidence?.[0]?.kind === 'measured' && ranked[py003].evidence[0].template?.includes('{0}'),
          'profile: advise/findings carries the typed evidence items', show(py003 >= 0 ? ranked[py003].evidence : null));
    check(ranked.every((f, i) => i === 0 || f.cost_seconds <= ranked[i - 1].cost_seconds),
          'profile: advise/findings is sorted by cost', show(ranked.map((f) => f.cost_seconds)));
    const kinds = s.progress.filter((p) => p.token === token).map((p) => p.value.kind);
    check(kinds[0] === 'begin' && kinds[kinds.length - 1] === 'end', 'profile: advise/findings reports progress', show(kinds));
    await s.notify(P.DidCloseTextDocumentNotification.type, { textDocument: { uri: u } });
    await s.shutdown();
}

// ---- run -------------------------------------------------------------------------------

const watchdog = setTimeout(() => {
    console.log(`not ok - the whole run took more than ${TOTAL_MS} ms`);
    finish(1);
}, TOTAL_MS);

function finish(extraFailures) {
    failed += extraFailures;
    clearTimeout(watchdog);
    for (const s of servers) {
        if (s.server.exitCode === null && s.server.signalCode === null) s.server.kill('SIGKILL');
        s.connection.dispose();
    }
    rmSync(workspace, { recursive: true, force: true });
    const ok = failed === 0 && passed > 0;
    if (!ok) {
        for (const s of servers) if (s.stderr) console.log(`${s.name} server stderr:\n${s.stderr}`);
        if (logMessages.length)
            console.log(`server log messages:\n${logMessages.map((m) => `  ${m.server} [${m.type}] ${m.message}`).join('\n')}`);
    }
    console.log(`${ok ? 'PASS' : 'FAIL'}: vscode-languageserver-protocol client against ${binary}`);
    console.log(`vscode-client: ${passed} passed, ${failed} failed`);
    process.exit(ok ? 0 : 1);
}

async function main() {
    let extra = 0;
    for (const session of [pushSession, pullSession, profileSession]) {
        try {
            await session();
        } catch (e) {
            if (!(e instanceof Abort)) {
                console.log(`not ok - ${e && e.stack ? e.stack : e}`);
                extra++;
            }
        }
    }
    finish(extra);
}
main();
