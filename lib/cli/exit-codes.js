// @ts-check
/** The exit codes every command shares: 0 all written, 1 pages failed or not written, 2 usage, 130 interrupted. */
export const EXIT = Object.freeze({ OK: 0, PAGES_FAILED: 1, USAGE: 2, INTERRUPTED: 130 });
