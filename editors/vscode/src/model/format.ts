// Words for figures, as advise's own outputs write them (analysis/units.c):
// seconds in ns/µs/ms/s and bytes in bytes/kB/MB/GB with two or three
// significant digits, shares as
// percentages ("<0.1%", "3.1%", "29%"), and the label of a finding: its hint
// in plain words with its estimated gain. No 'vscode' here: node tests it.
import type { Finding } from './protocol';

const SECOND_STEPS: [number, string][] = [[1e-9, 'ns'], [1e-6, 'µs'], [1e-3, 'ms'], [1, 's']];

/** decimals giving two or three significant digits; -1 when v rounds to 1000 or more */
function decimalsFor(v: number): number {
    if (v < 9.995) return 2;
    if (v < 99.95) return 1;
    if (v < 999.5) return 0;
    return -1;
}

/** 0.00069 -> "690 µs", 0.0851 -> "85.1 ms", 4.2 -> "4.20 s" */
export function formatSeconds(seconds: number): string {
    if (!Number.isFinite(seconds)) return '? s';
    const sign = seconds < 0 ? '-' : '';
    const a = Math.abs(seconds);
    let i = 0;
    while (i + 1 < SECOND_STEPS.length && a >= SECOND_STEPS[i + 1][0]) i++;
    for (;;) {
        const v = a / SECOND_STEPS[i][0];
        const d = i === 0 ? (v < 999.5 ? 0 : -1) : decimalsFor(v);
        if (d < 0 && i + 1 < SECOND_STEPS.length) { i++; continue; }
        if (d < 0 && v >= 1e15) return `${sign}${v.toPrecision(3)} ${SECOND_STEPS[i][1]}`;
        return `${sign}${v.toFixed(d < 0 ? 0 : d)} ${SECOND_STEPS[i][1]}`;
    }
}

const BYTE_STEPS: [number, string][] = [[1, 'bytes'], [1e3, 'kB'], [1e6, 'MB'], [1e9, 'GB'], [1e12, 'TB']];

/** 512 -> "512 bytes", 20484 -> "20.5 kB", 1276116992 -> "1.28 GB" (decimal multiples, as analysis/units.c) */
export function formatBytes(bytes: number): string {
    if (!Number.isFinite(bytes)) return '? bytes';
    const sign = bytes < 0 ? '-' : '';
    const a = Math.abs(bytes);
    let i = 0;
    while (i + 1 < BYTE_STEPS.length && a >= BYTE_STEPS[i + 1][0]) i++;
    for (;;) {
        const v = a / BYTE_STEPS[i][0];
        const d = i === 0 ? (v < 999.5 ? 0 : -1) : decimalsFor(v);
        if (d < 0 && i + 1 < BYTE_STEPS.length) { i++; continue; }
        if (d < 0 && v >= 1e15) return `${sign}${v.toPrecision(3)} ${BYTE_STEPS[i][1]}`;
        return `${sign}${v.toFixed(d < 0 ? 0 : d)} ${BYTE_STEPS[i][1]}`;
    }
}

/** a share 0..1 as a percentage: 0 -> "0%", 0.0004 -> "<0.1%", 0.031 -> "3.1%", 0.29 -> "29%" */
export function formatShare(share: number): string {
    if (!Number.isFinite(share)) return '?%';
    const sign = share < 0 ? '-' : '';
    const pct = Math.abs(share) * 100;
    if (pct === 0) return '0%';
    if (pct < 0.1) return `${sign}<0.1%`;
    if (pct < 9.95) return `${sign}${pct.toFixed(1)}%`;
    return `${sign}${pct.toFixed(0)}%`;
}

/** 1234567 -> "1,234,567" */
export function formatCount(n: number): string {
    return Math.round(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** an age in seconds in words: "just now", "5 minutes", "3 hours", "2 days", "5 weeks", "4 months", "2 years" */
export function formatAge(seconds: number): string {
    if (!Number.isFinite(seconds) || seconds < 0) return 'of unknown age';
    const units: [number, string][] = [[365 * 86400, 'year'], [30 * 86400, 'month'], [7 * 86400, 'week'],
                                       [86400, 'day'], [3600, 'hour'], [60, 'minute']];
    for (const [size, name] of units) {
        const n = Math.floor(seconds / size);
        if (n >= 1) return `${n} ${name}${n === 1 ? '' : 's'}`;
    }
    return 'just now';
}

/** "2 days old", "just now" */
export function formatAgeOld(seconds: number): string {
    const age = formatAge(seconds);
    return age === 'just now' || age === 'of unknown age' ? age : `${age} old`;
}

export const SEVERITY_NAMES = ['', 'error', 'warning', 'info', 'hint'];

export function severityName(severity: number): string {
    return SEVERITY_NAMES[severity] ?? 'hint';
}

/**
 * The hint of a finding's message in plain words: the part before its first
 * colon (advise writes "what: why"), else before a semicolon or ", so",
 * without the backticks that mark code, cut at about `max` characters on a
 * word boundary.
 */
export function plainHint(message: string, max = 90): string {
    let text = message.replace(/`/g, '').replace(/\s+/g, ' ').trim();
    // "what: why", else "what; more", else "what, so why"
    for (const stop of [/: /, /[.;] /, /, so /]) {
        const at = text.search(stop);
        if (at > 10) {
            const head = text.slice(0, at);
            // a label too short to say anything ("launch-bound: 2,716 tiny kernel launches from ...") keeps its next clause
            if (at < 24 && stop.source === ': ') {
                const rest = text.slice(at + 2);
                const end = rest.search(/ \(|; | while |, /);
                text = `${head}: ${end > 0 ? rest.slice(0, end) : rest}`;
            } else {
                text = head;
            }
            break;
        }
    }
    if (text.length > max) {
        const cut = text.lastIndexOf(' ', max - 1);
        text = `${text.slice(0, cut > max / 2 ? cut : max - 1).replace(/[,;:]$/, '')}…`;
    }
    return text;
}

/**
 * What fixing a finding is worth, in words: "about 16.7 ms, 0.6% of the run"
 * from the estimated gain (its scope said when it is not the whole program),
 * else what its lines measurably cost ("costs 85.1 ms, 3.1% of the run"),
 * else null. `runSeconds` is the wall time of the run the figures come from
 * (the profile's run_seconds), when known.
 */
export function formatGain(finding: Pick<Finding, 'gain' | 'cost_seconds'>, runSeconds?: number | null): string | null {
    const share = (s: number) => (runSeconds && runSeconds > 0 ? `, ${formatShare(s / runSeconds)} of the run` : '');
    const gain = finding.gain;
    if (gain && Number.isFinite(gain.seconds) && gain.seconds > 0) {
        if (gain.scope === 'kernel') return `about ${formatSeconds(gain.seconds)} local to the kernel`;
        return `about ${formatSeconds(gain.seconds)}${share(gain.seconds)}`;
    }
    if (Number.isFinite(finding.cost_seconds) && finding.cost_seconds > 0)
        return `costs ${formatSeconds(finding.cost_seconds)}${share(finding.cost_seconds)}`;
    return null;
}

/** the tree's label of a finding: "hint — about 16.7 ms, 0.6% of the run" */
export function findingLabel(finding: Finding, runSeconds?: number | null): string {
    const hint = plainHint(finding.message);
    const gain = formatGain(finding, runSeconds);
    return gain ? `${hint} — ${gain}` : hint;
}
