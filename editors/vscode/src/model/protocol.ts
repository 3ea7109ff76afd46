// The shapes of advise's own requests and notifications (docs/lsp.md).
// Kept free of 'vscode' so that node can test the models built on them.

export interface Position { line: number; character: number }
export interface Range { start: Position; end: Position }
export interface Location { uri: string; range: Range }

/** A typed evidence item (docs/json-evidence.md); older servers sent plain strings. */
export interface EvidenceItem {
    kind: 'note' | 'measured' | 'model' | 'caveat' | string;
    text: string;
    template?: string;
    values?: { value: number; unit: string }[];
}

export type Evidence = string | EvidenceItem;

/** the words of an evidence item, whichever shape it has */
export function evidenceText(e: Evidence): string {
    return typeof e === 'string' ? e : typeof e?.text === 'string' ? e.text : '';
}

/** `gain` of a finding: an estimate for that finding alone. */
export interface Gain {
    seconds: number;
    /** 'program': saved on the whole run; 'kernel': local to the kernel */
    scope: string;
    /** how it was estimated */
    model?: Evidence | null;
}

/** One item of `advise/findings`. */
export interface Finding {
    uri: string;
    range: Range;
    code: string;
    name: string;
    /** LSP DiagnosticSeverity: 1 error ... 4 hint */
    severity: number;
    message: string;
    evidence: Evidence[];
    gain: Gain | null;
    cost_seconds: number;
    stale: boolean;
    /** what to do, one line, where no fix edit says it (absent otherwise) */
    advice?: string;
}

export interface KernelSummary {
    /** the short name; full_name is the whole (demangled) one */
    name: string;
    full_name?: string;
    gpu_seconds: number;
    share: number;
    launches: number;
    location: Location | null;
}

export interface GapSummary {
    seconds: number;
    share_of_run: number;
    location: Location | null;
    description: string;
}

export interface ProfileInfo {
    path: string;
    name: string;
    created: string;
    age_seconds: number;
    gpu: string;
    run_seconds: number;
    gpu_busy_seconds: number;
    gpu_idle_seconds: number;
    gpu_busy_share: number | null;
    kernels: KernelSummary[];
    gaps: GapSummary[];
}

/** The answer to `advise/profileSummary`. */
export interface ProfileSummary {
    profiles: ProfileInfo[];
    document: { uri: string; profile: string | null; stale: boolean } | null;
}

/** What the heat map shades lines by: GPU time, or device memory live at the peak (`advise profile --memory`). */
export type HeatMetric = 'time' | 'memory';

/** One line of `advise/lineCosts`: the time fields with metric "time", the memory fields with "memory". */
export interface LineCost {
    line: number;
    /** the line's share of `denominator` */
    share: number;
    gpu_seconds?: number;
    host_wait_seconds?: number;
    launches?: number;
    /** bytes live at the memory peak */
    peak_bytes?: number;
    growth_bytes_per_step?: number;
    allocations?: number;
    allocated_bytes?: number;
}

/** The answer to `advise/lineCosts`. */
export interface LineCosts {
    uri: string;
    profile: string | null;
    stale: boolean;
    /** absent from servers older than the memory metric: "time" */
    metric?: HeatMetric;
    denominator: string;
    total_gpu_seconds?: number;
    /** metric "memory": the highest peak of the profile's GPUs */
    peak_bytes?: number;
    lines: LineCost[];
}

/** Params of the server's `advise/profileChanged` notification. */
export interface ProfileChanged { profiles: string[] }

export const Methods = {
    findings: 'advise/findings',
    profileSummary: 'advise/profileSummary',
    lineCosts: 'advise/lineCosts',
    profileChanged: 'advise/profileChanged',
} as const;

/** JSON-RPC's MethodNotFound: a server older than the request. */
export const METHOD_NOT_FOUND = -32601;

export function isMethodNotFound(error: unknown): boolean {
    return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === METHOD_NOT_FOUND;
}
