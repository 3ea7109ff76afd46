// Read-only documents for what advise prints (`advise diff`, `advise rule`),
// and running the advise binary for it.
import { execFile } from 'node:child_process';
import * as vscode from 'vscode';

export const SCHEME = 'advise-output';

export class ReadOnlyDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
    private readonly texts = new Map<string, string>();
    private readonly changed = new vscode.EventEmitter<vscode.Uri>();
    readonly onDidChange = this.changed.event;
    private readonly registration = vscode.workspace.registerTextDocumentContentProvider(SCHEME, this);

    provideTextDocumentContent(uri: vscode.Uri): string {
        return this.texts.get(uri.path) ?? '';
    }

    /** stores the text under `advise-output:/<name>` and answers its URI (the document is read-only) */
    show(name: string, text: string): vscode.Uri {
        const uri = vscode.Uri.from({ scheme: SCHEME, path: `/${name}` });
        this.texts.set(uri.path, text);
        this.changed.fire(uri);
        return uri;
    }

    /** runs `binary args...`; resolves with its output whatever its exit status, rejects when it cannot run */
    run(binary: string, args: string[], cwd?: string, maxBuffer = 64 * 1024 * 1024):
        Promise<{ stdout: string; stderr: string; status: number }> {
        return new Promise((resolve, reject) => {
            execFile(binary, args, { cwd, maxBuffer, encoding: 'utf8', timeout: 5 * 60 * 1000 }, (error, stdout, stderr) => {
                if (error && typeof (error as NodeJS.ErrnoException).code === 'string') {
                    reject(new Error(`${binary} ${args.join(' ')}: ${error.message}`));
                    return;
                }
                const status = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
                resolve({ stdout, stderr, status });
            });
        });
    }

    dispose() {
        this.registration.dispose();
        this.changed.dispose();
    }
}
