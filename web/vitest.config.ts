import { defineConfig } from 'vitest/config';

export default defineConfig({
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  define: { __HEARTH_PROBE__: 'false' },
  test: { include: ['test/**/*.test.ts'], environment: 'node' },
});
