// Finding the advise binary: the `advise.path` setting, else `advise` on
// PATH. In Restricted Mode (an untrusted workspace) a path from the
// workspace's settings is never used: only the user's own setting or PATH.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';

export interface BinaryChoice {
    path: string;
    /** how it was found, for the log */
    from: string;
}

export interface BinaryProblem {
    /** what to tell the user */
    message: string;
}

function executable(file: string): boolean {
    try {
        fs.accessSync(file, fs.constants.X_OK);
        return fs.statSync(file).isFile();
    } catch {
        return false;
    }
}

function expand(p: string, base: string | undefined): string {
    if (p === '~' || p.startsWith('~/')) p = path.join(os.homedir(), p.slice(1));
    if (!path.isAbsolute(p) && base) p = path.join(base, p);
    return p;
}

export function onPath(name: string): string | undefined {
    for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
        if (!dir) continue;
        const candidate = path.join(dir, name);
        if (executable(candidate)) return candidate;
    }
    return undefined;
}

/** The value of `advise.path` that may be used here, and where it came from. */
export function configuredPath(): { value: string; from: string } | undefined {
    const inspected = vscode.workspace.getConfiguration('advise').inspect<string>('path');
    if (!inspected) return undefined;
    if (vscode.workspace.isTrusted) {
        for (const [value, from] of [[inspected.workspaceFolderValue, 'the workspace folder setting'],
                                     [inspected.workspaceValue, 'the workspace setting'],
                                     [inspected.globalValue, 'the user setting']] as const)
            if (typeof value === 'string' && value.trim()) return { value: value.trim(), from: `advise.path (${from})` };
        return undefined;
    }
    const user = inspected.globalValue;
    return typeof user === 'string' && user.trim() ? { value: user.trim(), from: 'advise.path (the user setting; Restricted Mode)' }
                                                    : undefined;
}

export function findAdvise(): BinaryChoice | BinaryProblem {
    const configured = configuredPath();
    if (configured) {
        const base = vscode.workspace.isTrusted ? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath : undefined;
        const file = expand(configured.value, base);
        if (executable(file)) return { path: file, from: configured.from };
        return { message: `advise: ${configured.from} is "${configured.value}", which is not an executable file.` };
    }
    const found = onPath('advise');
    if (found) return { path: found, from: 'PATH' };
    return { message: 'advise: no advise binary found: set advise.path to it (for example <repository>/build/advise) or put advise on PATH.' };
}
