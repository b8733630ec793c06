// Work that only matters for what is painted runs at most once per animation
// frame: many calls before the frame coalesce into one. A hidden tab gets no
// animation frames, so a timer stands in (the title's unread count still moves).

const queued = new Set<() => void>();
let scheduled = false;

function run(): void {
  scheduled = false;
  const jobs = [...queued];
  queued.clear();
  for (const job of jobs) job();
}

/** Runs `job` once before the next frame, however often it is asked for until then. */
export function onNextFrame(job: () => void): void {
  queued.add(job);
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
