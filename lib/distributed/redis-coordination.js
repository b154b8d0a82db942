// @ts-check

/** What SharedCrawl and JoinedCrawl share: frontier and records in Redis, taken by lease. */
export class RedisCoordination {
  shared = true;

  /** @param {import('./redis-frontier.js').RedisFrontier} frontier */
  constructor(frontier) {
    this.frontier = frontier;
  }

  get records() {
    return this.frontier.records;
  }

  /** A 429 or 503 holds its origin back in every process. @param {{ url: string, delayMs: number, error: Error }} info */
  backoff(info) {
    this.frontier.backoff(info);
  }

  idle() {
    return this.frontier.idle();
  }

  /** No process holds the whole frontier. */
  knows() {
    return false;
  }

  waits() {
    return undefined;
  }

  wantsLinks() {
    return this.frontier.wantsLinks();
  }

  release() {}
}
