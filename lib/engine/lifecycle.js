// @ts-check
/** Clean-ups registered as resources are acquired, run in reverse order. Invariant: close() runs every clean-up once, even when one of them fails. */
export class Lifecycle {
  /** @type {{ name: string, run: () => unknown }[]} */ #cleanups = [];

  /** @param {string} name what is released (for a failure's message) @param {() => unknown} cleanup */
  defer(name, cleanup) {
    this.#cleanups.push({ name, run: cleanup });
  }

  /** @param {(name: string, error: unknown) => void} [onError] */
  async close(onError) {
    for (const cleanup of this.#cleanups.splice(0).reverse()) {
      try {
        await cleanup.run();
      } catch (error) {
        onError?.(cleanup.name, error);
      }
    }
  }
}
