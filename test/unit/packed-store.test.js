// @ts-check
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BlobIndex } from '../../lib/store/blob-index.js';
import { Arena } from '../../lib/store/arena.js';
import { FieldCodec } from '../../lib/store/fields.js';
import { MemoryRecordStore, MAX_REFERRERS } from '../../lib/store/records.js';
import { StoredPages } from '../../lib/store/stored-pages.js';

const HEX = 'ab'.repeat(32);
const HEX2 = '0f'.repeat(32);

describe('FieldCodec', () => {
  const codec = new FieldCodec([
    ['n', 'uint'], ['s', 'str'], ['h', 'hex'], ['j', 'json'], ['f', 'flag'], ['e', ['a', 'b']],
  ], { extra: true, skip: ['id'] });

  it('gives back every field as it went in, in each form', () => {
    const object = { n: 300000, s: 'héllo ✓', h: HEX, j: { a: [1, 'x'] }, f: true, e: 'b' };
    const bytes = Buffer.from(codec.encode(object));
    expect(codec.decode(bytes, {})).toEqual(object);
    // 64 hex digits take 32 bytes, a known enum value one
    expect(Buffer.from(codec.encode({ h: HEX })).length).toBe(33);
    expect(Buffer.from(codec.encode({ e: 'a' })).length).toBe(2);
  });

  it('keeps values that do not fit their field as JSON, and properties outside the table', () => {
    const object = { n: -1, s: 5, h: HEX.toUpperCase(), e: 'c', f: 'yes', other: [1, 2], id: 'skipped' };
    const back = codec.decode(Buffer.from(codec.encode(object)), {});
    expect(back).toEqual({ n: -1, s: 5, h: HEX.toUpperCase(), e: 'c', f: 'yes', other: [1, 2] });
    expect(codec.decode(Buffer.from(codec.encode({ n: null, j: null })), {})).toEqual({ n: null, j: null });
  });

  it('leaves out undefined, a false flag and the field it is told to omit', () => {
    expect(codec.encode({ n: undefined, f: false }).length).toBe(0);
    expect(codec.decode(Buffer.from(codec.encode({ s: 'a', n: 1 }, 's')), {})).toEqual({ n: 1 });
  });

  it('numbers common strings: two bytes once known, and any value still comes back', () => {
    const common = new FieldCodec([['type', 'common'], ['n', 'uint']]);
    const first = Buffer.from(common.encode({ type: 'text/html; charset=utf-8' }));
    expect(first.length).toBe(2);
    expect(common.decode(first, {})).toEqual({ type: 'text/html; charset=utf-8' });
    const values = Array.from({ length: 5000 }, (_, i) => `type/${i}`);
    const encoded = values.map((type) => Buffer.from(common.encode({ type, n: 1 })));
    // past the table's room the value is kept as JSON
    expect(encoded[4999].length).toBeGreaterThan(encoded[10].length);
    expect(encoded.map((bytes) => common.decode(bytes, {}).type)).toEqual(values);
    expect(common.decode(Buffer.from(common.encode({ type: 7 })), {})).toEqual({ type: 7 });
  });

  it('reads one field without the others, in each form, past fields of every form', () => {
    const object = { n: 300000, s: 'héllo ✓', h: HEX, j: { a: [1, 'x'] }, f: true, e: 'b', other: 'x' };
    const bytes = Buffer.from(codec.encode(object));
    for (const [name, value] of Object.entries(object)) expect(codec.pick(bytes, [name], {})).toEqual({ [name]: value });
    expect(codec.pick(bytes, ['s', 'e', 'other'], {})).toEqual({ s: object.s, e: 'b', other: 'x' });
    const odd = Buffer.from(codec.encode({ n: -1, h: 'not hex', s: 'after' }));
    expect(codec.pick(odd, ['s'], {})).toEqual({ s: 'after' });
    expect(codec.pick(odd, ['h'], {})).toEqual({ h: 'not hex' });
    expect(codec.pick(odd, ['j'], {})).toEqual({});
  });

  it('packs only 64 lower-case hex digits as 32 bytes; any other text of 64 characters comes back as it went in', () => {
    const near = [
      HEX.slice(0, 63) + 'g', HEX.slice(0, 63) + 'F', 'G' + HEX.slice(1), HEX.slice(0, 63) + 'é', HEX.slice(0, 63) + '\u0130',
      HEX.slice(0, 63) + '\u0161', HEX.slice(0, 62) + '日a', HEX.slice(0, 63) + '/', HEX.slice(0, 63) + ':', HEX.slice(0, 63) + '`',
    ];
    for (const h of near) {
      const bytes = Buffer.from(codec.encode({ h, n: 1 }));
      expect(bytes.length).toBeGreaterThan(34);
      expect(codec.decode(bytes, {})).toEqual({ h, n: 1 });
    }
    expect(codec.decode(Buffer.from(codec.encode({ h: '0123456789abcdef'.repeat(4) })), {})).toEqual({ h: '0123456789abcdef'.repeat(4) });
  });

  it('gives back text of every length around its length bytes, ASCII or not', () => {
    for (const length of [0, 1, 127, 128, 129, 255, 256, 257, 16383, 16384, 70000]) {
      for (const text of ['a'.repeat(length), 'é'.repeat(length), 'a'.repeat(Math.max(0, length - 1)) + '✓']) {
        const bytes = Buffer.from(codec.encode({ s: text, n: 7 }));
        expect(codec.decode(bytes, {})).toEqual({ s: text, n: 7 });
        expect(codec.pick(bytes, ['n'], {})).toEqual({ n: 7 });
      }
    }
  });

  it('writes the bytes it always wrote (a record packed by an earlier version reads the same)', () => {
    const record = { n: 300000, s: 'héllo ✓ http://shop.test/st/p.asp?id=7', h: '0123456789abcdef'.repeat(4), j: { a: [1, 'x'] }, f: true, e: 'b', other: [1, 2], id: 'skipped' };
    expect(Buffer.from(codec.encode(record)).toString('hex')).toBe(
      '01e0a712022968c3a96c6c6f20e29c9320687474703a2f2f73686f702e746573742f73742f702e6173703f69643d37030123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef040d7b2261223a5b312c2278225d7d0506013f0f7b226f74686572223a5b312c325d7d',
    );
    const long = Buffer.from(codec.encode({ s: 'a'.repeat(200), h: 'not hex' }));
    expect(long.length).toBe(214);
    expect(long.subarray(0, 4).toString('hex')).toBe('02c80161');
  });

  it('grows its scratch buffer for a large value', () => {
    const big = 'x'.repeat(100_000);
    expect(codec.decode(Buffer.from(codec.encode({ s: big })), {})).toEqual({ s: big });
  });
});

