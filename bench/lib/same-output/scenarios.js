// @ts-check
/**
 * The crawls bench/same-output.js runs on both sides, each against one
 * origin both sides share (same port, so the same URLs in every file). Sides
 * run one after the other, A then B, at each step. A scenario returns the
 * pairs of snapshots to compare; it throws when a crawl did not do what the
 * scenario needs (a wrong exit code, a re-crawl that changed nothing).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { startShop } from '../../../fixtures/shop.js';
import { startSpaShop } from '../../../fixtures/spa-shop.js';
import { startRedis } from '../../../test/helpers/redis.js';
import { createHandler, isChangedProduct, startOrigin } from '../../origin.js';
import { startSwitchableOrigin } from './gate.js';
import { check, run, start } from './run.js';
import { snapshot } from './snapshot.js';

/**
 * @typedef {import('./run.js').Side} Side
 * @typedef {import('./snapshot.js').Snapshot} Snapshot
 * @typedef {{ sides: Side[], dir: string, log: (line: string) => void }} Context
 * @typedef {{ label: string, left: string, right: string, a: Snapshot, b: Snapshot, items?: readonly string[] }} Comparison
 *   left, right: what the two columns hold ("A", "B", "B single"...)
 */

/** The worked example's scope (README, "Worked example"). */
const SHOP_SCOPE = ['-i', '/st/dir.asp', '/st/product.asp'];
const CHROMIUM = '/usr/bin/chromium';

/**
 * A working directory and an OUT for one crawl of one side.
 * @param {Context} ctx
 * @param {string} name
 * @param {Side} side
 */
async function place(ctx, name, side) {
  const cwd = path.join(ctx.dir, `${name}-${side.name}`);
  await mkdir(cwd, { recursive: true });
  return { cwd, out: path.join(cwd, 'out') };
}

/**
 * Crawls with --json into the side's OUT for `name`, checks the exit code, snapshots OUT.
 * @param {Context} ctx
 * @param {string} name
 * @param {Side} side
 * @param {string[]} args crawl arguments but -o and --json
 * @param {number} [expect]
 */
async function crawl(ctx, name, side, args, expect = 0) {
  const { cwd, out } = await place(ctx, name, side);
  const ran = await run(side, ['crawl', ...args, '-o', out, '--json'], { cwd, expect });
  return { out, ran, snap: await snapshot(out, ran.stdout) };
}

/**
 * Both sides, A then B.
 * @template T
 * @param {Context} ctx
 * @param {(side: Side) => Promise<T>} step
 */
async function eachSide(ctx, step) {
  /** @type {T[]} */
  const results = [];
  for (const side of ctx.sides) results.push(await step(side));
  return results;
}

/**
 * @param {string} label
 * @param {{ snap: Snapshot }[]} pair side A's, then side B's
 * @returns {Comparison}
 */
const sideBySide = (label, [a, b]) => ({ label, left: 'A', right: 'B', a: a.snap, b: b.snap });

/**
 * A field of a --json summary.
 * @param {import('./run.js').Ran} ran
 * @param {string} name
 */
const summary = (ran, name) => JSON.parse(ran.stdout)[name];

/**
 * 1. A first crawl of fixtures/shop.js (header naming in both spellings,
 * price slots), with the worked example's command; past 64 pages, so worker
 * threads start.
 * @param {Context} ctx
 */
export async function first(ctx) {
  const shop = await startShop({ products: 150, count: 25 });
  try {
    const runs = await eachSide(ctx, (side) => crawl(ctx, 'first', side, [shop.url, ...SHOP_SCOPE]));
    return [sideBySide('first', runs)];
  } finally {
    await shop.close();
  }
}

/**
 * 2. A first crawl of bench/origin.js's shop, then 10 % of its products
 * change (its --changed 10) and the same command runs into the same OUT.
 * Without validators (unchanged pages found by their bytes), and with ETags
 * (unchanged pages answer 304).
 * @param {Context} ctx
 */
