// Bundles the extension and vscode-languageclient into dist/extension.js.
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
await esbuild.build({
    entryPoints: ['src/extension.ts'],
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node18',
    outfile: 'dist/extension.js',
    external: ['vscode'],
    sourcemap: !production,
    minify: production,
    logLevel: 'warning',
});
