// The language client: starts `advise server` over stdio, restarts it with
// back-off after a crash (at most MAX_RESTARTS within RESTART_WINDOW_MS),
// sends the settings, and carries advise's own requests and notification.
import * as vscode from 'vscode';
import {
    CloseAction, CodeLensRefreshRequest, CodeLensRequest, ErrorAction, LanguageClient, LanguageClientOptions,
    RevealOutputChannelOn, ServerOptions, State, StaticFeature, TransportKind, ClientCapabilities,
} from 'vscode-languageclient/node';
import { findAdvise, BinaryChoice } from './binary';
import { isMethodNotFound, HeatMetric, LineCosts, Methods, ProfileChanged, ProfileSummary, Finding } from './model/protocol';
import { serverSettings, RESTRICTED_KEYS } from './model/settings';

export const MAX_RESTARTS = 5;
export const RESTART_WINDOW_MS = 3 * 60 * 1000;
const BACKOFF_MS = [500, 1000, 2000, 4000, 8000];

export const DOCUMENT_SELECTOR = [
    { scheme: 'file', language: 'python' },
    { scheme: 'file', language: 'cuda-cpp' },
    { scheme: 'file', language: 'cuda' },
    { scheme: 'file', language: 'cpp' },
    { scheme: 'file', language: 'c' },
    { scheme: 'file', pattern: '**/*.{cu,cuh}' },
];

export type ServerState = 'starting' | 'running' | 'stopped' | 'crashed' | 'missing';

/**
 * Tells the server the code action kinds the editor asks for on save, and,
 * once the client's own features are set up (features initialize in the
 * order they were registered, this one last), installs advise's handlers:
 * on every start, restarts included.
 */
class AdviseFeature implements StaticFeature {
    constructor(private readonly onInitialize: () => void) {}
    getState() { return { kind: 'static' as const }; }
    fillClientCapabilities(capabilities: ClientCapabilities): void {
        const set = capabilities.textDocument?.codeAction?.codeActionLiteralSupport?.codeActionKind?.valueSet;
        if (set) for (const k of ['source.fixAll', 'source.fixAll.advise']) if (!set.includes(k)) set.push(k);
        // Pushed diagnostics, not pulled: the client pulls only for documents it
        // sees in a tab, and missed a document opened from quick open after a
        // restart (seen in code-server 4.139); the server pushes for every open
        // document, with its version, and again when a profile changes.
        if (capabilities.textDocument) delete capabilities.textDocument.diagnostic;
        if (capabilities.workspace) delete capabilities.workspace.diagnostics;
    }
    initialize(): void { this.onInitialize(); }
    clear(): void { /* nothing */ }
}

/** the value of `advise.<key>`, as Restricted Mode allows it */
export function setting(key: string): unknown {
    const config = vscode.workspace.getConfiguration('advise');
    if (!vscode.workspace.isTrusted && (RESTRICTED_KEYS as readonly string[]).includes(key))
        return config.inspect(key)?.globalValue;
    return config.get(key);
}

export function currentServerSettings() {
    return serverSettings(setting);
}

export class AdviseClient implements vscode.Disposable {
    client: LanguageClient | undefined;
    binary: BinaryChoice | undefined;
    state: ServerState = 'stopped';
    serverVersion = '';
    /** why the server is not running, when it is not */
    problem = '';
    private crashes: number[] = [];
    private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
    readonly onDidChangeState = this.stateEmitter.event;
    private readonly profileEmitter = new vscode.EventEmitter<{ profiles: string[]; why: string }>();
    /** a profile arrived or changed (advise/profileChanged, or workspace/codeLens/refresh) */
    readonly onDidChangeProfiles = this.profileEmitter.event;
    /** servers that answered MethodNotFound, by method */
    readonly unsupported = new Set<string>();
    private disposables: vscode.Disposable[] = [];

