// @ts-check
/**
 * An HTTP server for bench/same-output.js whose handler can be swapped
 * between crawls (the origin "changes" on the same port), and which can hold
 * requests: once armed with N, it answers the next N requests and holds every
 * one after them until disarmed, so an interrupted crawl stops at the same
 * page every run.
 */
import http from 'node:http';

/**
 * @param {http.RequestListener} first
 */
export async function startSwitchableOrigin(first) {
  let handler = first;
  /** @type {{ left: number, onHold: () => void } | null} */
  let gate = null;
  /** @type {Set<http.ServerResponse>} */
  const held = new Set();
  const server = http.createServer((req, res) => {
    if (gate && gate.left <= 0) {
      held.add(res);
      res.once('close', () => held.delete(res));
      gate.onHold();
      return;
    }
    if (gate) gate.left--;
    handler(req, res);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
  return {
    origin: `http://127.0.0.1:${port}`,
    /** @param {http.RequestListener} next */
    swap(next) { handler = next; },
    /**
     * Answer `count` more requests, then hold the others; `onHold` runs on each held one.
     * @param {number} count
     * @param {() => void} onHold
     */
    arm(count, onHold) { gate = { left: count, onHold }; },
    /** Answer everything again; the held requests are dropped (their client is gone). */
    disarm() {
      gate = null;
      for (const res of held) res.destroy();
      held.clear();
    },
    close: () => new Promise((resolve) => {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      server.close(() => resolve(undefined));
    }),
  };
}
