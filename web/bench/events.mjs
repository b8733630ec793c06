// Event-rate benchmark of hearth's web client in Debian's chromium (headless).
// Usage: node bench/events.mjs <server url> [messages a second] [seconds] [concurrency] [drivers]
// The server must run the development realm (`hearth serve --dev`, where rate limits
// are off), best a --release build. While the client shows a channel narrow (Verona),
// this posts messages into that channel through the API at the asked rate, from
// several users with many requests in flight, and measures in the page the interval
// between animation frames (requestAnimationFrame) and the Long Tasks, first over an
// idle stretch of the same length, then during the flood. At the end it counts the
// message rows and DOM nodes, and how long the last message took to show.

import { writeFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { chromium } from 'playwright-core';
import { Server, devLogin } from '../e2e/lib.mjs';
import { cpuIn } from './machine.mjs';
import { TRACE_CATEGORIES, longTasks, printLongTasks } from './trace-tasks.mjs';

const url = process.argv[2];
if (!url) {
  console.error('usage: node bench/events.mjs <server url> [messages a second] [seconds] [concurrency] [drivers]');
  process.exit(2);
}
const rate = Number(process.argv[3] ?? 1000);
const seconds = Number(process.argv[4] ?? 10);
const concurrency = Number(process.argv[5] ?? 128);
const drivers = Number(process.argv[6] ?? 4);
const server = new Server(url);
// BENCH_FEED=1: the client alone. The page talks to bench/feeder.mjs, which passes
// everything through to the server except the event long-polls of the flood: those
// it answers itself at the asked rate with copies of real message events (see there).
// BENCH_DIST=<build folder>: the feeder serves the page and its assets from there
// (without BENCH_FEED it only passes the page's requests through; the flood is real).
const feed = process.env.BENCH_FEED === '1';
const HAMLET = 'hamlet@zulip.com';
const SENDERS = ['othello@zulip.com', 'iago@zulip.com', 'cordelia@zulip.com', 'prospero@zulip.com', 'ZOE@zulip.com', 'desdemona@zulip.com'];
const VERONA = 3;
const run = Date.now().toString(36);
const topic = `event flood ${run}`;

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

// In the page: frame timestamps and long tasks from now on.
function startRecording() {
  window.__frames = [];
  window.__longTasks = [];
  window.__recording = true;
  // A loop of an earlier recording whose frame has not come yet stops at it: two loops
  // would record every frame twice.
  const mine = (window.__recordingRun = (window.__recordingRun ?? 0) + 1);
  const tick = (t) => {
    if (!window.__recording || window.__recordingRun !== mine) return;
    window.__frames.push(t);
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  window.__ltObserver?.disconnect();
  window.__ltObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__longTasks.push({ start: e.startTime, duration: e.duration });
  });
  window.__ltObserver.observe({ type: 'longtask' });
}

function stopRecording() {
  window.__recording = false;
  window.__ltObserver?.disconnect();
  const f = window.__frames;
  const deltas = [];
  for (let i = 1; i < f.length; i++) deltas.push(f[i] - f[i - 1]);
  return {
    deltas,
    span: f.length > 1 ? f[f.length - 1] - f[0] : 0,
    longTasks: window.__longTasks,
    rows: document.querySelectorAll('.message_row').length,
    nodes: document.getElementsByTagName('*').length,
    heap: performance.memory ? performance.memory.usedJSHeapSize : NaN,
  };
}

// Frames the page missed: an interval of n vsync periods (60 a second here) is n - 1
// frames that were due and not drawn.
const VSYNC_MS = 1000 / 60;
const droppedOf = (deltas) => deltas.reduce((n, d) => n + Math.max(0, Math.round(d / VSYNC_MS) - 1), 0);

