// The machine's CPU during a benchmark, sampled in a worker thread (events.mjs,
// BENCH_MACHINE=1 or with BENCH_TRACE): every `interval` ms, the time on
// CLOCK_MONOTONIC (µs, the clock of Chromium's trace timestamps on Linux), the
// machine's CPU ticks (/proc/stat) and each process's user + system ticks
// (/proc/<pid>/stat). `cpuIn(samples, t0, t1)` says how busy the machine was over a
// span and which processes ran in it: a long task whose thread time is short, on a
// machine busy with another process, was the machine's, not the page's.

import { readdirSync, readFileSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';

function read(path) {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

const names = new Map();
function name(pid, comm) {
  let n = names.get(pid);
  if (n === undefined) {
    // (Chromium's children rewrite theirs as one string, spaces between the arguments.)
    let cmd = (read(`/proc/${pid}/cmdline`) ?? '').split('\0').filter((a) => a !== '');
    if (cmd.length === 1) cmd = cmd[0].split(' ');
    const type = cmd.find((a) => a.startsWith('--type='));
    n = `${comm}${type ? ` ${type.slice(7)}` : ''}${cmd[1] && !type ? ` ${cmd.slice(1, 3).join(' ').slice(0, 60)}` : ''}`;
    names.set(pid, n);
  }
  return n;
}

function sample() {
  const t = Number(process.hrtime.bigint() / 1000n);
  const cpu = (read('/proc/stat') ?? '').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const procs = {};
  const threads = {};
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const s = read(`/proc/${pid}/stat`);
    if (s === undefined) continue;
    const close = s.lastIndexOf(')');
    const comm = s.slice(s.indexOf('(') + 1, close);
    const f = s.slice(close + 2).split(' ');
    const n = name(pid, comm);
    procs[pid] = [n, Number(f[11]) + Number(f[12])];
    // Chromium's processes thread by thread (the renderer's main thread, V8's GC
    // helpers, the compositor…).
    if (!n.startsWith('chromium')) continue;
    let tasks = [];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch { /* gone */ }
    for (const tid of tasks) {
      const ts = read(`/proc/${pid}/task/${tid}/stat`);
      if (ts === undefined) continue;
      const c = ts.lastIndexOf(')');
      const g = ts.slice(c + 2).split(' ');
      const kind = n.split(' ')[1] ?? '';
      threads[`${pid}/${tid}`] = [`${pid} ${kind.startsWith('-') || kind === '' ? 'browser' : kind} ${ts.slice(ts.indexOf('(') + 1, c)}`, Number(g[11]) + Number(g[12])];
    }
  }
  return { t, cpu, procs, threads, load: (read('/proc/loadavg') ?? '').trim() };
}

/** How busy the machine was between t0 and t1 (µs), and the processes that ran. */
export function cpuIn(samples, t0, t1) {
  let a;
  let b;
  for (const s of samples) {
    if (s.t <= t0) a = s;
    if (s.t >= t1 && b === undefined) b = s;
  }
  if (a === undefined || b === undefined) return undefined;
  const d = b.cpu.map((v, k) => v - (a.cpu[k] ?? 0));
  const total = d.reduce((x, y) => x + y, 0);
  const idle = (d[3] ?? 0) + (d[4] ?? 0);
  const procs = [];
  for (const [pid, [n, ticks]] of Object.entries(b.procs)) {
    const dt = ticks - (a.procs[pid]?.[1] ?? 0);
    if (dt > 0) procs.push([`${pid} ${n}`, dt * 10]);
  }
  const threads = [];
  for (const [id, [n, ticks]] of Object.entries(b.threads ?? {})) {
    const dt = ticks - (a.threads?.[id]?.[1] ?? 0);
    if (dt > 0) threads.push([n, dt * 10]);
  }
  return {
    spanMs: (b.t - a.t) / 1000,
    threads: threads.sort((x, y) => y[1] - x[1]).slice(0, 8),
    busyPct: total > 0 ? ((total - idle) / total) * 100 : NaN,
    procs: procs.sort((x, y) => y[1] - x[1]).slice(0, 8),
    load: b.load,
  };
}

if (parentPort !== null && workerData?.machine) {
  const samples = [];
  const timer = setInterval(() => samples.push(sample()), workerData.interval ?? 100);
  samples.push(sample());
  parentPort.on('message', () => {
    clearInterval(timer);
    samples.push(sample());
    parentPort.postMessage(samples);
  });
}