describe('Arena', () => {
  it('keeps a value per slot; a smaller one in place, a larger one moved', () => {
    const arena = new Arena();
    const a = arena.intern('a');
    const b = arena.intern('b');
    expect(arena.intern('a')).toBe(a);
    arena.write(a, Buffer.from('12345'), 5);
    arena.write(b, Buffer.from('xyz'), 3);
    expect(arena.read(a)?.toString()).toBe('12345');
    arena.write(a, Buffer.from('98'), 2);
    expect(arena.read(a)?.toString()).toBe('98');
    arena.write(a, Buffer.from('abcdefgh'), 8);
    expect(arena.read(a)?.toString()).toBe('abcdefgh');
    expect(arena.read(b)?.toString()).toBe('xyz');
    arena.clear(b);
    expect(arena.read(b)).toBeUndefined();
    expect(arena.slotOf('c')).toBeUndefined();
  });

  it('compacts its chunks when most of them is garbage, values unchanged', () => {
    const arena = new Arena();
    const slots = Array.from({ length: 3000 }, (_, i) => arena.intern(`k${i}`));
    expect(arena.keys.length).toBe(3000);
    // each round writes every value again, one byte longer: the old ones are garbage
    for (let round = 1; round <= 40; round++) {
      for (const slot of slots) {
        const value = Buffer.alloc(100 + round, slot % 251);
        arena.write(slot, value, value.length);
      }
    }
    for (const slot of slots) {
      const value = arena.read(slot);
      expect(value?.length).toBe(140);
      expect(value?.every((byte) => byte === slot % 251)).toBe(true);
    }
    // 3,000 values of 140 bytes: well under what 40 rounds wrote (16 MB) once compacted
    expect(arena.bytes).toBeLessThanOrEqual(6 * 1024 * 1024);
  });

  it('holds a value larger than a chunk', () => {
    const arena = new Arena();
    const slot = arena.intern('big');
    const value = Buffer.alloc(3 * 1024 * 1024, 7);
    arena.write(arena.intern('before'), Buffer.from('ab'), 2);
    arena.write(slot, value, value.length);
    // the next values go elsewhere, not over the large one
    const after = arena.intern('after');
    arena.write(after, Buffer.from('xyz'), 3);
    expect(arena.read(slot)?.equals(value)).toBe(true);
    expect(arena.read(after)?.toString()).toBe('xyz');
    expect(arena.read(/** @type {number} */ (arena.slotOf('before')))?.toString()).toBe('ab');
  });

  it('grows its slots and tells its user', () => {
    const arena = new Arena();
    const capacities = /** @type {number[]} */ ([]);
    arena.onGrow((capacity) => capacities.push(capacity));
    for (let i = 0; i < 5000; i++) arena.write(arena.intern(`u${i}`), Buffer.from(String(i)), String(i).length);
    expect(capacities.length).toBeGreaterThan(0);
    expect(arena.read(/** @type {number} */ (arena.slotOf('u4321')))?.toString()).toBe('4321');
  });
});

