/**
 * Builds the console into `dist/console/` (served by src/api/console.ts at `/console`).
 * `scripts/build-console.mjs` runs this only when a source changed since the last build.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  // Preact's JSX runtime; no React anywhere in the bundle.
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    // The polyfill would be an inline script, which the console's CSP forbids.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: false,
    target: 'es2022',
  },
  logLevel: 'warn',
});
