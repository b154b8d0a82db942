// @ts-check
/** Public surface of the runtime price filter. */
export { createPriceFilter } from './filter.js';
export { createServer, runServeCommand, listenOn, listenError } from './server.js';
export { SERVE_DEFAULTS } from './options.js';
