// What ran in a trace's long tasks: for every task of the page's main thread longer
// than a threshold, its wall and thread time, its own time by trace event (exclusive),
// its longest events with their details (the script function called, the timer, the
// event dispatched, the elements restyled, the heap a GC freed…), the JavaScript
// functions sampled in it (with the `disabled-by-default-v8.cpu_profiler` category),
// and what the page's other threads did meanwhile. Used by events.mjs (BENCH_TRACE);
// alone: `node bench/trace-tasks.mjs trace.json [threshold ms]`.

import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

/** Trace categories for a timeline with GC and sampled JavaScript stacks. */
export const TRACE_CATEGORIES = [
  'devtools.timeline', 'disabled-by-default-devtools.timeline', 'disabled-by-default-devtools.timeline.frame',
  'toplevel', 'v8.execute', 'v8', 'disabled-by-default-v8.gc', 'disabled-by-default-v8.cpu_profiler',
  'blink.user_timing', 'loading', 'latencyInfo',
].join(',');

const base = (u) => (typeof u === 'string' ? u.split('/').pop() : '');

/** A short description of an event's arguments, where they say what it was. */
function detail(e) {
  const d = e.args?.data ?? e.args?.beginData ?? {};
  switch (e.name) {
    case 'FunctionCall':
    case 'v8.callFunction':
      return `${d.functionName || '(anonymous)'} ${base(d.url)}:${d.lineNumber ?? ''}`;
    case 'EvaluateScript':
    case 'v8.compile':
    case 'v8.produceCache':
      return base(d.url ?? e.args?.fileName);
    case 'TimerFire':
      return `timer ${d.timerId}`;
    case 'EventDispatch':
      return d.type ?? '';
    case 'UpdateLayoutTree':
    case 'ScheduleStyleRecalculation':
      return `${e.args?.elementCount ?? d.elementCount ?? ''} elements`;
    case 'Layout':
      return `${d.dirtyObjects ?? ''} dirty of ${d.totalObjects ?? ''} objects`;
    case 'MajorGC':
    case 'MinorGC':
    case 'BlinkGC.AtomicPhase':
      return `${((e.args?.usedHeapSizeBefore ?? 0) / 1048576).toFixed(1)} → ${((e.args?.usedHeapSizeAfter ?? 0) / 1048576).toFixed(1)} MiB${e.args?.type ? ` (${e.args.type})` : ''}`;
    case 'ResourceReceiveResponse':
    case 'ResourceFinish':
    case 'ResourceSendRequest':
      return base(d.url) || d.requestId || '';
    case 'ParseHTML':
      return base(d.url);
    default:
      return d.url ? base(d.url) : (d.type ?? d.functionName ?? '');
  }
}

/** Complete events ('X', and 'B'/'E' pairs) of one thread, sorted by start. */
function spans(events, pid, tid) {
  const out = [];
  const open = [];
  for (const e of events) {
    if (e.pid !== pid || e.tid !== tid) continue;
    if (e.ph === 'X' && e.dur !== undefined) out.push(e);
    else if (e.ph === 'B') open.push(e);
    else if (e.ph === 'E') {
      const b = open.pop();
      if (b !== undefined) out.push({ ...b, ph: 'X', dur: e.ts - b.ts, tdur: e.tts !== undefined && b.tts !== undefined ? e.tts - b.tts : undefined });
    }
  }
  return out.sort((a, b) => a.ts - b.ts || b.dur - a.dur);
}

