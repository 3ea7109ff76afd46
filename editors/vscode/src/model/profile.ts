// The Profile view's model: the runs `advise/profileSummary` reports, the
// one merged into the active file first, each with GPU busy and idle time,
// its top kernels and its largest gaps, linked to their lines.
// No 'vscode' here: node tests it against the real server.
import type { Location, ProfileInfo, ProfileSummary } from './protocol';
import { formatAgeOld, formatCount, formatSeconds, formatShare } from './format';

export interface ProfileNode {
    id: string;
    label: string;
    description?: string;
    tooltip?: string;
    /** codicon name */
    icon?: string;
    location?: Location | null;
    children?: ProfileNode[];
    expanded?: boolean;
    /** the profile file, on a profile's node */
    profilePath?: string;
}

function basename(path: string): string {
    return path.replace(/\\/g, '/').split('/').pop() ?? path;
}

/** "H200 · 2 days old" and the like, for a profile's line */
export function profileDescription(p: ProfileInfo): string {
    const parts = [];
    if (p.gpu) parts.push(p.gpu);
    parts.push(p.age_seconds === null || p.age_seconds === undefined ? 'of unknown age' : formatAgeOld(p.age_seconds));
    return parts.join(' · ');
}

export function profileNode(p: ProfileInfo, options: { current?: boolean; stale?: boolean; expanded?: boolean } = {}): ProfileNode {
    const busy = p.gpu_busy_share;
    const children: ProfileNode[] = [];
    children.push({
        id: `${p.path}#busy`,
        label: busy === null || busy === undefined ? `GPU busy ${formatSeconds(p.gpu_busy_seconds)}`
                                                   : `GPU busy ${formatShare(busy)}`,
        description: `${formatSeconds(p.gpu_busy_seconds)} of a ${formatSeconds(p.run_seconds)} run`,
        icon: 'pulse',
    });
    children.push({
        id: `${p.path}#idle`,
        label: `GPU idle ${formatSeconds(p.gpu_idle_seconds)}`,
        description: p.run_seconds > 0 ? `${formatShare(p.gpu_idle_seconds / p.run_seconds)} of the run` : undefined,
        icon: 'debug-pause',
    });
    if (p.kernels.length)
        children.push({
            id: `${p.path}#kernels`,
            label: 'Top kernels',
            description: `${p.kernels.length}`,
            icon: 'symbol-event',
            expanded: true,
            children: p.kernels.map((k, i) => ({
                id: `${p.path}#kernel${i}`,
                label: k.name,
                description: `${formatShare(k.share)} · ${formatSeconds(k.gpu_seconds)} · ${formatCount(k.launches)} launch${k.launches === 1 ? '' : 'es'}`,
                tooltip: `${k.full_name || k.name}: ${formatSeconds(k.gpu_seconds)} on the GPU, ${formatShare(k.share)} of the run's GPU time, ` +
                    `${formatCount(k.launches)} launches${k.location ? '' : ' (no line of this project launched it)'}`,
                icon: 'symbol-function',
                location: k.location,
            })),
        });
    if (p.gaps.length)
        children.push({
            id: `${p.path}#gaps`,
            label: 'Largest gaps',
            description: `${p.gaps.length}`,
            icon: 'debug-step-over',
            expanded: true,
            children: p.gaps.map((g, i) => ({
                id: `${p.path}#gap${i}`,
                label: `${formatSeconds(g.seconds)} idle`,
                description: `${formatShare(g.share_of_run)} of the run${g.location ? ` · ${basename(g.location.uri)}:${g.location.range.start.line + 1}` : ''}`,
                tooltip: g.description,
                icon: 'watch',
                location: g.location,
            })),
        });
    let description = profileDescription(p);
    if (options.current) description += options.stale ? ' · this file (stale: changed since)' : ' · this file';
    return {
        id: p.path,
        label: p.name || basename(p.path),
        description,
        tooltip: `${p.path}\nrecorded ${p.created || '?'} on ${p.gpu || 'an unknown GPU'}; ` +
            `run ${formatSeconds(p.run_seconds)}, GPU busy ${formatSeconds(p.gpu_busy_seconds)}, idle ${formatSeconds(p.gpu_idle_seconds)}`,
        icon: options.current ? 'star-full' : 'history',
        expanded: options.expanded ?? false,
        children,
        profilePath: p.path,
    };
}

/**
 * The view's roots: the profile merged into the active document first and
 * expanded (or the newest one when no document is active), then the others,
 * newest first.
 */
export function buildProfileTree(summary: ProfileSummary): ProfileNode[] {
    const current = summary.document?.profile ?? null;
    const first = current ?? summary.profiles[0]?.path ?? null;
    const ordered = [...summary.profiles].sort((a, b) => (a.path === first ? -1 : b.path === first ? 1 : 0));
    return ordered.map((p) => profileNode(p, {
        current: p.path === current,
        stale: p.path === current && !!summary.document?.stale,
        expanded: p.path === first,
    }));
}

/** the words of the language status item for the active document */
export function profileStatus(summary: ProfileSummary): { text: string; detail: string; stale: boolean } {
    if (!summary.profiles.length) return { text: 'no profile', detail: 'no profile in this project yet', stale: false };
    const path = summary.document?.profile ?? null;
    const p = summary.profiles.find((x) => x.path === path);
    if (!p) return { text: 'not profiled', detail: `no profile of ${summary.profiles.length} covers this file`, stale: false };
    const stale = !!summary.document?.stale;
    return {
        text: `profile ${p.name || basename(p.path)}${stale ? ' (stale)' : ''}`,
        detail: `${profileDescription(p)}${stale ? ' · this file changed since it was profiled' : ''}`,
        stale,
    };
}