/** The machine's CPU over a span (µs on CLOCK_MONOTONIC), from machine.mjs's samples. */
function printMachine(samples, t0, t1) {
  if (samples === undefined) return;
  const c = cpuIn(samples, t0, t1);
  if (c === undefined) {
    console.log('  machine: no samples around it');
    return;
  }
  console.log(`  machine over the ${c.spanMs.toFixed(0)} ms of samples around it: ${c.busyPct.toFixed(0)} % of the cores busy (load ${c.load.split(' ').slice(0, 3).join(' ')}); CPU by process: ${c.procs.map(([k, v]) => `${k} ${v} ms`).join(', ')}`);
  console.log(`  Chromium's threads: ${c.threads.map(([k, v]) => `${k} ${v} ms`).join(', ')}`);
}

function summary(name, r) {
  const over50 = r.deltas.filter((d) => d > 50).length;
  const dropped = droppedOf(r.deltas);
  const due = Math.round(r.span / VSYNC_MS);
  const lt = r.longTasks.map((t) => t.duration);
  const s = {
    frames: r.deltas.length + 1,
    fps: r.span > 0 ? (r.deltas.length / r.span) * 1000 : NaN,
    over50,
    dropped,
    droppedPct: due > 0 ? (dropped / due) * 100 : NaN,
    p50: pct(r.deltas, 50),
    p99: pct(r.deltas, 99),
    max: Math.max(...r.deltas),
    longTasks: lt.length,
    longTaskMs: lt.reduce((a, b) => a + b, 0),
    longTaskMax: lt.length ? Math.max(...lt) : 0,
    rows: r.rows,
    nodes: r.nodes,
    heapMiB: r.heap / 1048576,
  };
  console.log(`${name}: ${s.frames} frames (${s.fps.toFixed(1)} a second), frame interval median ${s.p50.toFixed(1)} ms, p99 ${s.p99.toFixed(1)} ms, max ${s.max.toFixed(1)} ms; ${s.dropped} frames dropped (${s.droppedPct.toFixed(1)} % of ${due} due); ${s.over50} frames over 50 ms; ${s.longTasks} long tasks (${s.longTaskMs.toFixed(0)} ms in all, longest ${s.longTaskMax.toFixed(0)} ms); ${s.rows} message rows, ${s.nodes} elements, JS heap ${s.heapMiB.toFixed(1)} MiB`);
  return s;
}

