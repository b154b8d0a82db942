// @ts-check
import { DirBlobStore } from './dir-blobs.js';
import { RedisFrontier } from './redis-frontier.js';
import { RedisCoordination } from './redis-coordination.js';

/** @typedef {import('../engine/coordination.js').Coordination} Coordination */

/** A worker's side of the coordination seam: leased pages, the shared blob directory, never OUT. @implements {Coordination} */
export class JoinedCrawl extends RedisCoordination {
  ownsOut = false;

  /**
   * @param {import('./connection.js').CrawlRedis} redis @param {string} prefix @param {ConstructorParameters<typeof RedisFrontier>[2]} settings
   * @param {ConstructorParameters<typeof RedisFrontier>[3]} roles @param {string} blobsDir
   */
  constructor(redis, prefix, settings, roles, blobsDir) {
    super(new RedisFrontier(redis, prefix, settings, roles));
    this.redis = redis;
    this.blobs = new DirBlobStore(blobsDir);
  }

  /** The coordinator seeds the roots. */
  seeds() {
    return [];
  }

  /** @param {import('../engine/run.js').CrawlRun} run */
  attach(run) {
    this.frontier.start();
    this.frontier.attach(run, { lazyPrior: true });
  }

  feed() {
    return null;
  }

  /** This process's results are all in Redis; the coordinator waits for every process. */
  async barrier() {
    await this.frontier.flush();
  }

  async finishPool() {
    return null;
  }

  async finished() {}

  /** No file of OUT, only the stored pages its leases bring; --ignore hashes are the crawl's own. @returns {import('../recrawl/prior.js').Prior} */
  lastCrawl() {
    return { complete: false, pages: new Map(), reuse: true, output: '', reuseOutput: false, sameIgnore: true, precompressed: [] };
  }

  async close() {
    await this.frontier.leave();
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