export async function recrawl(ctx) {
  /** @type {Comparison[]} */
  const comparisons = [];
  for (const etag of [false, true]) {
    const name = etag ? 'recrawl-304' : 'recrawl';
    const shape = { products: 200, count: 50, etag };
    const origin = await startSwitchableOrigin(createHandler({ ...shape, changed: 0 }));
    try {
      const args = [`${origin.origin}/st/dir.asp`, ...SHOP_SCOPE];
      await eachSide(ctx, (side) => crawl(ctx, name, side, args));
      origin.swap(createHandler({ ...shape, changed: 10 }));
      const runs = await eachSide(ctx, (side) => crawl(ctx, name, side, args));
      for (const [i, { ran }] of runs.entries()) {
        const churn = summary(ran, 'churn');
        if (!(churn.changed > 0) || churn.new !== 0) throw new Error(`${name}: side ${ctx.sides[i].name}'s re-crawl is no 10 % re-crawl: churn ${JSON.stringify(churn)}`);
        ctx.log(`${name} ${ctx.sides[i].name}: churn ${JSON.stringify(churn)}`);
      }
      comparisons.push(sideBySide(name, runs));
    } finally {
      await origin.close();
    }
  }
  return comparisons;
}

/**
 * 3. A crawl interrupted with SIGINT (exit 130) when the origin holds its
 * 51st request (-c 1: the same 50 pages fetched every time), then the same
 * command with --resume. Compares the interrupted OUT and the final one.
 * @param {Context} ctx
 */
export async function resume(ctx) {
  const origin = await startSwitchableOrigin(createHandler({ products: 120, count: 40 }));
  try {
    const args = [`${origin.origin}/st/dir.asp`, ...SHOP_SCOPE, '-c', '1'];
    const stopped = await eachSide(ctx, async (side) => {
      const { cwd, out } = await place(ctx, 'resume', side);
      const started = start(side, ['crawl', ...args, '-o', out, '--json'], { cwd });
      let signalled = false; // a second SIGINT would be a forced stop
      origin.arm(50, () => { if (!signalled) signalled = started.child.kill('SIGINT'); });
      const ran = check(side, await started.done, 130).stdout;
      origin.disarm();
      return { snap: await snapshot(out, ran) };
    });
    const resumed = await eachSide(ctx, (side) => crawl(ctx, 'resume', side, [...args, '--resume']));
    for (const [i, { ran }] of resumed.entries()) {
      if (!(summary(ran, 'resumed') > 0)) throw new Error(`resume: side ${ctx.sides[i].name}'s second run resumed nothing`);
      ctx.log(`resume ${ctx.sides[i].name}: resumed ${summary(ran, 'resumed')} of ${summary(ran, 'pages')} pages`);
    }
    return [sideBySide('resume: interrupted', stopped), sideBySide('resume: resumed', resumed)];
  } finally {
    await origin.close();
  }
}

/**
 * 4. --render of fixtures/spa-shop.js (every page built by its script). It
 * waits for networkidle (the default): with selector:[data-ready], whether a
 * product's image was asked for (and aborted) before the DOM was taken
 * depends on timing, and the manifest counts it.
 * @param {Context} ctx
 */
export async function render(ctx) {
  const shop = await startSpaShop({ products: 12, count: 5 });
  try {
    const args = [shop.url, ...SHOP_SCOPE, '--render', '--browser', CHROMIUM];
    const runs = await eachSide(ctx, (side) => crawl(ctx, 'render', side, args));
    return [sideBySide('render', runs)];
  } finally {
    await shop.close();
  }
}

/**
 * 5. A crawl shared through a real redis-server: `crawl --frontier` (the
 * coordinator) and one `prerender worker`, against an origin slow enough
 * (40 ms a page) that both fetch. Also a single-process crawl of each side:
 * the shared crawl must write what one process writes, but for its blob
 * store (a directory, not blobs.log and blobs.idx).
 * @param {Context} ctx
 */