describe('MemoryRecordStore (packed)', () => {
  const key = (/** @type {number} */ i) => `http://shop.test/p?id=${i}`;

  it('hands out one object for a queued record until it is put, then copies', async () => {
    const store = new MemoryRecordStore();
    await store.admit([{ key: key(1), kind: 'navigation', referrer: null }], ['added']);
    const taken = await store.get(key(1));
    expect(taken?.state).toBe('queued');
    expect(await store.get(key(1))).toBe(taken);
    const record = /** @type {import('../../lib/store/records.js').PageRecord} */ (taken);
    Object.assign(record, {
      state: 'done', status: 200, contentType: 'text/html; charset=utf-8', type: 'html', charset: 'utf-8',
      etag: '"e1"', wanted: 'p1.htm', file: 'p1.htm', body: HEX, scan: HEX2, change: 'new', referrers: undefined,
    });
    await store.put(record);
    const copy = await store.get(key(1));
    expect(copy).not.toBe(record);
    expect(copy).toEqual(record);
    copy && (copy.file = 'elsewhere.htm');
    expect((await store.get(key(1)))?.file).toBe('p1.htm');
    copy && (copy.file = 'elsewhere.htm');
    copy && (await store.put(copy));
    expect(await store.get(key(1))).toMatchObject({ wanted: 'p1.htm', file: 'elsewhere.htm' });
  });

  it('notes the kind and up to five distinct referrers of a known URL', async () => {
    const store = new MemoryRecordStore();
    await store.admit([{ key: key(1), kind: 'requisite', referrer: key(100) }], ['added']);
    const more = Array.from({ length: 8 }, (_, i) => ({ key: key(1), kind: /** @type {const} */ ('requisite'), referrer: key(100 + (i % 7)) }));
    await store.admit(more, more.map(() => 'known'));
    await store.admit([{ key: key(1), kind: 'navigation', referrer: null }], ['known']);
    const record = await store.get(key(1));
    expect(record?.kind).toBe('navigation');
    expect(record?.referrers).toEqual([100, 101, 102, 103, 104].map(key));
    expect(record?.referrers?.length).toBe(MAX_REFERRERS);
    // referrers noted on the object while it is taken, then kept by put
    await store.admit([{ key: key(2), kind: 'navigation', referrer: null }], ['added']);
    const taken = await store.get(key(2));
    await store.admit([{ key: key(2), kind: 'navigation', referrer: key(9) }], ['known']);
    expect(taken?.referrers).toEqual([key(9)]);
    if (taken) {
      taken.state = 'failed';
      taken.error = { message: 'HTTP 500', status: 500 };
      await store.put(taken);
    }
    expect(await store.get(key(2))).toMatchObject({ state: 'failed', referrers: [key(9)], error: { message: 'HTTP 500', status: 500 } });
    // a record put without referrers notes no more
    const done = await store.get(key(1));
    if (done) {
      done.state = 'done';
      done.referrers = undefined;
      await store.put(done);
    }
    await store.admit([{ key: key(1), kind: 'navigation', referrer: key(200) }], ['known']);
    expect((await store.get(key(1)))?.referrers).toBeUndefined();
  });

  it('keeps a referrer seen for the first time just as the slots grow', async () => {
    const store = new MemoryRecordStore();
    const filler = Array.from({ length: 1023 }, (_, i) => ({ key: key(i), kind: /** @type {const} */ ('navigation'), referrer: null }));
    await store.admit(filler, filler.map(() => 'added'));
    // slot 1023 for the new key, 1024 (past the first capacity) for its referrer
    await store.admit([{ key: key(5000), kind: 'navigation', referrer: 'http://elsewhere.test/' }], ['added']);
    expect((await store.get(key(5000)))?.referrers).toEqual(['http://elsewhere.test/']);
    const record = await store.get(key(0));
    if (record) {
      record.state = 'failed';
      record.referrers = Array.from({ length: 5 }, (_, i) => `http://new.test/${i}`);
      await store.put(record);
    }
    expect((await store.get(key(0)))?.referrers).toEqual(Array.from({ length: 5 }, (_, i) => `http://new.test/${i}`));
  });

  it('lists records and keys by state, the taken ones as they are now', async () => {
    const store = new MemoryRecordStore();
    const items = Array.from({ length: 10 }, (_, i) => ({ key: key(i), kind: /** @type {const} */ ('navigation'), referrer: null }));
    await store.admit(items, items.map(() => 'added'));
    for (let i = 0; i < 10; i += 2) {
      const record = await store.get(key(i));
      if (!record) continue;
      record.state = i === 4 ? 'redirect' : 'done';
      record.location = i === 4 ? key(5) : undefined;
      if (i !== 8) await store.put(record); // 8 is done but not put yet
    }
    expect((await store.keys('done')).sort()).toEqual([0, 2, 6, 8].map(key).sort());
    expect((await store.list('redirect')).map((record) => [record.key, record.location])).toEqual([[key(4), key(5)]]);
    // several states in one pass (the manifest's errors: failed and gone), the taken one as it is now
    const taken = /** @type {import('../../lib/store/records.js').PageRecord} */ (await store.get(key(8)));
    taken.state = 'gone';
    expect((await store.list(['redirect', 'gone'])).map((record) => record.key).sort()).toEqual([key(4), key(8)].sort());
    expect((await store.keys('queued')).length).toBe(5);
    expect(await store.get('http://unknown.test/')).toBeUndefined();
  });
});

