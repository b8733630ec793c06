// One sender of bench/events.mjs's flood, run in a worker thread: an API client of
// its own that posts its share of the messages (i ≡ w mod drivers) on schedule,
// from the moment the main thread gives.

import { parentPort, workerData } from 'node:worker_threads';

// A driver thread: sends its share of the messages (i ≡ w mod drivers) on schedule.
async function drive(d) {
  const out = { sent: 0, ok: 0, failed: 0, firstId: Infinity, lastId: 0, latencies: [], errors: new Map() };
  const start = d.startAt - performance.timeOrigin;
  let next = d.w;
  const one = async () => {
    for (;;) {
      if (next >= d.total || performance.now() - start >= d.seconds * 1000) return;
      const i = next;
      next += d.drivers;
      const wait = start + (i * 1000) / d.rate - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      out.sent++;
      const email = d.senders[i % d.senders.length];
      const t0 = performance.now();
      try {
        const res = await fetch(`${d.url}/api/v1/messages`, {
          method: 'POST',
          headers: { Authorization: d.auth[email] },
          body: new URLSearchParams({ type: 'stream', to: '3', topic: d.topic, content: `flood ${d.run} message ${i}` }),
        });
        const body = await res.json();
        if (body.result === 'success') {
          out.ok++;
          out.firstId = Math.min(out.firstId, body.id);
          out.lastId = Math.max(out.lastId, body.id);
          out.latencies.push(performance.now() - t0);
        } else {
          out.failed++;
          out.errors.set(body.msg, (out.errors.get(body.msg) ?? 0) + 1);
        }
      } catch (e) {
        out.failed++;
        const k = String(e.cause?.code ?? e.message);
        out.errors.set(k, (out.errors.get(k) ?? 0) + 1);
      }
    }
  };
  await Promise.all(Array.from({ length: d.inFlight }, one));
  return out;
}


parentPort.postMessage('ready');
parentPort.once('message', async ({ startAt }) => {
  const r = await drive({ ...workerData, startAt });
  parentPort.postMessage(r);
});
