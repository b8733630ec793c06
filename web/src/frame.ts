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
