// @ts-check
import { FrontierError } from '../errors.js';
import { decodeStored } from './packed.js';

/**
 * A shared crawl's results as Redis carries them to the coordinator's early writes (scripts.js DONE, FEED).
 * @typedef {import('../store/records.js').PageRecord} PageRecord @typedef {import('../engine/early.js').LinksTo} LinksTo
 */

/** 'L', then '\n' + each URL that may become a page, '\n?' if not sure to be fetched. @param {LinksTo} linksTo */
export function feedLinks({ keys, never, sure }) {
  const seen = new Set();
  let text = 'L';
  for (const key of keys) {
    if (never.has(key) || seen.has(key)) continue;
    seen.add(key);
    text += sure?.has(key) ? `\n${key}` : `\n?${key}`;
  }
  return text;
}

/** @param {Buffer[]} items key, stored record, links: three each @returns {{ key: string, record: PageRecord, linksTo?: LinksTo }[]} */
export function parseFeed(items) {
  if (items.length % 3 !== 0) throw new FrontierError('the feed holds a result cut short', { code: 'FEED_ENTRY' });
  const results = [];
  for (let i = 0; i < items.length; i += 3) {
    const key = items[i].toString('utf8');
    const record = decodeStored(items[i + 1], key);
    const links = items[i + 2];
    if (links.length === 0 || links[0] !== 76 /* L */) {
      results.push({ key, record });
      continue;
    }
    /** @type {string[]} */ const keys = [];
    const sure = new Set();
    const text = links.toString('utf8', 1);
    if (text !== '') {
      for (const line of text.slice(1).split('\n')) {
        if (line.startsWith('?')) keys.push(line.slice(1));
        else {
          keys.push(line);
          sure.add(line);
        }
      }
    }
    results.push({ key, record, linksTo: { keys, never: new Set(), sure } });
  }
  return results;
}