    constructor(readonly output: vscode.OutputChannel, readonly traceOutput: vscode.OutputChannel) {}

    private setState(state: ServerState) {
        this.state = state;
        this.stateEmitter.fire(state);
    }

    async start(): Promise<void> {
        if (this.client) return;
        const found = findAdvise();
        if ('message' in found) {
            this.problem = found.message;
            this.output.appendLine(found.message);
            this.setState('missing');
            const open = 'Open Settings';
            void vscode.window.showErrorMessage(found.message, open, 'Show Output').then((choice) => {
                if (choice === open) void vscode.commands.executeCommand('workbench.action.openSettings', 'advise.path');
                else if (choice) this.output.show();
            });
            return;
        }
        this.binary = found;
        this.problem = '';
        this.output.appendLine(`advise: starting ${found.path} server (from ${found.from})`);
        const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
        const serverOptions: ServerOptions = {
            command: found.path,
            args: ['server'],
            transport: TransportKind.stdio,
            options: cwd ? { cwd } : {},
        };
        const clientOptions: LanguageClientOptions = {
            documentSelector: DOCUMENT_SELECTOR,
            outputChannel: this.output,
            traceOutputChannel: this.traceOutput,
            revealOutputChannelOn: RevealOutputChannelOn.Never,
            initializationOptions: currentServerSettings(),
            synchronize: { configurationSection: 'advise' },
            errorHandler: {
                error: (_error, _message, count) =>
                    ({ action: count !== undefined && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown }),
                closed: () => this.onClosed(),
            },
            middleware: {
                workspace: {
                    configuration: async (params, token, next) => {
                        const answers = await next(params, token);
                        if (!Array.isArray(answers)) return answers;
                        return params.items.map((item, i) => (item.section === 'advise' ? currentServerSettings() : answers[i]));
                    },
                },
                executeCommand: async (command, args, next) => {
                    // from the palette advise.applySafeFixes comes without the document
                    if (command === 'advise.applySafeFixes' && args.length === 0) {
                        const editor = vscode.window.activeTextEditor;
                        if (!editor) {
                            void vscode.window.showInformationMessage('advise: open a Python or CUDA file to apply its safe fixes.');
                            return undefined;
                        }
                        args = [editor.document.uri.toString()];
                    }
                    return next(command, args);
                },
            },
        };
        const client = new LanguageClient('advise', 'advise', serverOptions, clientOptions);
        client.registerFeature(new AdviseFeature(() => this.hookNotifications(client)));
        this.client = client;
        this.disposables.push(client.onDidChangeState((e) => {
            if (e.newState === State.Running) {
                this.serverVersion = client.initializeResult?.serverInfo?.version ?? '';
                this.setState('running');
            } else if (e.newState === State.Starting) {
                this.setState('starting');
            } else if (this.state !== 'crashed') {
                this.setState('stopped');
            }
        }));
        this.setState('starting');
        try {
            await client.start();
        } catch (e) {
            this.problem = `advise server did not start: ${e instanceof Error ? e.message : String(e)}`;
            this.output.appendLine(this.problem);
            this.setState('crashed');
        }
    }

    private hookNotifications(client: LanguageClient) {
        client.onNotification(Methods.profileChanged, (params: ProfileChanged) => {
            this.output.appendLine(`advise: profiles changed: ${(params?.profiles ?? []).join(', ')}`);
            this.profileEmitter.fire({ profiles: params?.profiles ?? [], why: Methods.profileChanged });
        });
        // The code lens feature answers workspace/codeLens/refresh by asking
        // for lenses again; this handler replaces its handler (it is set up
        // after it), does the same, and tells the views.
        const lenses = client.getFeature(CodeLensRequest.method) as unknown as
            { getAllProviders?: () => Iterable<{ onDidChangeCodeLensEmitter?: vscode.EventEmitter<void> }> };
        client.onRequest(CodeLensRefreshRequest.type, async () => {
            try {
                for (const p of lenses.getAllProviders?.() ?? []) p.onDidChangeCodeLensEmitter?.fire();
            } catch { /* the lenses refresh on the next edit */ }
            this.profileEmitter.fire({ profiles: [], why: CodeLensRefreshRequest.method });
        });
    }

