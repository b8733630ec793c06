// Load benchmark of hearth's web client in Debian's chromium (headless).
// Usage: node bench/load.mjs <server url> [runs] [built web folder]
// The server must run the development realm with its history (`hearth serve --dev`),
// best a --release build. Measures, for `runs` cold loads (a new browser context each,
// so an empty cache) and `runs` warm loads (one context, its cache filled by a first
// load), the time from navigation to the first message row in the DOM, and the
// page's DOMContentLoaded and first contentful paint; then what one cold load
// transfers, and the sizes of the built assets (raw, .gz, .br) in the build folder
// (default: the newest target/release/build/hearth-*/out/web).

import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import { Server, devLogin } from '../e2e/lib.mjs';

const url = process.argv[2];
if (!url) {
  console.error('usage: node bench/load.mjs <server url> [runs] [built web folder]');
  process.exit(2);
}
const runs = Number(process.argv[3] ?? 20);
const server = new Server(url);
const HAMLET = 'hamlet@zulip.com';

function builtWeb() {
  if (process.argv[4]) return resolve(process.argv[4]);
  const build = resolve('../target/release/build');
  if (!existsSync(build)) return null;
  const dirs = readdirSync(build)
    .filter((d) => d.startsWith('hearth-'))
    .map((d) => join(build, d, 'out/web'))
    .filter((d) => existsSync(join(d, 'index.html')))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  return dirs[0] ?? null;
}

const stat = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const rank = (p) => s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
  return { n: s.length, min: s[0], median: rank(50), p90: rank(90), max: s[s.length - 1] };
};
const ms = (x) => `${x.toFixed(0)} ms`;
const kib = (b) => `${(b / 1024).toFixed(1)} KiB`;

// Marks the moment the first message row enters the DOM, and the frame after it.
function marker() {
  window.__firstRow = null;
  window.__firstRowFrame = null;
  const obs = new MutationObserver(() => {
    if (window.__firstRow === null && document.querySelector('.message_row')) {
      window.__firstRow = performance.now();
      obs.disconnect();
      requestAnimationFrame(() => setTimeout(() => { window.__firstRowFrame = performance.now(); }, 0));
    }
  });
  obs.observe(document, { childList: true, subtree: true });
}

async function measure(page) {
  await page.goto(`${server.url}/`, { waitUntil: 'commit' });
  await page.waitForFunction(() => window.__firstRowFrame !== null, null, { timeout: 30000, polling: 20 });
  return page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const fcp = performance.getEntriesByName('first-contentful-paint')[0];
    return {
      firstRow: window.__firstRow,
      firstRowFrame: window.__firstRowFrame,
      dcl: nav.domContentLoadedEventEnd,
      fcp: fcp ? fcp.startTime : NaN,
      ttfb: nav.responseStart,
    };
  });
}

