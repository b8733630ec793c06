// Work that only matters for what is painted runs at most once per animation
// frame: many calls before the frame coalesce into one. A hidden tab gets no
// animation frames, so a timer stands in (the title's unread count still moves).
// The frame's jobs run in one signal batch, so the views re-render once for all of
// them; `late` jobs run after the others (a count that the others may change back).

import { batch } from '@preact/signals';

const queued = new Set<() => void>();
const lateQueued = new Set<() => void>();
let scheduled = false;

function drain(set: Set<() => void>): void {
  while (set.size > 0) {
    const jobs = [...set];
    set.clear();
    for (const job of jobs) {
      // One job's failure must not drop the others (a list's new rows would wait
      // for the next message): it is reported on its own.
      try {
        job();
      } catch (e) {
        setTimeout(() => {
          throw e;
        }, 0);
      }
    }
  }
}

function run(): void {
  scheduled = false;
  batch(() => {
    drain(queued);
    drain(lateQueued);
    drain(queued);
  });
}

/** Runs `job` once before the next frame, however often it is asked for until then. */
export function onNextFrame(job: () => void, late = false): void {
  (late ? lateQueued : queued).add(job);
  if (scheduled) return;
  scheduled = true;
  if (typeof requestAnimationFrame === 'undefined' || typeof document === 'undefined') {
    queueMicrotask(run);
    return;
  }
  let done = false;
  const once = () => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    run();
  };
  const timer = setTimeout(once, document.hidden ? 0 : 100);
  requestAnimationFrame(once);
}

/**
 * Resolves at the next animation frame (its callbacks then run first), or after a
 * short timer when there are no frames (a hidden tab, no DOM).
 */
export function nextFrame(): Promise<void> {
  return new Promise((resolve) => {
    if (typeof requestAnimationFrame === 'undefined' || typeof document === 'undefined' || document.hidden) {
      setTimeout(resolve, 0);
      return;
    }
    const timer = setTimeout(resolve, 100);
    requestAnimationFrame(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

type Paced = { run: () => void; last: number; waiting: ReturnType<typeof setTimeout> | undefined };
const paced = new Map<() => void, Paced>();
const now = (): number => (typeof performance === 'undefined' ? Date.now() : performance.now());

/**
 * Like `onNextFrame`, but `job` runs at most once every `ms`: asked for sooner after
 * its last run, it runs in the first frame after that time. A view that a stream of
 * events changes in every frame (a count, a list's order) then re-renders a few times
 * a second, not sixty, and its last run still comes after the last change. Asked for
 * after a quiet spell, it runs in the next frame, as `onNextFrame` would.
 */
export function onFrameAtMost(job: () => void, ms: number, late = false): void {
  let p = paced.get(job);
  if (p === undefined) {
    const entry: Paced = {
      last: -Infinity,
      waiting: undefined,
      run: () => {
        entry.last = now();
        job();
      },
    };
    paced.set(job, entry);
    p = entry;
  }
  if (p.waiting !== undefined) return;
  const wait = p.last + ms - now();
  // (More than `ms` to wait: the clock went back, as a test's fake one does.)
  if (wait <= 0 || wait > ms) {
    onNextFrame(p.run, late);
    return;
  }
  const entry = p;
  entry.waiting = setTimeout(() => {
    entry.waiting = undefined;
    onNextFrame(entry.run, late);
  }, wait);
}

/**
 * Tests: forgets when paced jobs last ran (the next ask runs in the next frame); a
 * job waiting for its time runs in the next frame.
 */
export function resetPacing(): void {
  for (const p of paced.values()) {
    p.last = -Infinity;
    if (p.waiting === undefined) continue;
    clearTimeout(p.waiting);
    p.waiting = undefined;
    onNextFrame(p.run);
  }
}
