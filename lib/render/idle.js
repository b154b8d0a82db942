// @ts-check
import { CHANGES_KEY, settledInPage } from './inpage.js';
import { bounded } from './pool.js';
import { evaluate } from './cdp-session.js';

/**
 * networkidle: the load event has fired, no request was in flight for
 * --render-idle ms, and then the page settled (settledInPage) with still none
 * begun. The network's quiet is timed on our clock; a renderer short of CPU
 * may not yet have run what the last response starts, so the page's own idle
 * callback and its DOM's last change, on its clock, must agree too.
 */

/**
 * How long a settling waits, on the page's clock, for its DOM to stop
 * changing: this, or --render-idle if longer. A DOM that never stops
 * changing (a ticker) is read after it.
 */
const SETTLE_CAP_MS = 1000;
/** Past the cap, how long a settling waits for the page's answer (its script may not yield). */
const SETTLE_GRACE_MS = 1000;

export class NetworkIdle {
  /** The load event has fired. */
  loaded = false;
  /** Settlings asked of the page and not answered yet (its script may be busy, its DOM still changing). */
  settling = 0;
  /** Requests begun so far: a settling holds only if none began meanwhile. */
  #begun = 0;
  /** @type {NodeJS.Timeout | undefined} */
  #timer;
  /** @type {() => void} */
  #mark = () => {};
  /** Resolves once the page is idle. */
  reached = new Promise((resolve) => { this.#mark = () => resolve(undefined); });

  /**
   * @param {import('./cdp-session.js').CDPSession} session
   * @param {number} quietMs --render-idle
   * @param {Map<string, unknown>} inFlight the page's requests not seen to end
   */
  constructor(session, quietMs, inFlight) {
    this.session = session;
    this.quietMs = quietMs;
    this.inFlight = inFlight;
  }

  /** The load event fired. */
  load() {
    this.loaded = true;
    this.check();
  }

  /** A request was let through: the quiet starts again when it ends. */
  begin() {
    this.#begun++;
    clearTimeout(this.#timer);
  }

  /** After the load event or a request's end: time the quiet. */
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
    // Bounded: a page whose script never yields gets networkidle, and the read of its DOM is what
    // times out; a settling that fails leaves the network's quiet standing.
    const asked = bounded(evaluate(this.session, settledInPage, { key: CHANGES_KEY, quiet: this.quietMs, cap }), cap + SETTLE_GRACE_MS, 'settle');
    const after = () => {
      this.settling--;
      if (seen === this.#begun && this.inFlight.size === 0) this.#mark(); // else the request begun meanwhile checks again when it ends
    };
    asked.then(after, after);
  };
}
