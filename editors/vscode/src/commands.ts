// The commands that run advise or its server's commands: profile a command
// in a terminal, check the workspace, apply the safe fixes, open the HTML
// report, compare two profiles.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { ExecuteCommandRequest, WorkDoneProgress, WorkDoneProgressBegin, WorkDoneProgressReport, WorkDoneProgressEnd }
    from 'vscode-languageclient/node';
import { AdviseClient } from './client';
import { findAdvise } from './binary';
import { ReadOnlyDocuments } from './readonly';
import { shellQuote, withCsp } from './model/text';

const LAST_COMMAND_KEY = 'advise.lastProfileCommand';

function folderForActive(): vscode.WorkspaceFolder | undefined {
    const editor = vscode.window.activeTextEditor;
    const folder = editor ? vscode.workspace.getWorkspaceFolder(editor.document.uri) : undefined;
    return folder ?? vscode.workspace.workspaceFolders?.[0];
}

function binaryOrSay(advise: AdviseClient): string | undefined {
    if (advise.binary) return advise.binary.path;
    const found = findAdvise();
    if ('path' in found) return found.path;
    void vscode.window.showErrorMessage(found.message, 'Open Settings').then((c) => {
        if (c) void vscode.commands.executeCommand('workbench.action.openSettings', 'advise.path');
    });
    return undefined;
}

let profileTerminal: vscode.Terminal | undefined;

export async function profileCommand(advise: AdviseClient, state: vscode.Memento): Promise<void> {
    if (!vscode.workspace.isTrusted) {
        const manage = 'Manage Workspace Trust';
        const choice = await vscode.window.showWarningMessage(
            'advise does not profile in Restricted Mode: profiling runs the command you give. Trust this workspace first.', manage);
        if (choice === manage) await vscode.commands.executeCommand('workbench.trust.manage');
        return;
    }
    const binary = binaryOrSay(advise);
    if (!binary) return;
    const folder = folderForActive();
    const last = state.get<string>(LAST_COMMAND_KEY, '');
    const command = await vscode.window.showInputBox({
        title: 'advise: Profile a command',
        prompt: 'The command to run under advise\'s CUDA profiler (advise profile -- COMMAND), in the workspace folder',
        placeHolder: 'python3 train.py --epochs 1',
        value: last,
        ignoreFocusOut: true,
        validateInput: (v) => (v.trim() ? undefined : 'Give the command to run'),
    });
    if (!command?.trim()) return;
    await state.update(LAST_COMMAND_KEY, command.trim());
    if (!profileTerminal || profileTerminal.exitStatus !== undefined) {
        profileTerminal = vscode.window.createTerminal({ name: 'advise profile', cwd: folder?.uri.fsPath });
    }
    profileTerminal.show();
    // the profile lands in the project's profile folder; the server watches it and tells the views
    profileTerminal.sendText(`${shellQuote(binary)} profile -- ${command.trim()}`);
}

export async function checkWorkspace(advise: AdviseClient): Promise<void> {
    const client = advise.client;
    if (!client || !advise.isRunning()) {
        void vscode.window.showWarningMessage(`advise: the server is not running. ${advise.problem}`);
        return;
    }
    const token = `advise-check-${Date.now()}`;
    await vscode.window.withProgress({
        location: vscode.ProgressLocation.Notification,
        title: 'advise: checking the workspace',
        cancellable: true,
    }, async (progress, cancel) => {
        let last = 0;
        const sub = client.onProgress(WorkDoneProgress.type, token,
            (p: WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd) => {
                if (p.kind === 'end') return;
                const pct = typeof p.percentage === 'number' ? p.percentage : undefined;
                progress.report({ message: p.message, increment: pct !== undefined ? Math.max(0, pct - last) : undefined });
                if (pct !== undefined) last = pct;
            });
        try {
            await client.sendRequest(ExecuteCommandRequest.type,
                                     { command: 'advise.checkWorkspace', arguments: [], workDoneToken: token }, cancel);
        } catch (e) {
            if (!cancel.isCancellationRequested)
                void vscode.window.showErrorMessage(`advise: checking the workspace failed: ${e instanceof Error ? e.message : String(e)}`);
        } finally {
            sub.dispose();
        }
    });
    await vscode.commands.executeCommand('advise.refreshFindings');
}

