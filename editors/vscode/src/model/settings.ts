// The settings advise server reads (docs/lsp.md "Settings"), from the
// extension's `advise.*` configuration: empty values are sent as null, which
// the server reads as "the project's choice" (advise.toml, then defaults).
// No 'vscode' here: node tests it.

export interface ServerSettings {
    select: string[] | null;
    ignore: string[] | null;
    severity: Record<string, string> | null;
    profileDir: string | null;
    cudaBuildDir: string | null;
    gpuArch: string | null;
    cudaPath: string | null;
}

/** the keys under `advise.` that go to the server */
export const SERVER_KEYS = ['select', 'ignore', 'severity', 'profileDir', 'cudaBuildDir', 'gpuArch', 'cudaPath'] as const;

/** the keys a workspace may not set in Restricted Mode (package.json restrictedConfigurations) */
export const RESTRICTED_KEYS = ['path', 'profileDir', 'cudaBuildDir', 'cudaPath'] as const;

function list(v: unknown): string[] | null {
    if (typeof v === 'string') v = v.split(',');
    if (!Array.isArray(v)) return null;
    const out = v.filter((x): x is string => typeof x === 'string').map((x) => x.trim()).filter((x) => x.length > 0);
    return out.length ? out : null;
}

function text(v: unknown): string | null {
    return typeof v === 'string' && v.trim().length ? v.trim() : null;
}

/** `get(key)` reads `advise.<key>` as the user's and workspace's settings give it */
export function serverSettings(get: (key: string) => unknown): ServerSettings {
    const severity = get('severity');
    const sev: Record<string, string> = {};
    if (severity && typeof severity === 'object' && !Array.isArray(severity))
        for (const [k, v] of Object.entries(severity as Record<string, unknown>))
            if (typeof v === 'string') sev[k] = v;
    return {
        select: list(get('select')),
        ignore: list(get('ignore')),
        severity: Object.keys(sev).length ? sev : null,
        profileDir: text(get('profileDir')),
        cudaBuildDir: text(get('cudaBuildDir')),
        gpuArch: text(get('gpuArch')),
        cudaPath: text(get('cudaPath')),
    };
}
