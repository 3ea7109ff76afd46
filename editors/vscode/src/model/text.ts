// Text the commands build: a shell word for the profiling terminal, and the
// report page with its Content-Security-Policy. No 'vscode' here: node tests it.

/** a word for a POSIX shell */
export function shellQuote(word: string): string {
    return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

const REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:";

/** the report page with a strict Content-Security-Policy in its head (no scripts, nothing fetched) */
export function withCsp(html: string): string {
    const meta = `<meta http-equiv="Content-Security-Policy" content="${REPORT_CSP}">`;
    if (/<head[^>]*>/i.test(html)) return html.replace(/<head[^>]*>/i, (m) => `${m}\n${meta}`);
    return `<!DOCTYPE html><html><head>${meta}</head><body>${html}</body></html>`;
}

