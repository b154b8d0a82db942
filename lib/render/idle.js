// @ts-check
import { CHANGES_KEY, settledInPage } from './inpage.js';
import { bounded } from './pool.js';
import { evaluate } from './cdp-session.js';

/**
 * networkidle: load fired, no request in flight for --render-idle ms, then the page settled with still none begun. The quiet is
 * timed on our clock; a renderer short of CPU may not have run what the last answer starts, so the page's clock must agree too.
 */

/** On the page's clock, or --render-idle if longer; a DOM that never stops changing (a ticker) is read after it. */
const SETTLE_CAP_MS = 1000;
/** Past the cap, for the page's answer: its script may not yield. */
const SETTLE_GRACE_MS = 1000;

export class NetworkIdle {
  loaded = false;
  /** Asked and not answered yet: its script may be busy, its DOM still changing. */
  settling = 0;
  /** A settling holds only if none began meanwhile. */
  #begun = 0;
  /** @type {NodeJS.Timeout | undefined} */ #timer;
  /** @type {() => void} */ #mark = () => {};
  reached = new Promise((resolve) => { this.#mark = () => resolve(undefined); });

  /** @param {import('./cdp-session.js').CDPSession} session @param {number} quietMs --render-idle @param {Map<string, unknown>} inFlight the page's requests not seen to end */
  constructor(session, quietMs, inFlight) {
    this.session = session;
    this.quietMs = quietMs;
    this.inFlight = inFlight;
  }

  load() {
    this.loaded = true;
    this.check();
  }

  /** The quiet starts again when it ends. */
  begin() {
    this.#begun++;
    clearTimeout(this.#timer);
  }

  /** After load or a request's end. */
  check() {
    clearTimeout(this.#timer);
    if (this.loaded && this.inFlight.size === 0) this.#timer = setTimeout(this.#settle, this.quietMs);
  }

  stop() {
    clearTimeout(this.#timer);
  }

  #settle = () => {
    if (this.inFlight.size !== 0) return;
    const seen = this.#begun;
    const cap = Math.max(this.quietMs, SETTLE_CAP_MS);
    this.settling++;
    // Bounded: a page whose script never yields gets networkidle, and reading its DOM times out; a failed settling leaves the quiet standing.
    const asked = bounded(evaluate(this.session, settledInPage, { key: CHANGES_KEY, quiet: this.quietMs, cap }), cap + SETTLE_GRACE_MS, 'settle');
    const after = () => {
      this.settling--;
      if (seen === this.#begun && this.inFlight.size === 0) this.#mark(); // else the request begun meanwhile checks again when it ends
    };
    asked.then(after, after);
  };
}
