// The heat map: lines shaded in the gutter and the overview ruler by their
// share of the measured GPU time (`advise/lineCosts`), one decoration type
// per share bucket, legible in light and dark themes.
import * as vscode from 'vscode';
import { AdviseClient, DOCUMENT_SELECTOR } from './client';
import { buildHeatMap, HEAT_THRESHOLDS } from './model/heat';
import { formatShare } from './model/format';

// hottest first: opacity of the line's background and of the gutter bar
const ALPHAS = [0.34, 0.22, 0.13, 0.07];
const BARS = [1.0, 0.75, 0.5, 0.3];

function gutterIcon(rgb: string, alpha: number): vscode.Uri {
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16">` +
        `<rect x="10" y="0" width="5" height="16" fill="rgb(${rgb})" fill-opacity="${alpha}"/></svg>`;
    return vscode.Uri.parse(`data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`);
}

function decorationTypes(): vscode.TextEditorDecorationType[] {
    return HEAT_THRESHOLDS.map((_, i) => vscode.window.createTextEditorDecorationType({
        isWholeLine: true,
        overviewRulerLane: vscode.OverviewRulerLane.Left,
        // dark themes: a warm orange; light themes: a deeper red-orange
        dark: {
            backgroundColor: `rgba(255, 120, 40, ${ALPHAS[i]})`,
            overviewRulerColor: `rgba(255, 120, 40, ${Math.min(1, ALPHAS[i] * 3)})`,
            gutterIconPath: gutterIcon('255, 140, 60', BARS[i]),
            gutterIconSize: 'contain',
        },
        light: {
            backgroundColor: `rgba(220, 60, 0, ${ALPHAS[i] * 0.8})`,
            overviewRulerColor: `rgba(200, 50, 0, ${Math.min(1, ALPHAS[i] * 3)})`,
            gutterIconPath: gutterIcon('200, 50, 0', BARS[i]),
            gutterIconSize: 'contain',
        },
        rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
    }));
}

export class HeatMap implements vscode.Disposable {
    private types: vscode.TextEditorDecorationType[] = decorationTypes();
    private timer: NodeJS.Timeout | undefined;
    private readonly disposables: vscode.Disposable[] = [];
    /** the number of lines shaded per visible document (for tests and the status) */
    readonly shaded = new Map<string, number>();

    constructor(private readonly advise: AdviseClient) {
        this.disposables.push(
            vscode.window.onDidChangeVisibleTextEditors(() => this.refreshSoon(50)),
            vscode.window.onDidChangeActiveTextEditor(() => this.refreshSoon(50)),
            vscode.workspace.onDidSaveTextDocument(() => this.refreshSoon(300)),
            vscode.workspace.onDidChangeConfiguration((e) => {
                if (e.affectsConfiguration('advise.heatMap.enabled')) void this.refresh();
            }),
            advise.onDidChangeProfiles(() => this.refreshSoon(100)),
            advise.onDidChangeState((s) => { if (s === 'running') this.refreshSoon(100); }),
        );
    }

    get enabled(): boolean {
        return vscode.workspace.getConfiguration('advise').get<boolean>('heatMap.enabled', true);
    }

    async toggle(): Promise<void> {
        const config = vscode.workspace.getConfiguration('advise');
        const inspected = config.inspect<boolean>('heatMap.enabled');
        const target = inspected?.workspaceValue !== undefined ? vscode.ConfigurationTarget.Workspace
                                                               : vscode.ConfigurationTarget.Global;
        await config.update('heatMap.enabled', !this.enabled, target);
        void vscode.window.setStatusBarMessage(`advise: heat map ${this.enabled ? 'on' : 'off'}`, 3000);
    }

    refreshSoon(delay: number) {
        if (this.timer) clearTimeout(this.timer);
        this.timer = setTimeout(() => { this.timer = undefined; void this.refresh(); }, delay);
    }

    async refresh(): Promise<void> {
        const editors = vscode.window.visibleTextEditors.filter((e) => vscode.languages.match(DOCUMENT_SELECTOR, e.document) > 0);
        if (!this.enabled) {
            for (const e of vscode.window.visibleTextEditors) for (const t of this.types) e.setDecorations(t, []);
            this.shaded.clear();
            return;
        }
        for (const editor of editors) {
            const uri = editor.document.uri.toString();
            let costs;
            try {
                costs = await this.advise.lineCosts(uri);
            } catch {
                costs = undefined;
            }
            if (!costs) {
                for (const t of this.types) editor.setDecorations(t, []);
                this.shaded.delete(uri);
                continue;
            }
            const map = buildHeatMap(costs);
            const lastLine = editor.document.lineCount - 1;
            map.buckets.forEach((lines, i) => {
                const options: vscode.DecorationOptions[] = [];
                for (const line of lines) {
                    if (line > lastLine) continue;
                    const hover = map.lines.find((l) => l.line === line)?.hover ?? '';
                    options.push({ range: editor.document.lineAt(line).range, hoverMessage: new vscode.MarkdownString(hover) });
                }
                editor.setDecorations(this.types[i], options);
            });
            this.shaded.set(uri, map.lines.length);
        }
    }

    /** the legend, for the command's message */
    static legend(): string {
        return HEAT_THRESHOLDS.map((t) => `≥${formatShare(t)}`).join(', ');
    }

    dispose() {
        if (this.timer) clearTimeout(this.timer);
        for (const d of this.disposables) d.dispose();
        for (const t of this.types) t.dispose();
        this.types = [];
    }
}
