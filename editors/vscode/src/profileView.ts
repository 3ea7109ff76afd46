// The Profile view: the runs merged (`advise/profileSummary`), the active
// file's first: GPU busy and idle, top kernels and largest gaps, each linked
// to its line.
import * as vscode from 'vscode';
import { AdviseClient } from './client';
import { buildProfileTree, ProfileNode } from './model/profile';
import { ProfileSummary } from './model/protocol';

export class ProfileProvider implements vscode.TreeDataProvider<ProfileNode>, vscode.Disposable {
    private readonly changed = new vscode.EventEmitter<ProfileNode | undefined>();
    readonly onDidChangeTreeData = this.changed.event;
    private roots: ProfileNode[] = [];
    summary: ProfileSummary | undefined;
    view: vscode.TreeView<ProfileNode> | undefined;
    private readonly summaryEmitter = new vscode.EventEmitter<ProfileSummary | undefined>();
    /** the summary for the active document changed (the language status shows it) */
    readonly onDidChangeSummary = this.summaryEmitter.event;
    private seq = 0;

    constructor(private readonly advise: AdviseClient) {}

    async refresh(): Promise<void> {
        const seq = ++this.seq;
        const editor = vscode.window.activeTextEditor;
        const uri = editor && editor.document.uri.scheme === 'file' ? editor.document.uri.toString() : undefined;
        let summary: ProfileSummary | undefined;
        let problem: string | undefined;
        try {
            summary = await this.advise.profileSummary(uri);
        } catch (e) {
            problem = `advise/profileSummary failed: ${e instanceof Error ? e.message : String(e)}`;
        }
        if (seq !== this.seq) return; // a newer refresh is under way
        if (!summary && !problem) {
            problem = this.advise.unsupported.has('advise/profileSummary')
                ? 'This advise server has no advise/profileSummary request: update advise.'
                : this.advise.isRunning() ? undefined : (this.advise.problem || 'advise server is not running.');
        }
        this.summary = summary;
        this.roots = summary ? buildProfileTree(summary) : [];
        if (this.view) {
            this.view.message = problem;
            this.view.description = summary && summary.profiles.length ? `${summary.profiles.length}` : undefined;
        }
        this.changed.fire(undefined);
        this.summaryEmitter.fire(summary);
    }

    getTreeItem(node: ProfileNode): vscode.TreeItem {
        const state = node.children?.length
            ? (node.expanded ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed)
            : vscode.TreeItemCollapsibleState.None;
        const item = new vscode.TreeItem(node.label, state);
        // the expanded state is kept per id: the active file's profile gets a fresh one
        item.id = `${node.id}${node.expanded ? '#open' : ''}`;
        item.description = node.description;
        item.tooltip = node.tooltip;
        if (node.icon) item.iconPath = new vscode.ThemeIcon(node.icon);
        if (node.profilePath) {
            item.contextValue = 'profile';
            item.resourceUri = undefined;
        }
        if (node.location) {
            const loc = node.location;
            const range = new vscode.Range(loc.range.start.line, loc.range.start.character, loc.range.end.line, loc.range.end.character);
            item.command = { command: 'vscode.open', title: 'Go to line', arguments: [vscode.Uri.parse(loc.uri), { selection: range }] };
        }
        return item;
    }

    getChildren(node?: ProfileNode): ProfileNode[] {
        return node ? node.children ?? [] : this.roots;
    }

    dispose() {
        this.changed.dispose();
        this.summaryEmitter.dispose();
    }
}
