// A client-only event source for bench/events.mjs: a small HTTP server in front of a
// real hearth that passes every request through (login, /json/register, messages,
// avatars…) except, once a flood starts, the page's event long-polls. Those it
// answers itself with message events at the asked rate, copies of message events
// the real hearth sent to that page just before (recorded as they passed through:
// the same shape, fields and rendered content, with a new id, time and text).
//
// It measures the client alone: hearth neither stores nor sends the flood's messages.
// The page can also be served from a build folder (`dist`), so that two builds of the
// client are measured against the same server.
//
// Run by events.mjs in a worker thread (workerData: { upstream, dist }); it posts
// { port } once listening, then takes { flood: {...} } and { stats: true } messages.
// Alone, `node bench/feeder.mjs <hearth url> <port> [build folder]` is only the
// pass-through (and the page from the build folder): a way to try a build of the
// client, end-to-end flows included, against a running hearth without rebuilding it.

import { readFileSync } from 'node:fs';
import { request as httpRequest, createServer } from 'node:http';
import { extname, join, normalize } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';

const alone = parentPort === null;
const upstream = new URL(alone ? process.argv[2] : workerData.upstream);
const dist = alone ? process.argv[4] : workerData.dist;
// The same policy hearth sends with the page (src/api/webapp.rs).
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob: https:; media-src 'self' blob:; font-src 'self'; connect-src 'self'; frame-ancestors 'none'; object-src 'none'; base-uri 'none'; form-action 'self'";
const TYPES = { '.js': 'text/javascript', '.css': 'text/css', '.html': 'text/html; charset=utf-8', '.svg': 'image/svg+xml', '.woff2': 'font/woff2', '.png': 'image/png', '.json': 'application/json' };

/** Message events seen passing through, newest last (the flood's templates). */
const recorded = [];
/** The flood, once started. */
let flood;
/** A page's long-poll waiting for the flood's next events: { res, last }. */
let waiting;
const stats = { polls: 0, delivered: 0, batches: [], firstAt: 0, lastAt: 0, lastId: 0, flagsAnswered: 0 };

function proxy(req, res, body) {
  // An event poll's answer is read here (the flood's templates): asked for uncompressed,
  // else a poll whose answer hearth compressed would be recorded as nothing.
  const headers = req.url.startsWith('/json/events') ? { ...req.headers, 'accept-encoding': 'identity' } : req.headers;
  const up = httpRequest({
    host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers,
  }, (r) => {
    const record = req.url.startsWith('/json/events') && flood === undefined;
    if (!record) {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
      return;
    }
    const chunks = [];
    r.on('data', (c) => chunks.push(c));
    r.on('end', () => {
      const data = Buffer.concat(chunks);
      try {
        for (const e of JSON.parse(data.toString()).events ?? []) if (e.type === 'message') recorded.push(e);
      } catch { /* not JSON: passed on as it is */ }
      // A poll the flood took over meanwhile is answered by the flood, not by this.
      if (res.writableEnded || res.headersSent || res.flooded) return;
      res.writeHead(r.statusCode, r.headers);
      res.end(data);
    });
  });
  up.on('error', (e) => {
    if (res.flooded || res.writableEnded) return;
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ result: 'error', msg: `feeder: ${e.message}` }));
  });
  res.on('close', () => { if (!res.writableEnded) up.destroy(); });
  if (body !== undefined) up.end(body);
  else req.pipe(up);
  return up;
}

function serveClient(req, res) {
  const path = new URL(req.url, 'http://x').pathname;
  const file = path === '/' ? 'index.html' : normalize(path.slice('/static/app/'.length)).replace(/^(\.\.[/\\])+/, '');
  let data;
  try {
    data = readFileSync(join(dist, file));
  } catch {
    res.writeHead(404);
    res.end();
    return;
  }
  const headers = { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-cache' };
  if (file === 'index.html') headers['content-security-policy'] = CSP;
  res.writeHead(200, headers);
  res.end(data);
}

/** The flood's events due by now and not yet delivered after `last`. */
function due(last) {
  const now = performance.now();
  const dueCount = Math.min(flood.total, Math.floor(((now - flood.start) * flood.rate) / 1000) + 1);
  const from = Math.max(0, last - flood.eventBase);
  const events = [];
  for (let k = from; k < dueCount; k++) events.push(flood.event(k));
  return events;
}

function answer(res, events) {
  stats.delivered += events.length;
  stats.batches.push(events.length);
  if (stats.firstAt === 0) stats.firstAt = performance.now();
  stats.lastAt = performance.now();
  stats.lastAtEpoch = Date.now();
  for (const e of events) stats.lastId = Math.max(stats.lastId, e.message.id);
  res.flooded = true;
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify({ result: 'success', msg: '', events, queue_id: flood.queueId }));
}

