// @ts-check
/** `prerender front OUT --nginx | --varnish`: the front's edge configuration, into OUT (where `deploy` ships it) or --output. */
import fs from 'node:fs';
import path from 'node:path';
import { UsageError } from '../errors.js';
import { readManifest } from '../output/manifest/index.js';
import { FRONT_DEFAULTS, normalizeFrontOptions } from './front-options.js';
import { FRONT_FILES } from './front-files.js';
import { nginxConfig } from './nginx.js';
import { RouteTable } from './route.js';
import { varnishConfig } from './varnish.js';

/**
 * @typedef {{ nginx?: boolean, varnish?: boolean, output?: string, origin?: string, originHost?: string, dynamic?: string[],
 *   trustProxy?: boolean, listen?: string, root?: string, tree?: string, priceCache?: string, priceEndpoint?: string,
 *   originTimeoutMs?: number, originConnectTimeoutMs?: number, originConnections?: number }} FrontCommandOptions
 */

/** No file written. @param {string} out @param {FrontCommandOptions} flags @returns {Promise<{ nginx?: string, varnish?: string, warnings: string[] }>} */
export async function frontConfigs(out, flags) {
  if (!flags.nginx && !flags.varnish) throw new UsageError('front: say which configuration to write: --nginx, --varnish, or both');
  if (!flags.origin) throw new UsageError('front: --origin is required: the live site, e.g. http://127.0.0.1:8000');
  /** @type {Record<string, any>} */
  const o = { ...FRONT_DEFAULTS, ...Object.fromEntries(Object.entries(flags).filter(([, v]) => v !== undefined)) };
  o.dynamic ??= [];
  o.trustProxy = Boolean(o.trustProxy);
  normalizeFrontOptions(o);
  let manifest;
  try {
    manifest = await readManifest(out);
  } catch (error) {
    throw new UsageError(`front: cannot read the tree's manifest: ${/** @type {Error} */ (error).message}; run prerender crawl first`, { cause: error });
  }
  const routes = RouteTable.fromManifest(manifest, { dynamic: o.dynamic });
  const edge = {
    origin: o.origin,
    originHost: o.originHost,
    listen: flags.listen ?? '8080',
    root: path.resolve(flags.root ?? out),
    trustProxy: o.trustProxy,
    connectTimeoutMs: o.originConnectTimeoutMs,
    timeoutMs: o.originTimeoutMs,
    connections: o.originConnections,
    placeholderMode: manifest.placeholderMode,
    priceCacheDir: flags.priceCache ?? '/var/cache/nginx/prerender-prices',
    priceEndpoint: flags.priceEndpoint ?? null,
    generatedFrom: `${path.basename(path.resolve(out))}/prerender-manifest.json of ${manifest.generatedAt}`,
  };
  if (edge.priceEndpoint !== null && !/^[\w.-]+:\d{1,5}$/.test(edge.priceEndpoint)) throw new UsageError(`front: --price-endpoint takes host:port, got ${JSON.stringify(edge.priceEndpoint)}`);
  if (!/^[\w.:[\]-]+$/.test(edge.listen)) throw new UsageError(`front: --listen takes a port or address:port, got ${JSON.stringify(edge.listen)}`);
  /** @type {string[]} */ const warnings = [...routes.warnings];
  /** @type {{ nginx?: string, varnish?: string, warnings: string[] }} */ const result = { warnings };
  if (flags.nginx) {
    const made = nginxConfig(routes, edge);
    result.nginx = made.text;
    warnings.push(...made.warnings);
  }
  if (flags.varnish) {
    const tree = flags.tree ?? '127.0.0.1:8081';
    if (!/^[\w.-]+:\d{1,5}$/.test(tree)) throw new UsageError(`front: --tree takes host:port (where prerender serve OUT --route-header listens), got ${JSON.stringify(tree)}`);
    const made = varnishConfig(routes, { ...edge, tree });
    result.varnish = made.text;
    warnings.push(...made.warnings);
  }
  return result;
}

/** @param {string} out @param {FrontCommandOptions} flags @param {{ stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream }} io */
export async function runFrontCommand(out, flags, io) {
  if (flags.output && flags.nginx && flags.varnish) throw new UsageError('front: --output names one file: give --nginx or --varnish with it, not both');
  const made = await frontConfigs(out, flags);
  for (const warning of made.warnings) io.stderr.write(`prerender front: ${warning}\n`);
  for (const [kind, text, name] of /** @type {const} */ ([['nginx', made.nginx, FRONT_FILES[0]], ['varnish', made.varnish, FRONT_FILES[1]]])) {
    if (text === undefined) continue;
    const file = path.resolve(flags.output ?? path.join(out, name));
    fs.writeFileSync(`${file}.tmp`, text);
    fs.renameSync(`${file}.tmp`, file);
    io.stdout.write(`${kind}: wrote ${file}\n`);
  }
}