/** JavaScript samples of the trace's CPU profiles: [{ ts, stack: [frame, …] (innermost first) }]. */
function samples(events) {
  const starts = new Map();
  for (const e of events) if (e.name === 'Profile') starts.set(`${e.pid}:${e.id}`, e.args?.data?.startTime ?? e.ts);
  const nodes = new Map();
  const out = [];
  const clock = new Map();
  for (const e of events) {
    if (e.name !== 'ProfileChunk') continue;
    const key = `${e.pid}:${e.id}`;
    const cp = e.args?.data?.cpuProfile ?? {};
    for (const n of cp.nodes ?? []) nodes.set(`${key}:${n.id}`, n);
    let t = clock.get(key) ?? starts.get(key) ?? e.ts;
    const deltas = e.args?.data?.timeDeltas ?? [];
    (cp.samples ?? []).forEach((id, k) => {
      t += deltas[k] ?? 0;
      out.push({ ts: t, key, id });
    });
    clock.set(key, t);
  }
  const name = (n) => {
    const f = n.callFrame ?? {};
    return `${f.functionName || '(anonymous)'} ${base(f.url)}${f.url ? `:${f.lineNumber ?? ''}` : ''}`;
  };
  return out.map((s) => {
    const stack = [];
    for (let n = nodes.get(`${s.key}:${s.id}`); n !== undefined; n = n.parent !== undefined ? nodes.get(`${s.key}:${n.parent}`) : undefined) stack.push(name(n));
    // Without parent links (older formats), the innermost frame alone.
    return { ts: s.ts, stack };
  });
}

/** The page's main thread: the one that ran animation frames (else CrRendererMain). */
export function mainThread(events) {
  const f = events.find((e) => e.name === 'FireAnimationFrame');
  if (f !== undefined) return { pid: f.pid, tid: f.tid };
  const m = events.find((e) => e.ph === 'M' && e.name === 'thread_name' && e.args?.name === 'CrRendererMain');
  return m === undefined ? undefined : { pid: m.pid, tid: m.tid };
}

/**
 * The main thread's tasks longer than `overMs`, each with what ran in it. Returns
 * [{ ts, ms, threadMs, self: [[name, ms]], longest: [{ name, ms, depth, detail }],
 *    js: [[function, ms]], jsStacks: [[stack, ms]], others: [[thread, ms]] }].
 */
export function longTasks(events, overMs = 50) {
  const main = mainThread(events);
  if (main === undefined) return [];
  const threadNames = new Map();
  for (const e of events) if (e.ph === 'M' && e.name === 'thread_name') threadNames.set(`${e.pid}:${e.tid}`, e.args?.name);
  const all = spans(events, main.pid, main.tid);
  const tasks = [];
  let end = -Infinity;
  for (const e of all) {
    if (e.ts < end) continue;
    if (e.name !== 'RunTask' && e.name !== 'ThreadControllerImpl::RunTask') continue;
    end = e.ts + e.dur;
    if (e.dur / 1000 > overMs) tasks.push(e);
  }
  const js = tasks.length > 0 ? samples(events) : [];
  // Other threads of the page's process and of the browser/GPU processes, by busy time.
  const other = tasks.length > 0 ? events.filter((e) => e.ph === 'X' && e.dur !== undefined && !(e.pid === main.pid && e.tid === main.tid)).sort((a, b) => a.ts - b.ts) : [];
  return tasks.map((t) => {
    const t0 = t.ts;
    const t1 = t.ts + t.dur;
    const inside = all.filter((e) => e.ts >= t0 && e.ts + e.dur <= t1 && e !== t);
    // Exclusive time by name: each event's duration less its children's.
    const self = new Map();
    const stack = [{ e: t, child: 0 }];
    const close = (upTo) => {
      while (stack.length > 1 && stack[stack.length - 1].e.ts + stack[stack.length - 1].e.dur <= upTo) {
        const s = stack.pop();
        self.set(s.e.name, (self.get(s.e.name) ?? 0) + (s.e.dur - s.child) / 1000);
        stack[stack.length - 1].child += s.e.dur;
      }
    };
    const depth = new Map();
    for (const e of inside) {
      close(e.ts);
      depth.set(e, stack.length);
      stack.push({ e, child: 0 });
    }
    close(Infinity);
    self.set('(task itself)', (t.dur - stack[0].child) / 1000);
    const longest = [...inside].sort((a, b) => b.dur - a.dur).slice(0, 20)
      .map((e) => ({ name: e.name, ms: e.dur / 1000, threadMs: e.tdur !== undefined ? e.tdur / 1000 : undefined, depth: depth.get(e), at: (e.ts - t0) / 1000, detail: detail(e) }));
    const fn = new Map();
    const st = new Map();
    const mine = js.filter((s) => s.ts >= t0 && s.ts <= t1);
    for (let k = 0; k < mine.length; k++) {
      const dt = ((mine[k + 1]?.ts ?? t1) - mine[k].ts) / 1000;
      const top = mine[k].stack[0] ?? '?';
      fn.set(top, (fn.get(top) ?? 0) + dt);
      const s = mine[k].stack.slice(0, 8).join(' < ');
      st.set(s, (st.get(s) ?? 0) + dt);
    }
    // Per thread, the time its outermost events covered in the task's span, and the
    // events (inclusive, nested ones counted again) that took most of it.
    const busy = new Map();
    const ends = new Map();
    const names = new Map();
    for (const e of other) {
      const a = Math.max(e.ts, t0);
      const b = Math.min(e.ts + e.dur, t1);
      if (b <= a) continue;
      const thread = `${e.pid === main.pid ? 'renderer' : `pid ${e.pid}`} ${threadNames.get(`${e.pid}:${e.tid}`) ?? e.tid}`;
      const from = Math.max(a, ends.get(thread) ?? -Infinity);
      if (b > from) {
        busy.set(thread, (busy.get(thread) ?? 0) + (b - from) / 1000);
        ends.set(thread, b);
      }
      if (e.name === 'RunTask' || e.name === 'ThreadControllerImpl::RunTask') continue;
      const k = `${thread}: ${e.name} ${detail(e)}`.trim();
      names.set(k, (names.get(k) ?? 0) + (b - a) / 1000);
    }
    return {
      ts: t0,
      ms: t.dur / 1000,
      threadMs: t.tdur !== undefined ? t.tdur / 1000 : undefined,
      detail: t.args?.src_func ? `${t.args.src_file ?? ''} ${t.args.src_func}` : detail(t),
      self: [...self].sort((a, b) => b[1] - a[1]).slice(0, 12),
      longest,
      jsSamples: mine.length,
      js: [...fn].sort((a, b) => b[1] - a[1]).slice(0, 12),
      jsStacks: [...st].sort((a, b) => b[1] - a[1]).slice(0, 6),
      others: [...busy].sort((a, b) => b[1] - a[1]).slice(0, 10),
      otherEvents: [...names].sort((a, b) => b[1] - a[1]).slice(0, 12),
    };
  });
}

