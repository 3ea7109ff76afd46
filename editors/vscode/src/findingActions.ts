// What the Findings view's items do: reveal the range, apply the fix, ignore
// the rule on the line (both through the server's code actions, as the light
// bulb gets them), open the rule's documentation.
import * as vscode from 'vscode';
import { CodeAction, CodeActionKind, CodeActionRequest, CodeActionResolveRequest, CodeActionTriggerKind, Command }
    from 'vscode-languageclient/node';
import { AdviseClient } from './client';
import { FindingNode } from './model/findings';
import { Finding } from './model/protocol';
import { ReadOnlyDocuments } from './readonly';

function rangeOf(f: Finding): vscode.Range {
    return new vscode.Range(f.range.start.line, f.range.start.character, f.range.end.line, f.range.end.character);
}

function findingOf(arg: unknown): Finding | undefined {
    const node = arg as FindingNode | undefined;
    return node?.kind === 'finding' ? node.finding : undefined;
}

export async function revealFinding(arg: unknown): Promise<vscode.TextEditor | undefined> {
    const f = findingOf(arg);
    if (!f) return undefined;
    const range = rangeOf(f);
    const editor = await vscode.window.showTextDocument(vscode.Uri.parse(f.uri), { selection: range, preserveFocus: false });
    editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    return editor;
}

function codeOf(d: vscode.Diagnostic): string {
    const c = d.code;
    return typeof c === 'object' && c !== null ? String(c.value) : String(c ?? '');
}

/** advise's diagnostic of this finding in the open document, waiting for the server's analysis when needed */
async function diagnosticOf(f: Finding, uri: vscode.Uri, timeoutMs = 15000): Promise<vscode.Diagnostic | undefined> {
    const pick = () => {
        const ours = vscode.languages.getDiagnostics(uri).filter((d) => d.source === 'advise' && codeOf(d) === f.code);
        // the same line first (the document may have moved since the findings were ranked), then the nearest
        return ours.sort((a, b) => Math.abs(a.range.start.line - f.range.start.line) - Math.abs(b.range.start.line - f.range.start.line) ||
                                   Math.abs(a.range.start.character - f.range.start.character) -
                                   Math.abs(b.range.start.character - f.range.start.character))[0];
    };
    const now = pick();
    if (now) return now;
    return new Promise((resolve) => {
        const timer = setTimeout(() => { sub.dispose(); resolve(pick()); }, timeoutMs);
        const sub = vscode.languages.onDidChangeDiagnostics((e) => {
            if (!e.uris.some((u) => u.toString() === uri.toString())) return;
            const d = pick();
            if (d) { clearTimeout(timer); sub.dispose(); resolve(d); }
        });
    });
}

/** one of the server's code actions for a diagnostic, as the protocol has it */
interface ServerAction { title: string; isPreferred: boolean; protocol: CodeAction }

/**
 * The server's code actions for the finding's diagnostic: asked with that
 * diagnostic alone in the context (as the light bulb asks for one marker),
 * so that other findings on the same line bring none of theirs.
 */
async function actionsFor(f: Finding): Promise<{ editor: vscode.TextEditor; actions: ServerAction[] } | undefined> {
    const editor = await revealFinding({ kind: 'finding', finding: f });
    const client = advise?.client;
    if (!editor) return undefined;
    if (!client || !advise?.isRunning()) {
        void vscode.window.showWarningMessage(`advise: the server is not running. ${advise?.problem ?? ''}`);
        return undefined;
    }
    const diagnostic = await diagnosticOf(f, editor.document.uri);
    if (!diagnostic) {
        void vscode.window.showWarningMessage(`advise: ${f.code} is no longer reported at line ${f.range.start.line + 1} ` +
                                              'of this file (the file changed?); the findings are refreshed.');
        void vscode.commands.executeCommand('advise.refreshFindings');
        return undefined;
    }
    const c2p = client.code2ProtocolConverter;
    const answer = await client.sendRequest(CodeActionRequest.type, {
        textDocument: { uri: c2p.asUri(editor.document.uri) },
        range: c2p.asRange(diagnostic.range),
        context: { diagnostics: [c2p.asDiagnostic(diagnostic)], only: [CodeActionKind.QuickFix],
                   triggerKind: CodeActionTriggerKind.Invoked },
    });
    const actions = (answer ?? []).filter((a): a is CodeAction => typeof (a as Command).command !== 'string')
        .map((a) => ({ title: a.title, isPreferred: a.isPreferred === true, protocol: a }));
    return { editor, actions };
}

