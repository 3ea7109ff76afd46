// The Findings view: the workspace's findings ranked by measured cost
// (`advise/findings`), grouped by file or by rule.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { AdviseClient } from './client';
import { buildFindingsTree, countBySeverity, FindingNode, GroupBy, GroupNode } from './model/findings';
import { Finding, ProfileInfo } from './model/protocol';

type Node = GroupNode | FindingNode;

const SEVERITY_ICONS: Record<string, vscode.ThemeIcon> = {
    error: new vscode.ThemeIcon('error', new vscode.ThemeColor('problemsErrorIcon.foreground')),
    warning: new vscode.ThemeIcon('warning', new vscode.ThemeColor('problemsWarningIcon.foreground')),
    info: new vscode.ThemeIcon('info', new vscode.ThemeColor('problemsInfoIcon.foreground')),
    hint: new vscode.ThemeIcon('lightbulb'),
};

export function relativePath(uri: string): string {
    const u = vscode.Uri.parse(uri);
    const rel = vscode.workspace.asRelativePath(u, vscode.workspace.workspaceFolders !== undefined &&
                                                   vscode.workspace.workspaceFolders.length > 1);
    return rel || path.basename(u.fsPath);
}

export class FindingsProvider implements vscode.TreeDataProvider<Node>, vscode.Disposable {
    private readonly changed = new vscode.EventEmitter<Node | undefined>();
    readonly onDidChangeTreeData = this.changed.event;
    private groups: GroupNode[] = [];
    private findings: Finding[] = [];
    private runSeconds = new Map<string, number>();
    private loading: Promise<void> | undefined;
    private again = false;
    private timer: NodeJS.Timeout | undefined;
    view: vscode.TreeView<Node> | undefined;
    /** resolves each time a refresh finished (for tests and commands) */
    private readonly refreshedEmitter = new vscode.EventEmitter<number>();
    readonly onDidRefresh = this.refreshedEmitter.event;

    constructor(private readonly advise: AdviseClient, private groupBy: GroupBy) {}

    setGroupBy(groupBy: GroupBy) {
        this.groupBy = groupBy;
        this.rebuild();
    }

    get grouping(): GroupBy { return this.groupBy; }

    /** a refresh after `delay` ms of quiet (saves come in bursts) */
    refreshSoon(delay = 750) {
        if (this.timer) clearTimeout(this.timer);
        this.timer = setTimeout(() => { this.timer = undefined; void this.refresh(); }, delay);
    }

    /** asks the server again; a refresh asked for while one runs follows it */
    refresh(): Promise<void> {
        if (this.loading) {
            this.again = true;
            return this.loading;
        }
        this.loading = this.load().finally(() => {
            this.loading = undefined;
            if (this.again) {
                this.again = false;
                void this.refresh();
            }
        });
        return this.loading;
    }

    private async load() {
        if (!this.advise.isRunning()) {
            this.findings = [];
            this.rebuild(this.advise.problem || 'advise server is not running.');
            return;
        }
        try {
            const findings = await vscode.window.withProgress(
                { location: { viewId: 'advise.findings' }, title: 'advise: ranking findings' },
                () => this.advise.findings());
            if (findings === undefined) {
                this.findings = [];
                this.rebuild(this.advise.unsupported.has('advise/findings')
                    ? 'This advise server has no advise/findings request: update advise.' : 'advise server is not running.');
                return;
            }
            this.findings = findings;
            await this.loadRunTimes(findings);
            this.rebuild();
        } catch (e) {
            this.rebuild(`advise/findings failed: ${e instanceof Error ? e.message : String(e)}`);
        }
        this.refreshedEmitter.fire(this.findings.length);
    }

    /** each file's run time, from the profile merged into it (for "N% of the run") */
    private async loadRunTimes(findings: Finding[]) {
        this.runSeconds.clear();
        const uris = [...new Set(findings.filter((f) => f.gain || f.cost_seconds > 0).map((f) => f.uri))];
        const byPath = new Map<string, ProfileInfo>();
        for (const uri of uris) {
            const summary = await this.advise.profileSummary(uri).catch(() => undefined);
            if (!summary) return; // an older server: no shares
            if (byPath.size === 0) for (const p of summary.profiles) byPath.set(p.path, p);
            const profile = summary.document?.profile ? byPath.get(summary.document.profile) : undefined;
            if (profile && profile.run_seconds > 0) this.runSeconds.set(uri, profile.run_seconds);
        }
    }

    private rebuild(problem?: string) {
        this.groups = buildFindingsTree(this.findings, {
            groupBy: this.groupBy,
            relativePath,
            runSecondsFor: (uri) => this.runSeconds.get(uri),
        });
        if (this.view) {
            const counts = countBySeverity(this.findings);
            const n = this.findings.length;
            this.view.badge = n ? { value: n, tooltip: `${n} findings: ${counts.error} errors, ${counts.warning} warnings, ` +
                                                      `${counts.info} infos, ${counts.hint} hints` } : undefined;
            this.view.message = problem ?? (n ? undefined : 'No findings in the workspace.');
            this.view.description = n ? `${n}, by ${this.groupBy}` : undefined;
        }
        this.changed.fire(undefined);
    }

    all(): readonly Finding[] { return this.findings; }
    roots(): readonly GroupNode[] { return this.groups; }

    getTreeItem(node: Node): vscode.TreeItem {
        if (node.kind === 'group') {
            const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.Expanded);
            item.id = node.id;
            item.description = node.description;
            item.tooltip = node.tooltip;
            item.contextValue = 'group';
            if (this.groupBy === 'file') {
                item.resourceUri = vscode.Uri.parse(node.findings[0].finding.uri);
                item.iconPath = vscode.ThemeIcon.File;
            } else {
                item.iconPath = SEVERITY_ICONS[['', 'error', 'warning', 'info', 'hint'][node.severity] ?? 'hint'];
            }
            return item;
        }
        const f = node.finding;
        const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.None);
        item.id = node.id;
        item.description = node.description;
        const tooltip = new vscode.MarkdownString(node.tooltip);
        tooltip.supportThemeIcons = false;
        item.tooltip = tooltip;
        item.iconPath = SEVERITY_ICONS[node.severity];
        item.contextValue = 'finding';
        item.accessibilityInformation = { label: `${node.severity} ${f.code}: ${node.label}, ${node.description}` };
        item.command = { command: 'advise.finding.reveal', title: 'Go to finding', arguments: [node] };
        return item;
    }

    getChildren(node?: Node): Node[] {
        if (!node) return this.groups;
        return node.kind === 'group' ? node.findings : [];
    }

    getParent(node: Node): Node | undefined {
        if (node.kind === 'group') return undefined;
        const key = this.groupBy === 'file' ? node.finding.uri : node.finding.code;
        return this.groups.find((g) => g.id === `${this.groupBy}:${key}`);
    }

    dispose() {
        if (this.timer) clearTimeout(this.timer);
        this.changed.dispose();
        this.refreshedEmitter.dispose();
    }
}