    private async onClosed() {
        const now = Date.now();
        this.crashes = this.crashes.filter((t) => now - t < RESTART_WINDOW_MS);
        this.crashes.push(now);
        const n = this.crashes.length;
        if (n > MAX_RESTARTS) {
            const message = `advise server stopped ${n} times in ${RESTART_WINDOW_MS / 60000} minutes; it will not be ` +
                'restarted again. Run "advise: Restart server" once the cause (see the output) is fixed.';
            this.problem = message;
            this.setState('crashed');
            void vscode.window.showErrorMessage(message, 'Show Output', 'Restart Server').then((choice) => {
                if (choice === 'Show Output') this.output.show();
                else if (choice) void vscode.commands.executeCommand('advise.restartServer');
            });
            return { action: CloseAction.DoNotRestart, message, handled: true };
        }
        const delay = BACKOFF_MS[Math.min(n - 1, BACKOFF_MS.length - 1)];
        const message = `advise server stopped unexpectedly; restarting in ${delay / 1000} s (restart ${n} of at most ` +
            `${MAX_RESTARTS} within ${RESTART_WINDOW_MS / 60000} minutes)`;
        this.output.appendLine(message);
        this.setState('crashed');
        await new Promise((r) => setTimeout(r, delay));
        return { action: CloseAction.Restart, message, handled: true };
    }

    async stop(): Promise<void> {
        const client = this.client;
        this.client = undefined;
        for (const d of this.disposables) d.dispose();
        this.disposables = [];
        if (client) {
            try {
                if (client.needsStop()) await client.stop(5000);
            } catch (e) {
                this.output.appendLine(`advise: stopping the server: ${e instanceof Error ? e.message : String(e)}`);
            }
            await client.dispose().catch(() => undefined);
        }
        this.setState('stopped');
    }

    async restart(): Promise<void> {
        this.crashes = [];
        this.unsupported.clear();
        await this.stop();
        await this.start();
    }

    isRunning(): boolean {
        return !!this.client && this.client.state === State.Running;
    }

    /**
     * One of advise's own requests; undefined when the server is not running
     * or is too old to know it (MethodNotFound: said once in the output).
     */
    async request<R>(method: string, params: unknown, token?: vscode.CancellationToken): Promise<R | undefined> {
        const client = this.client;
        if (!client || client.state !== State.Running || this.unsupported.has(method)) return undefined;
        try {
            // (an undefined token would make jsonrpc send the params as an array)
            return await (token ? client.sendRequest<R>(method, params, token) : client.sendRequest<R>(method, params));
        } catch (e) {
            if (isMethodNotFound(e)) {
                this.unsupported.add(method);
                this.output.appendLine(`advise: this server (${this.serverVersion || 'unknown version'}) does not answer ${method}; ` +
                                       'the views that need it stay empty until advise is updated');
                return undefined;
            }
            if (token?.isCancellationRequested) return undefined;
            throw e;
        }
    }

    findings(token?: vscode.CancellationToken) { return this.request<Finding[]>(Methods.findings, {}, token); }
    profileSummary(uri?: string) { return this.request<ProfileSummary>(Methods.profileSummary, uri ? { uri } : {}); }
    /** a document's lines by GPU time, or with metric "memory" by device memory at the peak */
    lineCosts(uri: string, metric: HeatMetric = 'time') {
        return this.request<LineCosts>(Methods.lineCosts, metric === 'time' ? { uri } : { uri, metric });
    }

    dispose(): void {
        void this.stop();
        this.stateEmitter.dispose();
        this.profileEmitter.dispose();
    }
}
