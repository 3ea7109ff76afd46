// What an editor spends reading advise's diagnostics of one file: opens the
// file in `advise server`, keeps the publishDiagnostics it sends, then feeds
// that message to vscode-jsonrpc's reader (the one VS Code's language client
// uses) again and again, in 64 KiB chunks as a pipe delivers them, and
// prints the time from the first byte to the parsed notification. This is
// part of every edit's latency in lsp_latency.mjs, on the client's side.
// A program that prints figures, not a test: see bench/README.md.
//
//   cd bench && npm ci && node client_decode.mjs [--advise PATH] [--reps N] FILE.py
import { spawn } from 'child_process';
import fs from 'fs';
import path from 'path';
import { PassThrough } from 'stream';
import { fileURLToPath, pathToFileURL } from 'url';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
let advise = path.join(here, '..', 'build', 'advise'), reps = 200, file = null;
for (let i = 0; i < args.length; i++) {
    if (args[i] === '--advise') advise = args[++i];
    else if (args[i] === '--reps') reps = Number(args[++i]);
    else if (args[i] === '--help') {
        console.log('usage: node client_decode.mjs [--advise PATH] [--reps N] FILE.py');
        process.exit(0);
    } else file = args[i];
}
if (!file || !fs.existsSync(file) || !(reps > 0)) {
    console.error('client_decode: give an existing Python file (and --reps N > 0); --help for usage');
    process.exit(2);
}

// the first publish of the file, as the bytes of one framed message
function firstPublish() {
    return new Promise((resolve, reject) => {
        const child = spawn(advise, ['server', '--stdio'], { stdio: ['pipe', 'pipe', 'inherit'] });
        const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
        conn.onNotification('textDocument/publishDiagnostics', (p) => {
            child.kill();
            const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', method: 'textDocument/publishDiagnostics', params: p }));
            resolve({ bytes: Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]), count: p.diagnostics.length });
        });
        child.on('error', reject);
        conn.listen();
        const uri = pathToFileURL(path.resolve(file)).href;
        conn.sendRequest('initialize', { processId: process.pid, rootUri: pathToFileURL(path.dirname(path.resolve(file))).href, capabilities: { textDocument: { publishDiagnostics: { versionSupport: true } } } })
            .then(() => {
                conn.sendNotification('initialized', {});
                conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text: fs.readFileSync(file, 'utf8') } });
            }, reject);
    });
}

const { bytes, count } = await firstPublish();
const input = new PassThrough();
const reader = createMessageConnection(new StreamMessageReader(input), new StreamMessageWriter(new PassThrough()));
const times = [];
let sentAt = 0;
await new Promise((done) => {
    const send = () => {
        sentAt = performance.now();
        for (let i = 0; i < bytes.length; i += 65536) input.write(bytes.subarray(i, i + 65536));
    };
    reader.onNotification('textDocument/publishDiagnostics', () => {
        times.push(performance.now() - sentAt);
        if (times.length === reps) done();
        else setImmediate(send);
    });
    reader.listen();
    send();
});
times.sort((a, b) => a - b);
const at = (q) => times[Math.min(times.length - 1, Math.ceil(q * times.length) - 1)];
console.log(`${path.basename(file)}: one publish of ${count} diagnostics, ${bytes.length.toLocaleString('en')} bytes`);
console.log(`vscode-jsonrpc read + JSON.parse over ${reps} reps: p50 ${at(0.5).toFixed(2)} ms, p95 ${at(0.95).toFixed(2)} ms, min ${times[0].toFixed(2)} ms`);
console.log(`node ${process.version}; ${new Date().toISOString()}`);
process.exit(0);