/** Prints `longTasks`' findings. */
export function printLongTasks(found, log = console.log) {
  if (found.length === 0) {
    log('trace: no task of the page\'s main thread over the threshold');
    return;
  }
  for (const t of found) {
    log(`trace: long task at ts ${t.ts} µs: ${t.ms.toFixed(1)} ms wall, ${t.threadMs === undefined ? '?' : t.threadMs.toFixed(1)} ms thread time ${t.detail ? `(${t.detail})` : ''}`);
    log('  own time by event:');
    for (const [k, v] of t.self) log(`    ${v.toFixed(1).padStart(7)} ms  ${k}`);
    log('  longest events in it (start offset, wall / thread ms, nesting):');
    for (const e of t.longest) log(`    +${e.at.toFixed(1).padStart(6)}  ${e.ms.toFixed(1).padStart(7)} / ${e.threadMs === undefined ? '    ?' : e.threadMs.toFixed(1).padStart(5)} ms  ${'  '.repeat(Math.max(0, (e.depth ?? 1) - 1))}${e.name} ${e.detail}`);
    log(`  JavaScript sampled in it (${t.jsSamples} samples), self time:`);
    for (const [k, v] of t.js) log(`    ${v.toFixed(1).padStart(7)} ms  ${k}`);
    for (const [k, v] of t.jsStacks) log(`    stack ${v.toFixed(1).padStart(6)} ms  ${k}`);
    log('  other threads meanwhile (ms their events covered of the task\'s span):');
    for (const [k, v] of t.others) log(`    ${v.toFixed(1).padStart(7)} ms  ${k}`);
    log('  their longest events (inclusive):');
    for (const [k, v] of t.otherEvents) log(`    ${v.toFixed(1).padStart(7)} ms  ${k}`);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const data = JSON.parse(readFileSync(process.argv[2], 'utf8'));
  const events = Array.isArray(data) ? data : data.traceEvents;
  printLongTasks(longTasks(events, Number(process.argv[3] ?? 50)));
}
