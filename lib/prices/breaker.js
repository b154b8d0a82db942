// @ts-check
/**
 * A circuit breaker for the price endpoint: `threshold` endpoint errors in a row open it for `cooldownMs`, then one probe decides.
 * A wait for a local connection is never an endpoint error.
 */

/** @typedef {{ warn(message: string): void, info?(message: string): void }} Logger */
/** @typedef {'closed' | 'open' | 'half-open'} BreakerState */

export class Breaker {
  /** @type {BreakerState} */ state = 'closed';
  #failures = 0;
  #openUntil = 0;
  #probing = false;
  #options;

  /** @param {{ threshold: number, cooldownMs: number, now: () => number, logger?: Logger, name: string, onChange?: (state: BreakerState) => void }} options */
  constructor(options) {
    this.#options = options;
  }

  /** Open and cooling down, or the probe is out; no side effect. */
  blocked() {
    if (this.state === 'open') return this.#options.now() < this.#openUntil;
    return this.state === 'half-open' && this.#probing;
  }

  /** 'probe' is the one half-open request, whose outcome must be reported. @returns {'yes' | 'probe' | 'no'} */
  allow() {
    if (this.state === 'closed') return 'yes';
    if (this.state === 'open') {
      if (this.#options.now() < this.#openUntil) return 'no';
      this.#set('half-open', `prices: ${this.#options.name}: circuit half-open, sending one probe request`);
    }
    if (this.#probing) return 'no';
    this.#probing = true;
    return 'probe';
  }

  /** Any answer that is not an endpoint error. */
  success() {
    this.#failures = 0;
    this.#probing = false;
    if (this.state !== 'closed') this.#set('closed', `prices: ${this.#options.name}: circuit closed, the endpoint answers again`);
  }

  /** An endpoint error (5xx, refused, reset, timeout of a sent request). @param {string} reason */
  failure(reason) {
    this.#probing = false;
    this.#failures++;
    if (this.state === 'half-open' || (this.state === 'closed' && this.#failures >= this.#options.threshold)) {
      this.#openUntil = this.#options.now() + this.#options.cooldownMs;
      const why = this.state === 'half-open' ? 'the probe failed' : `${this.#failures} endpoint errors in a row`;
      this.#set('open', `prices: ${this.#options.name}: circuit open (${why}, last: ${reason}); cached prices or the fallback for ${this.#options.cooldownMs} ms`);
    }
  }

  /** A probe that could not be sent (overload, close): let another one try. */
  release() {
    this.#probing = false;
  }

  /** @param {BreakerState} state @param {string} message */
  #set(state, message) {
    this.state = state;
    if (state === 'closed') this.#options.logger?.info?.(message);
    else this.#options.logger?.warn(message);
    this.#options.onChange?.(state);
  }
}