describe('StoredPages', () => {
  it('gives back each page as it was set, by URL and in order', () => {
    const pages = new StoredPages();
    /** @type {import('../../lib/recrawl/state.js').StoredPage[]} */
    const list = [
      { url: 'http://a.test/1', state: 'done', status: 200, contentType: 'text/html', type: 'html', file: 'a/1.html', body: HEX, scan: HEX2, bytes: 10, sha256: HEX, placeholders: [{ sku: 'X', offset: 3, length: 4 }] },
      { url: 'http://a.test/2', state: 'redirect', status: 301, location: 'http://a.test/1' },
    ];
    for (const page of list) pages.set(page.url, page);
    expect(pages.size).toBe(2);
    expect(pages.get('http://a.test/1')).toEqual(list[0]);
    expect(pages.get('http://a.test/2')).toEqual(list[1]);
    expect(pages.has('http://a.test/3')).toBe(false);
    expect(pages.get('http://a.test/3')).toBeUndefined();
    expect([...pages.values()]).toEqual(list);
    expect(pages.pick('http://a.test/3', ['file'])).toBeUndefined();
    // (at least those fields: a page decoded a moment ago is handed out whole)
    expect(pages.pick('http://a.test/1', ['state', 'file', 'placeholders'])).toMatchObject({ url: 'http://a.test/1', state: 'done', file: 'a/1.html', placeholders: list[0].placeholders });
    expect(new StoredPages().set(list[0].url, list[0]).pick(list[0].url, ['file', 'status'])).toEqual({ url: list[0].url, file: 'a/1.html', status: 200 });
    expect([...pages.picks(['state', 'location'])]).toEqual([
      { url: 'http://a.test/1', state: 'done' }, { url: 'http://a.test/2', state: 'redirect', location: 'http://a.test/1' },
    ]);
    // set again: the new value, not the one decoded before
    pages.set('http://a.test/2', { ...list[1], status: 308 });
    expect(pages.get('http://a.test/2')?.status).toBe(308);
    expect(pages.size).toBe(2);
  });
});