export async function shared(ctx) {
  const redis = await startRedis();
  const server = await startOrigin({ products: 120, count: 20, port: 0, host: '127.0.0.1', latencyMs: 40 });
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
  try {
    const args = [`http://127.0.0.1:${port}/st/dir.asp`, ...SHOP_SCOPE, '-c', '2'];
    const single = await eachSide(ctx, (side) => crawl(ctx, 'single', side, args));
    const coordinated = await eachSide(ctx, async (side) => {
      const id = `same-output-${side.name}-${process.pid}`;
      const { cwd } = await place(ctx, 'shared-worker', side);
      const worker = start(side, ['worker', '--frontier', redis.url, '--crawl-id', id, '-c', '2'], { cwd });
      const coordinator = crawl(ctx, 'shared', side, [...args, '--frontier', redis.url, '--crawl-id', id, '--lease-timeout', '5000']);
      const [result, helped] = await Promise.allSettled([coordinator, worker.done]);
      if (result.status === 'rejected') {
        worker.child.kill('SIGKILL');
        throw result.reason;
      }
      if (helped.status === 'rejected') throw helped.reason;
      const said = check(side, helped.value, 0).stdout.trim();
      ctx.log(`shared ${side.name}: ${said}`);
      // Which process fetches what is timing; a worker that fetched nothing did not share the crawl.
      if (!(Number(/^worker: (\d+) pages fetched/.exec(said)?.[1]) > 0)) throw new Error(`shared: side ${side.name}'s worker fetched nothing (${said}); run again`);
      return result.value;
    });
    /** @type {(i: number) => Comparison} */
    const sameAsSingle = (i) => ({
      label: 'shared = single', left: `${ctx.sides[i].name} single`, right: `${ctx.sides[i].name} shared`,
      a: single[i].snap, b: coordinated[i].snap, items: ['tree', 'manifest', 'state', 'json'],
    });
    return [sideBySide('shared', coordinated), sideBySide('single', single), sameAsSingle(0), sameAsSingle(1)];
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await redis.stop();
  }
}

/**
 * 6. Pages carried without a request (issue 42): a first crawl of bench/origin.js's
 * shop, 10 % of its products change, then `--fresh /st/product.asp forever`
 * (only the roots are asked for), then `--changed LIST --with-referrers`
 * naming the changed products, into the same OUT. The names of the other
 * .prerender/ files are not compared: follow.bin is new in some checkouts.
 * @param {Context} ctx
 */
export async function carried(ctx) {
  const shape = { products: 200, count: 50 };
  const origin = await startSwitchableOrigin(createHandler({ ...shape, changed: 0 }));
  try {
    const args = [`${origin.origin}/st/dir.asp`, ...SHOP_SCOPE];
    await eachSide(ctx, (side) => crawl(ctx, 'carried', side, args));
    origin.swap(createHandler({ ...shape, changed: 10 }));
    const fresh = await eachSide(ctx, (side) => crawl(ctx, 'carried', side, [...args, '--fresh', '/st/product.asp', 'forever']));
    const list = path.join(ctx.dir, 'changed.txt');
    const changed = [];
    for (let n = 1; n <= shape.products; n++) if (isChangedProduct(n, 10)) changed.push(`${origin.origin}/st/product.asp?SKUSetID=${n}`);
    await writeFile(list, changed.join('\n') + '\n');
    const listed = await eachSide(ctx, (side) => crawl(ctx, 'carried', side, [...args, '--changed', list, '--with-referrers']));
    for (const [i, { ran }] of listed.entries()) {
      const churn = summary(ran, 'churn');
      if (!(churn.changed > 0)) throw new Error(`carried: side ${ctx.sides[i].name}'s --changed run changed nothing: churn ${JSON.stringify(churn)}`);
      ctx.log(`carried ${ctx.sides[i].name}: fresh carried ${JSON.stringify(summary(fresh[i].ran, 'carried'))}; --changed churn ${JSON.stringify(churn)}`);
    }
    const items = /** @type {const} */ (['tree', 'manifest', 'state', 'json']);
    return [{ ...sideBySide('carried: --fresh', fresh), items }, { ...sideBySide('carried: --changed', listed), items }];
  } finally {
    await origin.close();
  }
}

export const SCENARIOS = { first, recrawl, resume, render, shared, carried };
