import { defineConfig, type UserConfig } from 'vite';

// The built client is embedded in hearth and served under /static/app/.
// HEARTH_WEB_OUT names the output folder (hearth's build script points it
// into Cargo's OUT_DIR); scripts/compress.mjs reads the same variable.
const outDir = process.env.HEARTH_WEB_OUT ?? 'dist';

export default defineConfig(async (): Promise<UserConfig> => {
  const config: UserConfig = {
    base: '/static/app/',
    esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
    build: {
      outDir,
      emptyOutDir: true,
      target: 'es2022',
      // No inline <script> or <style> may reach index.html (strict CSP).
      assetsInlineLimit: 0,
      modulePreload: { polyfill: false },
      sourcemap: false,
    },
  };
  // Development aid only, never used by `npm run build`: with HEARTH_DEV_PROXY set
  // (`http://host:port`) together with HEARTH_DEV_EMAIL and HEARTH_DEV_API_KEY,
  // `npm run dev` forwards /json/* to that server's /api/v1/* with HTTP Basic
  // credentials, so the client can be tried against a server without sessions.
  const target = process.env.HEARTH_DEV_PROXY;
  if (target !== undefined && process.env.npm_lifecycle_event !== 'build') {
    const auth = Buffer.from(
      `${process.env.HEARTH_DEV_EMAIL ?? ''}:${process.env.HEARTH_DEV_API_KEY ?? ''}`,
    ).toString('base64');
    config.server = {
      proxy: {
        '/json': {
          target,
          changeOrigin: true,
          rewrite: (path: string) => path.replace(/^\/json/, '/api/v1'),
          headers: { Authorization: `Basic ${auth}` },
        },
        '/user_uploads': { target, headers: { Authorization: `Basic ${auth}` } },
        '/static/generated': { target, headers: { Authorization: `Basic ${auth}` } },
        '/avatar': { target, headers: { Authorization: `Basic ${auth}` } },
        '/user_avatars': { target },
      },
    };
  }
  return config;
});
