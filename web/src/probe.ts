// Measuring aid, only in a build made with HEARTH_PROBE=1 (bench/events.mjs with
// BENCH_WORK=1): counts, per animation frame, the components Preact renders (by
// name), the elements added to and removed from the page, and the event polls
// started. Never in `npm run build` (vite.config.ts leaves it out).

import { options } from 'preact';

type Frame = { t: number; renders: number; added: number; removed: number; polls: number; by: Record<string, number> };
type VNodeLike = { type: unknown };

let current: Frame = { t: 0, renders: 0, added: 0, removed: 0, polls: 0, by: {} };
let frames: Frame[] = [];
let recording = false;

const hooks = options as unknown as Record<string, ((vnode: VNodeLike) => void) | undefined>;
const previous = hooks.__r;
hooks.__r = (vnode: VNodeLike) => {
  if (recording && typeof vnode.type === 'function') {
    const f = vnode.type as { displayName?: string; name?: string };
    const name = f.displayName ?? f.name ?? '?';
    current.renders++;
    current.by[name] = (current.by[name] ?? 0) + 1;
  }
  previous?.(vnode);
};

// Event polls started, counted by wrapping fetch.
const realFetch = window.fetch.bind(window);
window.fetch = (input: RequestInfo | URL, init?: RequestInit) => {
  if (recording && String(input instanceof Request ? input.url : input).includes('/json/events')) current.polls++;
  return realFetch(input, init);
};

const elements = (n: Node): number => (n instanceof Element ? 1 + n.getElementsByTagName('*').length : 0);
const mutations = new MutationObserver((records) => {
  if (!recording) return;
  for (const r of records) {
    for (const n of r.addedNodes) current.added += elements(n);
    for (const n of r.removedNodes) current.removed += elements(n);
  }
});

const tick = (t: number): void => {
  if (!recording) return;
  // Mutations not yet delivered belong to the frame that made them.
  const pending = mutations.takeRecords();
  for (const r of pending) {
    for (const n of r.addedNodes) current.added += elements(n);
    for (const n of r.removedNodes) current.removed += elements(n);
  }
  current.t = t;
  frames.push(current);
  current = { t: 0, renders: 0, added: 0, removed: 0, polls: 0, by: {} };
  requestAnimationFrame(tick);
};

(window as unknown as { __probe: unknown }).__probe = {
  start(): void {
    frames = [];
    current = { t: 0, renders: 0, added: 0, removed: 0, polls: 0, by: {} };
    recording = true;
    mutations.observe(document.body, { childList: true, subtree: true });
    requestAnimationFrame(tick);
  },
  stop(): Frame[] {
    recording = false;
    mutations.disconnect();
    return frames;
  },
};
