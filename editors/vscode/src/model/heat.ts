// The heat map's model: a document's lines bucketed by their share of the
// measured GPU time, or of the device memory live at the memory peak
// (`advise/lineCosts` with "metric": "memory", from profiles recorded with
// `advise profile --memory`), each with the words of its hover.
// No 'vscode' here: node tests it against the real server.
import type { HeatMetric, LineCosts, LineCost } from './protocol';
import { formatBytes, formatCount, formatSeconds, formatShare } from './format';

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
    metric: HeatMetric;
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
    const parts = [`${formatShare(c.share)} of ${denominator}: ${formatSeconds(c.gpu_seconds ?? 0)} on the GPU`];
    const launches = c.launches ?? 0, waited = c.host_wait_seconds ?? 0;
    if (launches > 0) parts.push(`${formatCount(launches)} launch${launches === 1 ? '' : 'es'}`);
    if (waited > 0) parts.push(`the host waited ${formatSeconds(waited)}`);
    return withStale(`advise heat map: ${parts.join(' · ')}`, stale);
}

/** "advise heat map (memory): 1.28 GB live at the memory peak (37% of ...) · grows 33.6 MB per step · 238 allocations" */
export function memoryLineHover(c: LineCost, denominator: string, stale: boolean): string {
    const parts = [`${formatBytes(c.peak_bytes ?? 0)} live at the memory peak (${formatShare(c.share)} of ${denominator})`];
    const growth = c.growth_bytes_per_step ?? 0, allocations = c.allocations ?? 0;
    if (growth > 0) parts.push(`grows ${formatBytes(growth)} per optimizer step`);
    if (allocations > 0)
        parts.push(`${formatCount(allocations)} allocation${allocations === 1 ? '' : 's'}, ${formatBytes(c.allocated_bytes ?? 0)} in all`);
    return withStale(`advise heat map (memory): ${parts.join(' · ')}`, stale);
}

function withStale(text: string, stale: boolean): string {
    return stale ? `${text} (profile older than this file)` : text;
}

function emptySummary(metric: HeatMetric, profile: string | null): string {
    if (metric === 'memory')
        return profile ? 'no line of this file held device memory at the peak (or the profile has no memory: advise profile --memory)'
                       : 'no profile covers this file';
    return profile ? 'no line of this file took a measurable share of the GPU time' : 'no profile covers this file';
}

export function buildHeatMap(costs: LineCosts): HeatMap {
    const metric: HeatMetric = costs.metric === 'memory' ? 'memory' : 'time';
    const buckets: number[][] = HEAT_THRESHOLDS.map(() => []);
    const lines: HeatLine[] = [];
    const denominator = costs.denominator || (metric === 'memory' ? 'the device memory allocated at the peak' : "the run's GPU time");
    const hoverOf = metric === 'memory' ? memoryLineHover : lineHover;
    let shaded = 0;
    for (const c of costs.lines) {
        const bucket = bucketOf(c.share);
        if (bucket < 0) continue;
        buckets[bucket].push(c.line);
        shaded += c.share;
        lines.push({ line: c.line, bucket, share: c.share, hover: hoverOf(c, denominator, costs.stale) });
    }
    const n = lines.length;
    const summary = n === 0 ? emptySummary(metric, costs.profile)
                            : `${formatShare(shaded)} of ${denominator} on ${n} line${n === 1 ? '' : 's'}`;
    return { metric, buckets, lines, stale: costs.stale, profile: costs.profile, summary };
}
