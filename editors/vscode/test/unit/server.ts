// A real `advise server` over stdio, driven with the protocol libraries VS
// Code's client is built on: the unit tests feed the views' models with its
// answers (no mock of the server).
import { spawn, ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import * as P from 'vscode-languageserver-protocol/node';

export const repo = path.resolve(__dirname, '..', '..', '..', '..', '..');
export const binary = path.resolve(process.env.ADVISE_BINARY || path.join(repo, 'build', 'advise'));
export const samples = path.join(repo, 'samples');
export const uriOf = (p: string) => pathToFileURL(p).href;

export function binaryMissing(): string | undefined {
    try {
        fs.accessSync(binary, fs.constants.X_OK);
        return undefined;
    } catch {
        return `no advise binary at ${binary} (build it with scripts/setup.sh, or set ADVISE_BINARY)`;
    }
}

export interface Server {
    connection: P.ProtocolConnection;
    process: ChildProcess;
    notifications: { method: string; params: unknown }[];
    request<R>(method: string, params: unknown, timeoutMs?: number): Promise<R>;
    close(): Promise<void>;
}

/** starts `advise server` with `root` as its workspace folder and initializes it as VS Code would */
export async function startServer(root: string, initializationOptions: object = {}): Promise<Server> {
    const child = spawn(binary, ['server'], { cwd: root, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d) => { stderr += d; });
    const connection = P.createProtocolConnection(new P.StreamMessageReader(child.stdout!), new P.StreamMessageWriter(child.stdin!));
    const notifications: { method: string; params: unknown }[] = [];
    connection.onUnhandledNotification((n) => { notifications.push({ method: n.method, params: n.params }); });
    connection.onRequest(P.ConfigurationRequest.type, (params) => params.items.map(() => ({})));
    connection.onRequest(P.WorkDoneProgressCreateRequest.type, () => null);
    connection.onRequest(P.RegistrationRequest.type, () => null);
    connection.onRequest(P.DiagnosticRefreshRequest.type, () => null);
    connection.onRequest(P.CodeLensRefreshRequest.type, () => null);
    connection.listen();
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    const request = <R>(method: string, params: unknown, timeoutMs = 60000): Promise<R> => {
        let timer: NodeJS.Timeout;
        return Promise.race([
            connection.sendRequest<R>(method, params).finally(() => clearTimeout(timer)),
            new Promise<R>((_, reject) => {
                timer = setTimeout(() => reject(new Error(`${method}: no answer in ${timeoutMs} ms; stderr:\n${stderr.slice(-2000)}`)), timeoutMs);
            }),
        ]);
    };
    await request(P.InitializeRequest.method, {
        processId: process.pid,
        clientInfo: { name: 'advise unit tests' },
        rootUri: uriOf(root),
        workspaceFolders: [{ uri: uriOf(root), name: path.basename(root) }],
        capabilities: {
            general: { positionEncodings: ['utf-16'] },
            workspace: { configuration: true, workspaceFolders: true },
            window: { workDoneProgress: true },
        },
        initializationOptions,
    }, 15000);
    await connection.sendNotification(P.InitializedNotification.type, {});
    return {
        connection,
        process: child,
        notifications,
        request,
        async close() {
            try {
                await request(P.ShutdownRequest.method, undefined, 5000);
                await connection.sendNotification(P.ExitNotification.type);
            } catch { /* killed below */ }
            const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
            await exited;
            clearTimeout(timer);
            connection.dispose();
        },
    };
}

/** true when the server answered MethodNotFound (a server older than the request) */
export function methodNotFound(e: unknown): boolean {
    return typeof e === 'object' && e !== null && (e as { code?: number }).code === -32601;
}
