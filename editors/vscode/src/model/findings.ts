// The Findings view's model: the ranked findings of `advise/findings`
// grouped by file or by rule, with their labels, descriptions and tooltips.
// No 'vscode' here: node tests it against the real server.
import { evidenceText, type Finding } from './protocol';
import { findingLabel, formatGain, formatSeconds, plainHint, severityName } from './format';

export type GroupBy = 'file' | 'rule';

export interface FindingNode {
    kind: 'finding';
    /** stable within one answer: uri, line, character and code */
    id: string;
    /** 1 for the finding worth most in the workspace */
    rank: number;
    finding: Finding;
    /** the hint in plain words with its estimated gain */
    label: string;
    /** where: "samples/python/benchmark_matmul.py:62" (by rule) or "line 62" (by file) */
    description: string;
    /** markdown: the rule, the whole message, the evidence, the gain */
    tooltip: string;
    severity: string;
}

export interface GroupNode {
    kind: 'group';
    id: string;
    /** the file's relative path, or "PY004 host-tensor-then-copy" */
    label: string;
    /** "3 findings · top: about 16.7 ms, 0.6% of the run" */
    description: string;
    tooltip: string;
    findings: FindingNode[];
    /** the rank of its best finding: groups are listed by it */
    rank: number;
    /** the largest cost_seconds of its findings (gains are never added up) */
    topCostSeconds: number;
    /** the most severe of its findings (1 error ... 4 hint) */
    severity: number;
}

export interface TreeOptions {
    groupBy: GroupBy;
    /** a URI as the user reads it, relative to the workspace folder */
    relativePath: (uri: string) => string;
    /** the wall time of the run whose figures a file carries (profile run_seconds) */
    runSecondsFor?: (uri: string) => number | null | undefined;
}

/**
 * The findings in rank order: estimated gain, else measured cost (both are
 * cost_seconds), then severity, path and position: the order `advise report`
 * and `advise/findings` use. The server's order is kept where it agrees.
 */
export function rankFindings(findings: readonly Finding[]): Finding[] {
    return findings
        .map((f, i) => ({ f, i }))
        .sort((a, b) =>
            (b.f.cost_seconds || 0) - (a.f.cost_seconds || 0) ||
            a.f.severity - b.f.severity ||
            (a.f.uri < b.f.uri ? -1 : a.f.uri > b.f.uri ? 1 : 0) ||
            a.f.range.start.line - b.f.range.start.line ||
            a.f.range.start.character - b.f.range.start.character ||
            a.i - b.i)
        .map((x) => x.f);
}

function escapeMarkdown(text: string): string {
    return text.replace(/([\\*_{}[\]()#+!|<>])/g, '\\$1');
}

/** the tooltip of a finding, in markdown */
export function findingTooltip(f: Finding, where: string, runSeconds?: number | null): string {
    const lines = [`**${f.code}** \`${f.name}\` · ${severityName(f.severity)} · ${escapeMarkdown(where)}`, '',
                   // the message keeps its backticks: they mark code in markdown too
                   f.message.replace(/([\\*_{}[\]#+!|<>])/g, '\\$1')];
    const escape = (t: string) => t.replace(/([\\*_{}[\]#+!|<>])/g, '\\$1');
    if (f.advice) lines.push('', `**What to do:** ${escape(f.advice)}`);
    const gain = formatGain(f, runSeconds);
    if (gain) {
        const model = f.gain?.model ? evidenceText(f.gain.model) : '';
        lines.push('', `**${f.gain ? 'Estimated gain' : 'Measured cost'}:** ${gain}${model ? ` (${escape(model)})` : ''}`);
    }
    const evidence = (f.evidence ?? []).map(evidenceText).filter((t) => t);
    if (evidence.length) {
        lines.push('');
        for (const e of evidence) lines.push(`- ${escape(e)}`);
    }
    if (f.stale) lines.push('', '_The file changed since it was profiled: its figures may be out of date._');
    return lines.join('\n');
}

export function findingId(f: Finding): string {
    return `${f.uri}#${f.range.start.line}:${f.range.start.character}:${f.code}`;
}

/** Builds the tree: groups ranked by their best finding, each holding its findings in rank order. */
export function buildFindingsTree(findings: readonly Finding[], options: TreeOptions): GroupNode[] {
    const ranked = rankFindings(findings);
    const groups = new Map<string, GroupNode>();
    ranked.forEach((f, i) => {
        const rank = i + 1;
        const path = options.relativePath(f.uri);
        const run = options.runSecondsFor?.(f.uri) ?? null;
        const line = f.range.start.line + 1;
        const where = `${path}:${line}`;
        const node: FindingNode = {
            kind: 'finding',
            id: findingId(f),
            rank,
            finding: f,
            label: findingLabel(f, run),
            description: options.groupBy === 'file' ? `line ${line}${f.stale ? ' · stale' : ''}`
                                                    : `${where}${f.stale ? ' · stale' : ''}`,
            tooltip: findingTooltip(f, where, run),
            severity: severityName(f.severity),
        };
        const key = options.groupBy === 'file' ? f.uri : f.code;
        let group = groups.get(key);
        if (!group) {
            group = {
                kind: 'group',
                id: `${options.groupBy}:${key}`,
                label: options.groupBy === 'file' ? path : `${f.code} ${f.name}`,
                description: '',
                tooltip: '',
                findings: [],
                rank,
                topCostSeconds: f.cost_seconds || 0,
                severity: f.severity,
            };
            groups.set(key, group);
        }
        group.findings.push(node);
        group.severity = Math.min(group.severity, f.severity);
    });
    const out = [...groups.values()].sort((a, b) => a.rank - b.rank);
    for (const g of out) {
        const n = g.findings.length;
        const top = g.findings[0];
        const topGain = formatGain(top.finding, options.runSecondsFor?.(top.finding.uri) ?? null);
        g.description = `${n} finding${n === 1 ? '' : 's'}${topGain ? ` · top: ${topGain}` : ''}`;
        g.tooltip = `${g.label}: ${n} finding${n === 1 ? '' : 's'}` +
            (g.topCostSeconds > 0 ? `; the largest worth ${formatSeconds(g.topCostSeconds)}` : '') +
            `; first: ${plainHint(top.finding.message)}`;
    }
    return out;
}

/** counts by severity name, for the view's badge and message */
export function countBySeverity(findings: readonly Finding[]): Record<string, number> {
    const out: Record<string, number> = { error: 0, warning: 0, info: 0, hint: 0 };
    for (const f of findings) out[severityName(f.severity)]++;
    return out;
}