describe('BlobIndex', () => {
  const id = (/** @type {number} */ i) => createHash('sha256').update(String(i)).digest('hex');

  it('finds, updates, deletes and lists ids, past several growths', () => {
    const index = new BlobIndex();
    for (let i = 0; i < 5000; i++) index.set(id(i), { at: i * 100, length: i });
    expect(index.size).toBe(5000);
    expect(index.get(id(4321))).toEqual({ at: 432100, length: 4321 });
    expect(index.has(id(5000))).toBe(false);
    expect(index.get('not an id')).toBeUndefined();
    index.set(id(7), { at: 1, length: 2 });
    expect(index.get(id(7))).toEqual({ at: 1, length: 2 });
    expect(index.size).toBe(5000);
    expect(index.delete(id(8))).toBe(true);
    expect(index.delete(id(8))).toBe(false);
    expect(index.has(id(8))).toBe(false);
    expect(index.size).toBe(4999);
    index.set(id(8), { at: 9, length: 9 });
    expect(index.get(id(8))).toEqual({ at: 9, length: 9 });
    const listed = new Map([...index]);
    expect(listed.size).toBe(5000);
    expect(listed.get(id(123))).toEqual({ at: 12300, length: 123 });
    // marks for a compaction: known ids once each
    expect(index.mark(id(1))).toBe(true);
    expect(index.mark(id(1))).toBe(false);
    expect(index.mark(id(9999))).toBe(false);
    index.mark(id(2));
    expect([...index.marked()].map(([blob]) => blob).sort()).toEqual([id(1), id(2)].sort());
    index.clearMarks();
    expect([...index.marked()]).toEqual([]);
    index.clear();
    expect(index.size).toBe(0);
    expect(index.has(id(1))).toBe(false);
    expect(() => index.set('xyz', { at: 0, length: 0 })).toThrow(/not a blob id/);
    // room made at once for an index read back whole
    const reserved = new BlobIndex();
    reserved.reserve(20_000);
    for (let i = 0; i < 20_000; i++) reserved.set(id(i), { at: i, length: 1 });
    expect(reserved.get(id(19_999))).toEqual({ at: 19_999, length: 1 });
    expect(reserved.size).toBe(20_000);
  });

  it('takes ids as their 32 bytes too, and hands them back as bytes; only lower-case hex finds one', () => {
    const index = new BlobIndex();
    const raw = Buffer.concat([Buffer.from('ff', 'hex'), Buffer.from(id(1), 'hex')]);
    index.setBytes(raw, 1, { at: 5, length: 6 });
    index.set(id(2), { at: 7, length: 8 });
    index.delete(id(2));
    index.set(id(3), { at: 9, length: 10 });
    expect(index.get(id(1))).toEqual({ at: 5, length: 6 });
    expect(index.has(id(1).toUpperCase())).toBe(false);
    expect(index.has(`${id(1).slice(0, 63)}g`)).toBe(false);
    const back = [...index.entries()].map(([entry, place]) => {
      const bytes = Buffer.alloc(33);
      index.copyId(entry, bytes, 1);
      return [bytes.toString('hex', 1), place];
    });
    expect(back).toEqual([[id(1), { at: 5, length: 6 }], [id(3), { at: 9, length: 10 }]]);
  });
});

describe('one arena for the records and the last run\'s pages', () => {
  it('keeps each URL once; each side sees only its own values', async () => {
    const arena = new Arena(2);
    const prior = new StoredPages(arena, 1);
    const records = new MemoryRecordStore(arena, 0);
    const url = 'http://shop.test/p?id=1';
    prior.set(url, { url, state: 'done', status: 200, file: 'p1.htm', body: HEX });
    prior.set('http://shop.test/gone', { url: 'http://shop.test/gone', state: 'done', status: 200, file: 'gone.htm' });
    expect(await records.get(url)).toBeUndefined();
    expect(await records.keys('queued')).toEqual([]);
    // the frontier's key is the arena's string: the one the last run's pages put there
    const key = arena.own(`${url}?`.slice(0, -1));
    expect(key).toBe(arena.keys[/** @type {number} */ (arena.slotOf(url))]);
    expect(arena.keys.filter((known) => known === url)).toHaveLength(1);
    await records.admit([{ key, kind: 'navigation', referrer: null }], ['added']);
    const record = await records.get(url);
    if (record) {
      Object.assign(record, { state: 'done', status: 304, file: 'p1.htm', wanted: 'p1.htm', body: HEX2 });
      await records.put(record);
    }
    expect(prior.get(url)).toMatchObject({ status: 200, body: HEX });
    expect(await records.get(url)).toMatchObject({ status: 304, body: HEX2 });
    expect(prior.size).toBe(2);
    expect([...prior.values()].map((page) => page.url)).toEqual([url, 'http://shop.test/gone']);
    expect(await records.keys('done')).toEqual([url]);
    expect(arena.keys.length).toBe(2);
  });
});