const browser = await chromium.launch({
  executablePath: process.env.HEARTH_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox'],
});
try {
  // Keys and the channel subscription before the page opens.
  const auth = new Map();
  for (const email of SENDERS) {
    auth.set(email, `Basic ${Buffer.from(`${email}:${await server.key(email)}`).toString('base64')}`);
  }
  // Nothing left unread in Verona (an earlier run's flood may be): the channel then
  // opens at its newest message and follows the new ones, whichever client.
  await server.api(HAMLET, 'POST', 'mark_stream_as_read', { stream_id: VERONA });
  let feeder;
  let pageServer = server;
  if (feed || process.env.BENCH_DIST) {
    feeder = new Worker(new URL('./feeder.mjs', import.meta.url), { workerData: { upstream: server.url, dist: process.env.BENCH_DIST } });
    const { port } = await new Promise((ok, fail) => { feeder.once('message', ok); feeder.once('error', fail); });
    pageServer = new Server(`http://127.0.0.1:${port}`);
    console.log(`client-only: the page talks to the feeder on port ${port}${process.env.BENCH_DIST ? `, client from ${process.env.BENCH_DIST}` : ''}`);
  }
  const ask = (m) => new Promise((ok, fail) => {
    feeder.once('message', (r) => (r.error ? fail(new Error(r.error)) : ok(r)));
    feeder.postMessage(m);
  });
  const { context, page } = await devLogin(browser, pageServer, HAMLET);
  await page.evaluate((h) => { location.hash = h; }, `#narrow/channel/${VERONA}-Verona`);
  await page.waitForSelector('.message-view .message_row', { timeout: 15000 });
  await page.waitForTimeout(1500);

  // BENCH_CSS: a rule added to the page's first style sheet, to try a style change.
  if (process.env.BENCH_CSS) await page.evaluate((rule) => document.styleSheets[0].insertRule(rule, document.styleSheets[0].cssRules.length), process.env.BENCH_CSS);
  // Client-only: one real message from each sender, whose events the feeder records.
  const marker = `flood ${run} template`;
  if (feed) {
    for (const email of SENDERS) await server.api(email, 'POST', 'messages', { type: 'stream', to: String(VERONA), topic, content: marker });
    await page.waitForFunction((n) => document.querySelectorAll('.message_row').length > 0 && [...document.querySelectorAll('.message_row')].filter((r) => r.textContent.includes(n)).length >= 6, marker, { timeout: 15000 });
    const { stats } = await ask({ stats: true });
    console.log(`recorded ${stats.recorded} message events from hearth`);
    await page.waitForTimeout(1000);
  }
  // BENCH_VIEW=<hash>: the page shows that view during the flood instead of Verona
  // (the flood's messages then stay unread: the counts change, not the list).
  const view = process.env.BENCH_VIEW;
  if (view) {
    await page.evaluate((h) => { location.hash = h; }, view);
    await page.waitForTimeout(1500);
  }
  const before = await page.evaluate(() => ({ rows: document.querySelectorAll('.message_row').length, nodes: document.getElementsByTagName('*').length }));
  console.log(`before: ${before.rows} message rows, ${before.nodes} elements`);

  await page.evaluate(startRecording);
  await page.waitForTimeout(seconds * 1000);
  const idle = summary(`idle ${seconds} s`, await page.evaluate(stopRecording));

  // The flood: message i is due at start + i / rate seconds, sent by one of
  // `drivers` worker threads (each its own API client, i ≡ w mod drivers), each
  // with at most concurrency / drivers requests in flight (a due message waits for
  // a free slot, and the lateness shows in the achieved rate); no request starts
  // after `seconds`.
  const total = Math.round(rate * seconds);
  let sent = 0;
  let ok = 0;
  let failed = 0;
  let firstId = Infinity;
  let lastId = 0;
  const latencies = [];
  const errors = new Map();
  // The drivers start, then all begin sending at the same moment.
  const workers = feed ? [] : await Promise.all(Array.from({ length: drivers }, (_, w) => new Promise((ready, reject) => {
    const worker = new Worker(new URL('./flood-driver.mjs', import.meta.url), {
      workerData: {
        url: server.url, auth: Object.fromEntries(auth), senders: SENDERS, topic, run, rate, seconds, total,
        w, drivers, inFlight: Math.max(1, Math.round(concurrency / drivers)),
      },
    });
    worker.once('message', () => ready(worker));
    worker.once('error', reject);
  })));
  let cdp;
  if (process.env.BENCH_PROFILE) {
    cdp = await context.newCDPSession(page);
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
    await cdp.send('Profiler.start');
  }
  // BENCH_TRACE: a DevTools timeline trace of the flood (GC and sampled JavaScript
  // stacks included; BENCH_TRACE_CATEGORIES names others), summed by event name, and
  // what ran in every task over 50 ms (trace-tasks.mjs).
  let tracing;
  if (process.env.BENCH_TRACE) {
    tracing = cdp ?? await context.newCDPSession(page);
    const chunks = [];
    tracing.on('Tracing.dataCollected', (d) => chunks.push(...d.value));
    tracing.done = new Promise((r) => tracing.once('Tracing.tracingComplete', () => r(chunks)));
    await tracing.send('Tracing.start', { categories: process.env.BENCH_TRACE_CATEGORIES ?? TRACE_CATEGORIES, transferMode: 'ReportEvents' });
  }
  // BENCH_MACHINE=1 (and with BENCH_TRACE): the machine's CPU and its processes
  // sampled every 100 ms through the flood (machine.mjs), to tell a long task the
  // page made from one the machine did (another process on the cores).
  let machine;
  if (process.env.BENCH_MACHINE === '1' || process.env.BENCH_TRACE) {
    machine = new Worker(new URL('./machine.mjs', import.meta.url), { workerData: { machine: true, interval: 100 } });
    machine.samples = new Promise((r) => machine.once('message', r));
  }
  // The page's clock against CLOCK_MONOTONIC (µs, the trace's and the sampler's).
  // The shortest of five round trips: the page read its clock within it.
  const monoAt = async () => {
    let best;
    for (let k = 0; k < 5; k++) {
      const t0 = process.hrtime.bigint();
      const p = await page.evaluate(() => performance.now());
      const t1 = process.hrtime.bigint();
      if (best === undefined || t1 - t0 < best.trip) best = { trip: t1 - t0, at: Number((t0 + t1) / 2n / 1000n) - p * 1000 };
    }
    return best.at;
  };
  const pageMono = await monoAt();
  // BENCH_WORK=1: the page's work during the flood, counted rather than timed (the
  // frame rate depends on the machine's load; these counts do not): Chromium's
  // counters of style recalculations and layouts and their time (Performance.getMetrics)
  // and, with a client built with HEARTH_PROBE=1 (src/probe.ts), per animation frame
  // the components rendered, by name, and the elements added and removed.
  const work = process.env.BENCH_WORK === '1';
  let perf;
  let metricsBefore;
  if (work) {
    perf = cdp ?? tracing ?? await context.newCDPSession(page);
    await perf.send('Performance.enable', { timeDomain: 'threadTicks' });
    metricsBefore = Object.fromEntries((await perf.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]));
    const probed = await page.evaluate(() => window.__probe !== undefined);
    if (probed) await page.evaluate(() => window.__probe.start());
    else console.log('BENCH_WORK: the client is not a HEARTH_PROBE=1 build: no render or DOM counts');
  }
  await page.evaluate(startRecording);
  const start = performance.now() + 50;
  let started;
  if (feed) {
    await new Promise((r) => setTimeout(r, 50));
    ({ started } = await ask({ flood: { rate, seconds, marker, run } }));
    console.log(`flood of ${started.total} events from ${started.templates} recorded templates, message ids ${started.firstId}..${started.lastId}`);
  }
  const results = Promise.all(workers.map((worker) => new Promise((done, reject) => {
    worker.once('message', done);
    worker.once('error', reject);
    worker.postMessage({ startAt: performance.timeOrigin + start });
  })));
  // A screenshot halfway through the flood, to see what a person would.
  const midShot = process.env.BENCH_SHOT_MID === 'off' ? Promise.resolve() : new Promise((r) => setTimeout(r, 50 + seconds * 500))
    .then(() => page.screenshot({ path: process.env.BENCH_SHOT_MID ?? '../target/web-bench-events-mid.png' }))
    .catch((e) => console.log(`mid-flood screenshot failed: ${e.message}`));
  await midShot;
  if (feed) await new Promise((r) => setTimeout(r, Math.max(0, start + seconds * 1000 - performance.now())));
  for (const r of await results) {
    sent += r.sent;
    ok += r.ok;
    failed += r.failed;
    firstId = Math.min(firstId, r.firstId);
    lastId = Math.max(lastId, r.lastId);
    latencies.push(...r.latencies);
    for (const [k, v] of r.errors) errors.set(k, (errors.get(k) ?? 0) + v);
  }
  const elapsed = (performance.now() - start) / 1000;
  if (feed) {
    firstId = started.firstId;
    lastId = started.lastId;
  }
  let machineSamples;
  if (machine !== undefined) {
    machine.postMessage('stop');
    machineSamples = await machine.samples;
    await machine.terminate();
  }
  if (tracing !== undefined) {
    await tracing.send('Tracing.end');
    const events = await tracing.done;
    writeFileSync(process.env.BENCH_TRACE, JSON.stringify({ traceEvents: events }));
    // The renderer's main thread: the thread that ran the page's animation frames.
    const main = events.find((e) => e.name === 'FireAnimationFrame');
    const total = new Map();
    for (const e of events) {
      if (main === undefined || e.pid !== main.pid || e.tid !== main.tid || e.ph !== 'X' || e.dur === undefined) continue;
      total.set(e.name, (total.get(e.name) ?? 0) + e.dur / 1000);
    }
    console.log('main thread of the page during the flood, by trace event (inclusive, top 16):');
    for (const [k, v] of [...total].sort((a, b) => b[1] - a[1]).slice(0, 16)) console.log(`  ${v.toFixed(0).padStart(6)} ms  ${k}`);
    const found = longTasks(events, 50);
    printLongTasks(found);
    for (const t of found) printMachine(machineSamples, t.ts, t.ts + t.ms * 1000);
  }
  if (cdp !== undefined) {
    const { profile } = await cdp.send('Profiler.stop');
    writeFileSync(process.env.BENCH_PROFILE, JSON.stringify(profile));
    const self = new Map();
    const dt = profile.timeDeltas;
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    profile.samples.forEach((id, k) => {
      const f = byId.get(id).callFrame;
      const key = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}:${f.lineNumber}`;
      self.set(key, (self.get(key) ?? 0) + (dt[k] ?? 0) / 1000);
    });
    console.log('CPU profile, self time during the flood (top 25):');
    for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${v.toFixed(0).padStart(6)} ms  ${k}`);
  }
  // The client should show the last message; how long after the last answer it does.
  const shown = performance.now();
  let lag = NaN;
  try {
    if (view) throw new Error('not shown');
    await page.waitForSelector(`[data-message-id="${lastId}"]`, { timeout: 30000 });
    lag = performance.now() - shown;
  } catch {
    if (!view) console.log(`the last message (${lastId}) did not show within 30 s`);
  }
  await page.waitForTimeout(500);
  const floodRec = await page.evaluate(stopRecording);
  const flood = summary(`flood ${seconds} s`, floodRec);
  // The page's own long tasks (Long Tasks API) against the machine's CPU.
  if (machineSamples !== undefined) {
    for (const t of floodRec.longTasks) {
      const t0 = pageMono + t.start * 1000;
      console.log(`page long task: ${t.duration.toFixed(0)} ms at ${((t0 - machineSamples[0].t) / 1e6).toFixed(2)} s into the sampling (ts ${t0.toFixed(0)} µs)`);
      printMachine(machineSamples, t0, t0 + t.duration * 1000);
    }
    const first = machineSamples[0];
    const last = machineSamples[machineSamples.length - 1];
    const whole = cpuIn(machineSamples, first.t, last.t);
    if (whole !== undefined) console.log(`machine over the flood: ${whole.busyPct.toFixed(0)} % of both cores busy, load ${first.load.split(' ').slice(0, 3).join(' ')} → ${last.load.split(' ').slice(0, 3).join(' ')}; most CPU: ${whole.procs.slice(0, 5).map(([k, v]) => `${k} ${v} ms`).join(', ')}; Chromium's busiest threads: ${whole.threads.slice(0, 6).map(([k, v]) => `${k} ${v} ms`).join(', ')}`);
  }
  if (work) {
    const after = Object.fromEntries((await perf.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]));
    const d = (k) => (after[k] ?? 0) - (metricsBefore[k] ?? 0);
    const n = flood.frames;
    console.log(`work during the flood (${n} frames): per frame ${(d('RecalcStyleCount') / n).toFixed(2)} style recalcs (${(d('RecalcStyleDuration') * 1000 / n).toFixed(2)} ms), ${(d('LayoutCount') / n).toFixed(2)} layouts (${(d('LayoutDuration') * 1000 / n).toFixed(2)} ms), script ${(d('ScriptDuration') * 1000 / n).toFixed(2)} ms, tasks ${(d('TaskDuration') * 1000 / n).toFixed(2)} ms; in all ${d('RecalcStyleCount')} recalcs, ${d('LayoutCount')} layouts, ${d('Nodes').toFixed(0)} DOM nodes more, ${d('JSEventListeners').toFixed(0)} listeners more, JS heap ${(after.JSHeapUsedSize / 1048576).toFixed(1)} MiB`);
    const frames = await page.evaluate(() => window.__probe?.stop());
    if (frames !== undefined && frames.length > 0) {
      const sum = (f) => frames.reduce((a, x) => a + f(x), 0);
      const busy = frames.filter((x) => x.renders > 0);
      const by = new Map();
      for (const x of frames) for (const [k, v] of Object.entries(x.by)) by.set(k, (by.get(k) ?? 0) + v);
      const per = (v) => (v / frames.length).toFixed(2);
      console.log(`probe: ${frames.length} frames, ${busy.length} with renders; per frame: ${per(sum((x) => x.renders))} component renders (p50 ${pct(frames.map((x) => x.renders), 50)}, p90 ${pct(frames.map((x) => x.renders), 90)}, max ${Math.max(...frames.map((x) => x.renders))}), ${per(sum((x) => x.added))} elements added, ${per(sum((x) => x.removed))} removed, ${per(sum((x) => x.polls))} event polls started (max ${Math.max(...frames.map((x) => x.polls))})`);
      console.log('probe: renders per frame by component (all frames of the flood):');
      for (const [k, v] of [...by].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`  ${per(v).padStart(7)}  ${k}  (${v})`);
      if (process.env.BENCH_WORK_JSON) writeFileSync(process.env.BENCH_WORK_JSON, JSON.stringify(frames));
    }
  }
  await page.screenshot({ path: process.env.BENCH_SHOT ?? '../target/web-bench-events.png' });

  if (feed) {
    const { stats } = await ask({ stats: true });
    const span = (stats.lastAt - stats.firstAt) / 1000;
    const b = stats.batches;
    console.log(`client-only: ${started.total} message events offered at ${rate} a second over ${seconds} s; delivered ${stats.delivered} in ${b.length} poll answers over ${span.toFixed(2)} s (${(stats.delivered / Math.max(span, seconds)).toFixed(0)} a second), events per answer median ${pct(b, 50)}, max ${Math.max(...b)}; ${stats.flagsAnswered} read-flag requests answered by the feeder`);
    console.log(`last message shown ${Number.isNaN(lag) ? 'never' : `${lag.toFixed(0)} ms`} after the flood's end`);
    console.log(`frames over 50 ms: idle ${idle.over50}, flood ${flood.over50}; p99 frame interval: idle ${idle.p99.toFixed(1)} ms, flood ${flood.p99.toFixed(1)} ms (${(flood.p99 / idle.p99).toFixed(2)}x)`);
  } else {
    // Server side: the messages stored in the topic, and their id span.
    const stored = await server.api(HAMLET, 'GET', 'messages', {
      anchor: 'newest', num_before: 5000, num_after: 0,
      narrow: [{ operator: 'channel', operand: VERONA }, { operator: 'topic', operand: topic }],
    });
    console.log(`asked ${total} messages (${rate} a second offered by ${drivers} drivers), sent ${sent} in ${elapsed.toFixed(2)} s with at most ${concurrency} requests in flight: ${ok} accepted (${(ok / elapsed).toFixed(0)} a second), ${failed} failed${errors.size ? ` ${JSON.stringify(Object.fromEntries(errors))}` : ''}`);
    console.log(`message ids ${firstId}..${lastId} (${lastId - firstId + 1} ids); the newest 5000 of the topic fetched back: ${stored.messages.length}`);
    console.log(`request latency: median ${pct(latencies, 50).toFixed(0)} ms, p99 ${pct(latencies, 99).toFixed(0)} ms`);
    console.log(`last message shown ${Number.isNaN(lag) ? 'never' : `${lag.toFixed(0)} ms`} after its answer`);
    console.log(`frames over 50 ms: idle ${idle.over50}, flood ${flood.over50}; p99 frame interval: idle ${idle.p99.toFixed(1)} ms, flood ${flood.p99.toFixed(1)} ms (${(flood.p99 / idle.p99).toFixed(2)}x)`);
  }
  await context.close();
  await feeder?.terminate();
} finally {
  await browser.close();
}