export async function applySafeFixes(advise: AdviseClient, arg?: unknown): Promise<number | undefined> {
    const uri = arg instanceof vscode.Uri ? arg : vscode.window.activeTextEditor?.document.uri;
    const client = advise.client;
    if (!uri) {
        void vscode.window.showInformationMessage('advise: open a Python or CUDA file to apply its safe fixes.');
        return undefined;
    }
    if (!client || !advise.isRunning()) {
        void vscode.window.showWarningMessage(`advise: the server is not running. ${advise.problem}`);
        return undefined;
    }
    for (let attempt = 0; ; attempt++) {
        try {
            const answer = await client.sendRequest(ExecuteCommandRequest.type,
                                                    { command: 'advise.applySafeFixes', arguments: [uri.toString()] }) as
                { applied?: number } | null;
            const n = answer?.applied ?? 0;
            void vscode.window.setStatusBarMessage(n ? `advise: ${n} safe fix${n === 1 ? '' : 'es'} applied`
                                                     : 'advise: no safe fix to apply here', 4000);
            return n;
        } catch (e) {
            // -32801 ContentModified: the analysis of the last edit is not done yet
            if ((e as { code?: number }).code === -32801 && attempt < 10) {
                await new Promise((r) => setTimeout(r, 300));
                continue;
            }
            void vscode.window.showErrorMessage(`advise: applying the safe fixes failed: ${e instanceof Error ? e.message : String(e)}`);
            return undefined;
        }
    }
}

let reportPanel: vscode.WebviewPanel | undefined;

export async function openReport(advise: AdviseClient, documents: ReadOnlyDocuments): Promise<void> {
    const binary = binaryOrSay(advise);
    if (!binary) return;
    const folder = folderForActive();
    if (!folder) {
        void vscode.window.showInformationMessage('advise: open a folder to report on it.');
        return;
    }
    const result = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `advise: report on ${folder.name}` },
        () => documents.run(binary, ['report', '--format', 'html', '-o', '-'], folder.uri.fsPath).catch((e: Error) => e));
    if (result instanceof Error || result.status !== 0) {
        const why = result instanceof Error ? result.message : result.stderr.trim() || `exit status ${result.status}`;
        void vscode.window.showErrorMessage(`advise report failed: ${why}`);
        return;
    }
    if (!reportPanel) {
        reportPanel = vscode.window.createWebviewPanel('advise.report', `advise report: ${folder.name}`, vscode.ViewColumn.Active, {
            enableScripts: false,
            enableCommandUris: false,
            enableFindWidget: true,
            localResourceRoots: [],
        });
        reportPanel.onDidDispose(() => { reportPanel = undefined; });
    } else {
        reportPanel.title = `advise report: ${folder.name}`;
        reportPanel.reveal();
    }
    reportPanel.webview.html = withCsp(result.stdout);
}

interface ProfileChoice extends vscode.QuickPickItem { file?: string }

async function pickProfile(title: string, known: string[], except?: string): Promise<string | undefined> {
    const browse = '$(folder-opened) Browse…';
    const items: ProfileChoice[] = known.filter((p) => p !== except).map((p) => ({
        label: path.basename(p), description: vscode.workspace.asRelativePath(p), file: p,
    }));
    items.push({ label: browse });
    const picked = await vscode.window.showQuickPick(items, { title, placeHolder: 'a profile written by advise profile or advise import' });
    if (!picked) return undefined;
    if (picked.file) return picked.file;
    const files = await vscode.window.showOpenDialog({
        title, canSelectMany: false, filters: { 'advise profiles': ['json'] },
        defaultUri: known[0] ? vscode.Uri.file(path.dirname(known[0])) : vscode.workspace.workspaceFolders?.[0]?.uri,
    });
    return files?.[0]?.fsPath;
}

export async function compareProfiles(advise: AdviseClient, documents: ReadOnlyDocuments, known: string[]): Promise<void> {
    const binary = binaryOrSay(advise);
    if (!binary) return;
    const before = await pickProfile('advise: Compare profiles (1/2): the earlier run', known);
    if (!before) return;
    const after = await pickProfile('advise: Compare profiles (2/2): the later run', known, before);
    if (!after) return;
    const folder = folderForActive();
    const result = await documents.run(binary, ['diff', before, after], folder?.uri.fsPath).catch((e: Error) => e);
    if (result instanceof Error || (result.status !== 0 && !result.stdout)) {
        const why = result instanceof Error ? result.message : result.stderr.trim() || `exit status ${result.status}`;
        void vscode.window.showErrorMessage(`advise diff failed: ${why}`);
        return;
    }
    const name = `diff/${path.basename(before, '.json')} vs ${path.basename(after, '.json')}.txt`;
    const uri = documents.show(name, result.stdout);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: false });
}
