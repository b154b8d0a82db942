// @ts-check
import { decodeStored, packRecord, seenByte } from './packed.js';

/**
 * A page leased here lives in memory until `RedisFrontier.done` sends its result; any other is in Redis.
 * @typedef {import('../store/records.js').PageRecord} PageRecord @typedef {import('../store/records.js').RecordState} RecordState
 * @typedef {import('../store/records.js').RecordStore} RecordStore @typedef {import('./redis-frontier.js').RedisFrontier} RedisFrontier
 */

/** @implements {RecordStore} */
export class RedisRecordStore {
  /** @param {RedisFrontier} frontier */
  constructor(frontier) {
    this.frontier = frontier;
  }

  /** The frontier's scripts create records and note referrers as they add URLs. */
  async admit() {}

  /** @param {string} key */
  async get(key) {
    const working = this.frontier.leased(key);
    if (working) return working;
    const { redis, prefix } = this.frontier;
    const raw = await redis.hgetBuffer(`${prefix}rec`, key).catch((error) => { throw redis.toFrontierError(error); });
    return raw ? decodeStored(raw, key) : undefined;
  }

  /** In one round trip: phase two reads every page's. @param {string[]} keys */
  async getMany(keys) {
    if (keys.length === 0) return [];
    const { redis, prefix } = this.frontier;
    const raws = await redis.hmgetBuffer(`${prefix}rec`, ...keys).catch((error) => { throw redis.toFrontierError(error); });
    return keys.map((key, i) => this.frontier.leased(key) ?? (raws[i] ? decodeStored(raws[i], key) : undefined));
  }

  /** @param {PageRecord} record */
  async put(record) {
    if (this.frontier.leased(record.key) === record) return;
    // While the tree is written, a page's file and hashes are of no use to the other processes.
    if (this.frontier.finishing && record.state === 'done') return;
    const { redis, prefix } = this.frontier;
    // A queued record is not written over a result recorded meanwhile (PUT).
    await redis.prPut(prefix, record.key, Buffer.concat([Buffer.from(seenByte(record), 'latin1'), packRecord(record)])).catch((error) => { throw redis.toFrontierError(error); });
  }

  /** @param {(key: Buffer, value: Buffer) => void} each */
  async #scan(each) {
    const { redis, prefix } = this.frontier;
    let cursor = '0';
    do {
      const [next, entries] = await redis.hscanBuffer(`${prefix}rec`, cursor, 'COUNT', 2000).catch((error) => { throw redis.toFrontierError(error); });
      cursor = next.toString();
      for (let i = 1; i < entries.length; i += 2) each(entries[i - 1], entries[i]);
    } while (cursor !== '0');
  }

  /** @param {RecordState} state */
  async keys(state) {
    if (state !== 'done') return (await this.list(state)).map((record) => record.key);
    /** @type {string[]} */ const keys = [];
    // d: done, a page (the first byte says so without decoding the record)
    await this.#scan((key, value) => { if (value[0] === 0x64) keys.push(key.toString()); });
    return keys;
  }

  /** In one scan. @param {RecordState | RecordState[]} states */
  async list(states) {
    const wanted = new Set([states].flat());
    const queued = wanted.has('queued');
    const others = wanted.size > (queued ? 1 : 0);
    /** @type {PageRecord[]} */ const list = [];
    await this.#scan((key, value) => {
      const first = value[0];
      // d, x: no longer queued; q, r, Q, R: queued
      if ((first === 0x64 || first === 0x78) ? !others : !queued) return;
      const record = decodeStored(value, key.toString());
      if (wanted.has(record.state)) list.push(record);
    });
    // The pages that linked to a failure (or to a page gone), noted as they were found.
    const broken = list.filter((record) => record.state === 'failed' || record.state === 'gone');
    if (broken.length > 0) {
      const { redis, prefix } = this.frontier;
      for (let start = 0; start < broken.length; start += 1000) {
        const chunk = broken.slice(start, start + 1000);
        const refs = await redis.hmget(`${prefix}refs`, ...chunk.map((record) => record.key)).catch((error) => { throw redis.toFrontierError(error); });
        chunk.forEach((record, i) => { record.referrers = refs[i] ? refs[i].split('\n') : []; });
      }
    }
    return list;
  }

  /** The records stay in Redis for the next crawl with this id. */
  async close() {}
}