/** Answers the waiting poll once events are due (now, or at the next one's time). */
function pump() {
  if (waiting === undefined || flood === undefined) return;
  const { res, last } = waiting;
  if (res.writableEnded || res.destroyed) { waiting = undefined; return; }
  const events = due(last);
  if (events.length > 0) {
    waiting = undefined;
    answer(res, events);
    return;
  }
  const next = last - flood.eventBase; // index of the next event
  if (next >= flood.total) return; // the flood is over: the poll waits, as a quiet queue's does
  clearTimeout(flood.timer);
  flood.timer = setTimeout(pump, Math.max(0, flood.start + (next * 1000) / flood.rate - performance.now()));
}

const server = createServer((req, res) => {
  const path = new URL(req.url, 'http://x').pathname;
  if (dist !== undefined && req.method === 'GET' && (path === '/' || path.startsWith('/static/app/'))) {
    serveClient(req, res);
    return;
  }
  if (path === '/json/events' && req.method === 'GET') {
    stats.polls++;
    const q = new URL(req.url, 'http://x').searchParams;
    if (flood === undefined) {
      // Before the flood: the real queue's poll, kept so that the flood can answer it.
      const up = proxy(req, res);
      waiting = { res, last: Number(q.get('last_event_id')), queueId: q.get('queue_id'), up };
      return;
    }
    waiting = { res, last: Number(q.get('last_event_id')) };
    pump();
    return;
  }
  if (path === '/json/messages/flags' && req.method === 'POST' && flood !== undefined) {
    // Read flags for the flood's messages: hearth does not know them; taken as done.
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      stats.flagsAnswered++;
      const ids = JSON.parse(new URLSearchParams(Buffer.concat(chunks).toString()).get('messages') ?? '[]');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ result: 'success', msg: '', messages: ids, ignored_because_not_subscribed_channels: [] }));
    });
    return;
  }
  proxy(req, res);
});

/**
 * Starts the flood: `total` events at `rate` a second, copies of the recorded
 * message events whose content contains `marker` (one per sender, taken in turn).
 */
function startFlood({ rate, seconds, marker, run }) {
  const templates = recorded.filter((e) => (e.message.content ?? '').includes(marker));
  if (templates.length === 0) throw new Error(`no recorded message event contains ${marker}`);
  if (waiting === undefined) throw new Error('no event poll to take over');
  const maxId = Math.max(...recorded.map((e) => e.message.id));
  const last = waiting.last;
  flood = {
    rate, total: Math.round(rate * seconds), start: performance.now(), eventBase: last, queueId: waiting.queueId,
    idBase: maxId + 1, timer: undefined,
    event(k) {
      const t = templates[k % templates.length];
      const id = this.idBase + k;
      const message = {
        ...t.message,
        id,
        timestamp: Math.floor(Date.now() / 1000),
        content: t.message.content.replace(marker, `flood ${run} message ${k}`),
        reactions: [],
      };
      return { ...t, id: this.eventBase + k + 1, message, flags: [...(t.flags ?? [])] };
    },
  };
  // The real poll the page is waiting on is answered by the flood from now on.
  waiting.res.flooded = true;
  waiting.up?.destroy();
  waiting = { res: waiting.res, last };
  pump();
  return { templates: templates.length, firstId: flood.idBase, lastId: flood.idBase + flood.total - 1, total: flood.total };
}

server.listen(alone ? Number(process.argv[3]) : 0, '127.0.0.1', () => {
  if (alone) console.log(`passing http://127.0.0.1:${server.address().port} through to ${upstream}${dist ? `, the page from ${dist}` : ''}`);
  else parentPort.postMessage({ port: server.address().port });
});
parentPort?.on('message', (m) => {
  try {
    if (m.flood) parentPort.postMessage({ started: startFlood(m.flood) });
    if (m.stats) parentPort.postMessage({ stats: { ...stats, recorded: recorded.length } });
  } catch (e) {
    parentPort.postMessage({ error: e.message });
  }
});
