/** True only in a measuring build (vite.config.ts, HEARTH_PROBE=1). */
declare const __HEARTH_PROBE__: boolean;
