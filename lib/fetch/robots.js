// @ts-check
import robotsParserModule from 'robots-parser';

/** @typedef {{ isAllowed(url: string, ua?: string): boolean | undefined }} RobotsTxt */
const robotsParser = /** @type {(url: string, text: string) => RobotsTxt} */ (/** @type {unknown} */ (robotsParserModule)); // the package types no default export

/**
 * --robots: each origin's robots.txt, read once; agent "prerender", else "*"; a missing or unreadable one allows everything, as wget does.
 * @typedef {{ allowed(url: string, signal?: AbortSignal): Promise<boolean> }} Robots
 */

export const ROBOTS_AGENT = 'prerender';
const MAX_HOPS = 5;
/** Google reads 500 KiB. */
const MAX_BYTES = 512 * 1024;

/** @param {import('./http.js').Loader} loader @returns {Robots} */
export function createRobots(loader) {
  /** @type {Map<string, Promise<RobotsTxt | null>>} */ const byOrigin = new Map();

  /** @param {string} origin @param {AbortSignal | undefined} signal */
  async function read(origin, signal) {
    let url = `${origin}/robots.txt`;
    try {
      for (let hop = 0; hop <= MAX_HOPS; hop++) {
        const result = await loader.load(url, { signal });
        if (result.location === undefined) {
          const text = result.body.subarray(0, MAX_BYTES).toString('utf8');
          return robotsParser(`${origin}/robots.txt`, text);
        }
        url = new URL(result.location, url).href;
      }
    } catch {
      // missing or unreadable
    }
    return null;
  }

  return {
    async allowed(url, signal) {
      const origin = new URL(url).origin;
      let rules = byOrigin.get(origin);
      if (!rules) {
        rules = read(origin, signal);
        byOrigin.set(origin, rules);
      }
      const parsed = await rules;
      return parsed === null || parsed.isAllowed(url, ROBOTS_AGENT) !== false;
    },
  };
}
