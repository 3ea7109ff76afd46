// A small LSP client over stdio for the soak: Content-Length framing, request
// bookkeeping (every request is remembered until its answer comes, so the
// soak can say which were never answered), and the server's requests answered
// with the defaults a plain editor gives. No npm packages: the soak runs from
// a fresh clone with node alone.
import { spawn } from 'node:child_process';

export class LspClient {
    constructor(command, args, cwd) {
        this.child = spawn(command, args, { cwd, stdio: ['pipe', 'pipe', 'pipe'] });
        this.nextId = 1;
        this.pending = new Map();      // id -> { method, sent, resolve }
        this.answered = 0;
        this.errors = new Map();       // error message -> count (answers with an error are answers)
        this.onNotification = () => {};
        this.stderrTail = '';
        this.buffer = Buffer.alloc(0);
        this.exited = null;
        this.exitPromise = new Promise((resolve) => this.child.on('exit', (code, signal) => {
            this.exited = { code, signal };
            resolve(this.exited);
        }));
        this.child.on('error', (e) => { this.stderrTail += `\nspawn error: ${e.message}`; });
        this.child.stdin.on('error', () => {}); // a server that died: its exit is reported instead
        this.child.stderr.on('data', (d) => { this.stderrTail = (this.stderrTail + d).slice(-4000); });
        this.child.stdout.on('data', (d) => this.#read(d));
    }

    get pid() { return this.child.pid; }

    #read(chunk) {
        this.buffer = Buffer.concat([this.buffer, chunk]);
        for (;;) {
            const headerEnd = this.buffer.indexOf('\r\n\r\n');
            if (headerEnd < 0) return;
            const header = this.buffer.subarray(0, headerEnd).toString('ascii');
            const m = header.match(/Content-Length:\s*(\d+)/i);
            if (!m) throw new Error(`a message without Content-Length: ${JSON.stringify(header)}`);
            const length = Number(m[1]);
            if (this.buffer.length < headerEnd + 4 + length) return;
            const body = this.buffer.subarray(headerEnd + 4, headerEnd + 4 + length).toString('utf8');
            this.buffer = this.buffer.subarray(headerEnd + 4 + length);
            this.#dispatch(JSON.parse(body));
        }
    }

    #dispatch(msg) {
        if (msg.method !== undefined && msg.id !== undefined) { // the server asks
            let result = null;
            if (msg.method === 'workspace/configuration') result = (msg.params?.items ?? []).map(() => null);
            this.#write({ jsonrpc: '2.0', id: msg.id, result });
        } else if (msg.method !== undefined) {
            this.onNotification(msg.method, msg.params);
        } else {
            const p = this.pending.get(msg.id);
            if (!p) return;
            this.pending.delete(msg.id);
            this.answered++;
            if (msg.error) this.errors.set(msg.error.message, (this.errors.get(msg.error.message) ?? 0) + 1);
            p.resolve(msg);
        }
    }

    #write(msg) {
        const body = Buffer.from(JSON.stringify(msg), 'utf8');
        this.child.stdin.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, 'ascii'), body]));
    }

    notify(method, params) { this.#write({ jsonrpc: '2.0', method, params }); }

    /** sends a request; the promise resolves with the whole answer (result or error) */
    request(method, params) {
        const id = this.nextId++;
        return new Promise((resolve) => {
            this.pending.set(id, { method, sent: Date.now(), resolve });
            this.#write({ jsonrpc: '2.0', id, method, params });
        });
    }

    /** requests still unanswered that were sent more than `ms` ago */
    overdue(ms) {
        const now = Date.now();
        return [...this.pending.entries()].filter(([, p]) => now - p.sent > ms).map(([id, p]) => `${p.method} #${id}`);
    }
}
