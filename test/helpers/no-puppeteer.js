// @ts-check
import { register } from 'node:module';

/**
 * `node --import ./test/helpers/no-puppeteer.js`: a process in which
 * puppeteer-core cannot be found, as after a crawl-only `npm install`.
 */
register(new URL('./no-puppeteer-hooks.js', import.meta.url));
