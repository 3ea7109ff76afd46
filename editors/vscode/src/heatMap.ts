// The heat map: lines shaded in the gutter and the overview ruler by their
// share of the measured GPU time, or (`advise.heatMap.metric`: "memory") of
// the device memory live at the memory peak (`advise/lineCosts`), one
// decoration type per share bucket, legible in light and dark themes; time in
// warm orange, memory in blue so that the two never read alike.
import * as vscode from 'vscode';
import { AdviseClient, DOCUMENT_SELECTOR } from './client';
import { buildHeatMap, HEAT_THRESHOLDS } from './model/heat';
import { formatShare } from './model/format';
import type { HeatMetric } from './model/protocol';

// hottest first: opacity of the line's background and of the gutter bar
const ALPHAS = [0.34, 0.22, 0.13, 0.07];
const BARS = [1.0, 0.75, 0.5, 0.3];

// per metric: the dark theme's colour, its gutter colour, the light theme's and its gutter colour
const COLOURS: Record<HeatMetric, [string, string, string, string]> = {
    time: ['255, 120, 40', '255, 140, 60', '220, 60, 0', '200, 50, 0'],
    memory: ['60, 150, 255', '90, 170, 255', '0, 90, 220', '0, 80, 200'],
};

function gutterIcon(rgb: string, alpha: number): vscode.Uri {
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16">` +
        `<rect x="10" y="0" width="5" height="16" fill="rgb(${rgb})" fill-opacity="${alpha}"/></svg>`;
    return vscode.Uri.parse(`data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`);
}

function decorationTypes(metric: HeatMetric): vscode.TextEditorDecorationType[] {
    const [dark, darkGutter, light, lightGutter] = COLOURS[metric];
    return HEAT_THRESHOLDS.map((_, i) => vscode.window.createTextEditorDecorationType({
        isWholeLine: true,
        overviewRulerLane: vscode.OverviewRulerLane.Left,
        dark: {
            backgroundColor: `rgba(${dark}, ${ALPHAS[i]})`,
            overviewRulerColor: `rgba(${dark}, ${Math.min(1, ALPHAS[i] * 3)})`,
            gutterIconPath: gutterIcon(darkGutter, BARS[i]),
            gutterIconSize: 'contain',
        },
        light: {
            backgroundColor: `rgba(${light}, ${ALPHAS[i] * 0.8})`,
            overviewRulerColor: `rgba(${lightGutter}, ${Math.min(1, ALPHAS[i] * 3)})`,
            gutterIconPath: gutterIcon(lightGutter, BARS[i]),
            gutterIconSize: 'contain',
        },
        rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
    }));
}

export class HeatMap implements vscode.Disposable {
    private types: Record<HeatMetric, vscode.TextEditorDecorationType[]> = {
        time: decorationTypes('time'),
        memory: decorationTypes('memory'),
    };
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
                if (e.affectsConfiguration('advise.heatMap.enabled') || e.affectsConfiguration('advise.heatMap.metric'))
                    void this.refresh();
            }),
            advise.onDidChangeProfiles(() => this.refreshSoon(100)),
            advise.onDidChangeState((s) => { if (s === 'running') this.refreshSoon(100); }),
        );
    }

    get enabled(): boolean {
        return vscode.workspace.getConfiguration('advise').get<boolean>('heatMap.enabled', true);
    }

    /** what the lines are shaded by: `advise.heatMap.metric` */
    get metric(): HeatMetric {
        return vscode.workspace.getConfiguration('advise').get<string>('heatMap.metric', 'time') === 'memory' ? 'memory' : 'time';
    }

    /** shades by the other metric: GPU time or device memory (turning the heat map on when it was off) */
    async switchMetric(): Promise<void> {
        const config = vscode.workspace.getConfiguration('advise');
        const next: HeatMetric = this.metric === 'memory' ? 'time' : 'memory';
        const target = (key: string) => config.inspect(key)?.workspaceValue !== undefined ? vscode.ConfigurationTarget.Workspace
                                                                                        : vscode.ConfigurationTarget.Global;
        await config.update('heatMap.metric', next, target('heatMap.metric'));
        if (!this.enabled) await config.update('heatMap.enabled', true, target('heatMap.enabled'));
        void vscode.window.setStatusBarMessage(
            `advise: heat map of ${next === 'memory' ? 'device memory at the peak (advise profile --memory)' : 'GPU time'}`, 3000);
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
        const all = [...this.types.time, ...this.types.memory];
        if (!this.enabled) {
            for (const e of vscode.window.visibleTextEditors) for (const t of all) e.setDecorations(t, []);
            this.shaded.clear();
            return;
        }
        const metric = this.metric;
        for (const editor of editors) {
            const uri = editor.document.uri.toString();
            let costs;
            try {
                costs = await this.advise.lineCosts(uri, metric);
            } catch {
                costs = undefined;
            }
            // a server older than the memory metric answers with time: shade nothing rather than the wrong figure
            if (costs && (costs.metric ?? 'time') !== metric) costs = undefined;
            if (!costs) {
                for (const t of all) editor.setDecorations(t, []);
                this.shaded.delete(uri);
                continue;
            }
            for (const t of this.types[metric === 'memory' ? 'time' : 'memory']) editor.setDecorations(t, []);
            const map = buildHeatMap(costs);
            const lastLine = editor.document.lineCount - 1;
            const types = this.types[metric];
            map.buckets.forEach((lines, i) => {
                const options: vscode.DecorationOptions[] = [];
                for (const line of lines) {
                    if (line > lastLine) continue;
                    const hover = map.lines.find((l) => l.line === line)?.hover ?? '';
                    options.push({ range: editor.document.lineAt(line).range, hoverMessage: new vscode.MarkdownString(hover) });
                }
                editor.setDecorations(types[i], options);
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
        for (const t of [...this.types.time, ...this.types.memory]) t.dispose();
        this.types = { time: [], memory: [] };
    }
}
