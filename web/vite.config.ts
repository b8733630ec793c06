import { defineConfig, type UserConfig } from 'vite';

// The built client is embedded in hearth and served under /static/app/.
// HEARTH_WEB_OUT names the output folder (hearth's build script points it
// into Cargo's OUT_DIR); scripts/compress.mjs reads the same variable.
const outDir = process.env.HEARTH_WEB_OUT ?? 'dist';

export default defineConfig(async (): Promise<UserConfig> => {
  const config: UserConfig = {
    base: '/static/app/',
    esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
    // HEARTH_PROBE=1: a build that counts renders and DOM changes per frame (src/probe.ts,
    // for bench/events.mjs BENCH_WORK=1); false otherwise, and the probe left out.
    define: { __HEARTH_PROBE__: JSON.stringify(process.env.HEARTH_PROBE === '1') },
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
  // Development aid only, never used by `npm run build`: `npm run dev` with
  // HEARTH_DEV_PROXY=http://host:port forwards the server's paths to that hearth and
  // answers `/` with the client, so the client can be tried with live reload. With
  // HEARTH_DEV_EMAIL and HEARTH_DEV_API_KEY too, /json/* goes to /api/v1/* with those
  // credentials instead of a session (for a server without browser sessions).
  const target = process.env.HEARTH_DEV_PROXY;
  if (target !== undefined && process.env.npm_lifecycle_event !== 'build') {
    const email = process.env.HEARTH_DEV_EMAIL;
    const key = process.env.HEARTH_DEV_API_KEY;
    const headers: Record<string, string> = email !== undefined && key !== undefined
      ? { Authorization: `Basic ${Buffer.from(`${email}:${key}`).toString('base64')}` }
      : {};
    const forward = { target, headers };
    config.server = {
      proxy: {
        '/json': headers.Authorization === undefined
          ? forward
          : { ...forward, rewrite: (path: string) => path.replace(/^\/json/, '/api/v1') },
        '/api': forward,
        '/login': forward,
        '/accounts': forward,
        '/devlogin': forward,
        '/user_uploads': forward,
        '/user_avatars': forward,
        '/avatar': forward,
        '/static/generated': forward,
        '/favicon.ico': forward,
      },
    };
    config.plugins = [{
      name: 'hearth-dev-root',
      configureServer(server) {
        server.middlewares.use((req, _res, next) => {
          if (req.url === '/' || req.url?.startsWith('/?')) req.url = '/static/app/';
          next();
        });
      },
    }];
  }
  return config;
});