async function run(action: ServerAction): Promise<boolean> {
    const client = advise?.client;
    if (!client) return false;
    let a = action.protocol;
    if (!a.edit && !a.command) a = await client.sendRequest(CodeActionResolveRequest.type, a);
    let ok = true;
    if (a.edit) ok = await vscode.workspace.applyEdit(await client.protocol2CodeConverter.asWorkspaceEdit(a.edit));
    if (ok && a.command) await vscode.commands.executeCommand(a.command.command, ...(a.command.arguments ?? []));
    return ok;
}

function isIgnore(a: ServerAction, code: string): boolean {
    return a.title.startsWith(`Ignore ${code}`);
}

export async function applyFix(arg: unknown): Promise<boolean> {
    const f = findingOf(arg);
    if (!f) return false;
    const found = await actionsFor(f);
    if (!found) return false;
    const fixes = found.actions.filter((a) => !isIgnore(a, f.code));
    if (!fixes.length) {
        const docs = 'Open Rule Documentation';
        const what = f.advice ? `What to do: ${f.advice}.` : 'The rule\'s documentation says what to change.';
        const choice = await vscode.window.showInformationMessage(
            `advise has no automatic fix for ${f.code} here. ${what}`, docs);
        if (choice === docs) await openRuleDocs(arg);
        return false;
    }
    let chosen = fixes.find((a) => a.isPreferred) ?? (fixes.length === 1 ? fixes[0] : undefined);
    if (!chosen) {
        const picked = await vscode.window.showQuickPick(fixes.map((a) => ({ label: a.title, action: a })),
                                                         { title: `advise: fixes for ${f.code}` });
        chosen = picked?.action;
    }
    if (!chosen) return false;
    const ok = await run(chosen);
    if (!ok) void vscode.window.showWarningMessage(`advise: the fix "${chosen.title}" could not be applied (the file changed?).`);
    return ok;
}

export async function ignoreOnLine(arg: unknown): Promise<boolean> {
    const f = findingOf(arg);
    if (!f) return false;
    const found = await actionsFor(f);
    if (!found) return false;
    const ignore = found.actions.find((a) => isIgnore(a, f.code));
    if (!ignore) {
        void vscode.window.showWarningMessage(`advise: the server offered no "Ignore ${f.code} on this line" here.`);
        return false;
    }
    return run(ignore);
}

let advise: AdviseClient | undefined;
let documents: ReadOnlyDocuments | undefined;

export function setup(client: AdviseClient, readOnly: ReadOnlyDocuments) {
    advise = client;
    documents = readOnly;
}

/** the rule's page: the diagnostic's codeDescription.href, else `advise rule CODE` */
export async function openRuleDocs(arg: unknown): Promise<void> {
    const f = findingOf(arg);
    if (!f) return;
    const uri = vscode.Uri.parse(f.uri);
    const d = vscode.languages.getDiagnostics(uri).find((x) => x.source === 'advise' && codeOf(x) === f.code);
    const target = d && typeof d.code === 'object' ? d.code.target : undefined;
    if (target) {
        if (target.scheme === 'file') {
            if (target.path.endsWith('.md')) await vscode.commands.executeCommand('markdown.showPreview', target);
            else await vscode.window.showTextDocument(target);
        } else {
            await vscode.env.openExternal(target);
        }
        return;
    }
    if (!advise?.binary || !documents) {
        void vscode.window.showWarningMessage('advise: the rule documentation needs the advise binary.');
        return;
    }
    const { stdout } = await documents.run(advise.binary.path, ['rule', f.code]);
    const doc = documents.show(`rule/${f.code}.md`, stdout);
    await vscode.commands.executeCommand('markdown.showPreview', doc);
}
