// The heat map's model: a document's lines bucketed by their share of the
// measured GPU time (`advise/lineCosts`), each with the words of its hover.
// No 'vscode' here: node tests it against the real server.
import type { LineCosts, LineCost } from './protocol';
import { formatCount, formatSeconds, formatShare } from './format';

/** The lowest share of each bucket, hottest first: 20%, 5%, 1%, 0.1%. */
export const HEAT_THRESHOLDS = [0.2, 0.05, 0.01, 0.001] as const;

export interface HeatLine {
    line: number;
    /** 0 is the hottest bucket */
    bucket: number;
    share: number;
    hover: string;
}

export interface HeatMap {
    /** line numbers (0-based) per bucket, hottest bucket first */
    buckets: number[][];
    lines: HeatLine[];
    stale: boolean;
    profile: string | null;
    /** "45% of the run's GPU time on 3 lines" */
    summary: string;
}

/** the bucket of a share, or -1 when it is too small to shade */
export function bucketOf(share: number): number {
    if (!Number.isFinite(share)) return -1;
    for (let i = 0; i < HEAT_THRESHOLDS.length; i++) if (share >= HEAT_THRESHOLDS[i]) return i;
    return -1;
}

export function lineHover(c: LineCost, denominator: string, stale: boolean): string {
    const parts = [`${formatShare(c.share)} of ${denominator}: ${formatSeconds(c.gpu_seconds)} on the GPU`];
    if (c.launches > 0) parts.push(`${formatCount(c.launches)} launch${c.launches === 1 ? '' : 'es'}`);
    if (c.host_wait_seconds > 0) parts.push(`the host waited ${formatSeconds(c.host_wait_seconds)}`);
    let text = `advise heat map: ${parts.join(' · ')}`;
    if (stale) text += ' (profile older than this file)';
    return text;
}

export function buildHeatMap(costs: LineCosts): HeatMap {
    const buckets: number[][] = HEAT_THRESHOLDS.map(() => []);
    const lines: HeatLine[] = [];
    const denominator = costs.denominator || "the run's GPU time";
    let shaded = 0;
    for (const c of costs.lines) {
        const bucket = bucketOf(c.share);
        if (bucket < 0) continue;
        buckets[bucket].push(c.line);
        shaded += c.share;
        lines.push({ line: c.line, bucket, share: c.share, hover: lineHover(c, denominator, costs.stale) });
    }
    const n = lines.length;
    const summary = n === 0 ? (costs.profile ? 'no line of this file took a measurable share of the GPU time'
                                             : 'no profile covers this file')
                            : `${formatShare(shaded)} of ${denominator} on ${n} line${n === 1 ? '' : 's'}`;
    return { buckets, lines, stale: costs.stale, profile: costs.profile, summary };
}