const browser = await chromium.launch({
  executablePath: process.env.HEARTH_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox'],
});
const viewport = { width: 1280, height: 820 };
const report = { runs, date: new Date().toISOString() };
try {
  // The home view must be the combined feed (a message list) for `/` to show messages.
  await server.api(HAMLET, 'PATCH', 'settings', { web_home_view: 'all_messages' });
  const login = await devLogin(browser, server, HAMLET);
  const storageState = await login.context.storageState();
  await login.context.close();

  const cold = [];
  for (let i = 0; i < runs; i++) {
    const context = await browser.newContext({ viewport, storageState });
    await context.addInitScript(marker);
    const page = await context.newPage();
    cold.push(await measure(page));
    await context.close();
  }

  const warm = [];
  const context = await browser.newContext({ viewport, storageState });
  await context.addInitScript(marker);
  {
    const page = await context.newPage();
    await measure(page); // fills the cache
    await page.close();
  }
  for (let i = 0; i < runs; i++) {
    const page = await context.newPage();
    warm.push(await measure(page));
    await page.close();
  }
  await context.close();

  for (const [name, list] of [['cold', cold], ['warm', warm]]) {
    report[name] = Object.fromEntries(['firstRow', 'firstRowFrame', 'dcl', 'fcp', 'ttfb'].map((k) => [k, stat(list.map((r) => r[k]))]));
    console.log(`${name} loads (${list.length}):`);
    for (const [k, label] of [['firstRow', 'first message row in DOM'], ['firstRowFrame', 'frame after it'], ['dcl', 'DOMContentLoaded'], ['fcp', 'first contentful paint'], ['ttfb', 'document first byte']]) {
      const s = report[name][k];
      console.log(`  ${label.padEnd(26)} median ${ms(s.median)}, p90 ${ms(s.p90)} (min ${ms(s.min)}, max ${ms(s.max)})`);
    }
  }

  // What one cold load transfers: bytes on the wire per response (headers included),
  // counted until the first message row shows and a second has passed.
  {
    const context = await browser.newContext({ viewport, storageState });
    await context.addInitScript(marker);
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    const responses = new Map();
    cdp.on('Network.responseReceived', (e) => {
      const h = Object.fromEntries(Object.entries(e.response.headers).map(([k, v]) => [k.toLowerCase(), v]));
      responses.set(e.requestId, { url: e.response.url.replace(server.url, ''), type: e.type, encoding: h['content-encoding'] ?? 'identity', bytes: 0, body: 0, done: false });
    });
    cdp.on('Network.dataReceived', (e) => {
      const r = responses.get(e.requestId);
      if (r) r.body += e.dataLength;
    });
    cdp.on('Network.loadingFinished', (e) => {
      const r = responses.get(e.requestId);
      if (r) { r.bytes = e.encodedDataLength; r.done = true; }
    });
    await measure(page);
    await page.waitForTimeout(1000);
    const list = [...responses.values()];
    await context.close();
    report.transfer = list;
    console.log('one cold load, bytes transferred (headers included):');
    let total = 0;
    let script = 0;
    for (const r of list) {
      total += r.bytes;
      if (r.type === 'Script') script += r.bytes;
      console.log(`  ${r.type.padEnd(10)} ${r.encoding.padEnd(8)} ${kib(r.bytes).padStart(10)}  ${r.url.slice(0, 80)}${r.done ? '' : ' (still open)'}`);
    }
    console.log(`  total ${kib(total)}; scripts ${kib(script)}`);
    report.transferTotal = total;
    report.transferScript = script;
  }
} finally {
  await browser.close();
}

// The built assets, as the binary embeds them.
const web = builtWeb();
if (web) {
  const assets = join(web, 'assets');
  const files = readdirSync(assets).filter((f) => !f.endsWith('.gz') && !f.endsWith('.br')).sort();
  const size = (f) => (existsSync(f) ? statSync(f).size : NaN);
  const rows = files.map((f) => ({ file: f, raw: size(join(assets, f)), gz: size(join(assets, `${f}.gz`)), br: size(join(assets, `${f}.br`)) }));
  rows.push({ file: 'index.html', raw: size(join(web, 'index.html')), gz: size(join(web, 'index.html.gz')), br: size(join(web, 'index.html.br')) });
  report.assets = { folder: web, rows };
  console.log(`built assets in ${web} (raw / gzip / brotli):`);
  const sum = { raw: 0, gz: 0, br: 0 };
  const js = { raw: 0, gz: 0, br: 0 };
  for (const r of rows) {
    console.log(`  ${r.file.padEnd(28)} ${kib(r.raw).padStart(10)} ${kib(r.gz).padStart(10)} ${kib(r.br).padStart(10)}`);
    for (const k of ['raw', 'gz', 'br']) {
      sum[k] += Number.isNaN(r[k]) ? 0 : r[k];
      if (r.file.endsWith('.js')) js[k] += r[k];
    }
  }
  console.log(`  ${'JavaScript'.padEnd(28)} ${kib(js.raw).padStart(10)} ${kib(js.gz).padStart(10)} ${kib(js.br).padStart(10)}`);
  console.log(`  ${'all'.padEnd(28)} ${kib(sum.raw).padStart(10)} ${kib(sum.gz).padStart(10)} ${kib(sum.br).padStart(10)}`);
  report.assets.js = js;
  report.assets.all = sum;
} else {
  console.log('no built web folder found (give it as the third argument)');
}
if (process.env.BENCH_JSON) {
  const { writeFileSync } = await import('node:fs');
  writeFileSync(process.env.BENCH_JSON, JSON.stringify(report, null, 2));
}
