// @ts-check
/** The capacity command's option values; a bad one is a UsageError that says what is expected. */
import { lookup } from 'node:dns/promises';
import net from 'node:net';
import { UsageError } from '../errors.js';

/** @type {Record<string, number>} */ const UNIT_MS = { ms: 1, s: 1000, m: 60_000, min: 60_000 };

/** "10s", "500ms", "1.5m", "2min"; a bare number is seconds. @param {string} text @param {string} flag @returns {number} milliseconds */
export function parseDuration(text, flag) {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min)?\s*$/i.exec(String(text));
  if (!m) throw new UsageError(`${flag} must be a duration such as 10s, 500ms or 2m, got ${JSON.stringify(text)}`);
  const ms = Number(m[1]) * UNIT_MS[(m[2] ?? 's').toLowerCase()];
  if (!(ms > 0)) throw new UsageError(`${flag} must be more than 0, got ${JSON.stringify(text)}`);
  return ms;
}

/** "10,20,40,80": whole numbers of shoppers, rising. @param {string} text */
export function parseSteps(text) {
  const parts = String(text).split(',').map((part) => part.trim());
  const steps = parts.map(Number);
  if (parts.length === 0 || parts.some((part) => !/^\d+$/.test(part)) || steps.some((n) => n < 1)) {
    throw new UsageError(`--steps must be whole numbers of shoppers separated by commas, such as 10,20,40,80, got ${JSON.stringify(text)}`);
  }
  for (let i = 1; i < steps.length; i++) {
    if (steps[i] <= steps[i - 1]) throw new UsageError(`--steps must rise from step to step, got ${JSON.stringify(text)}`);
  }
  return steps;
}

export const TARGET_PERCENTILES = [50, 75, 90, 95, 99];

/** "p95=500ms", or "p99=800" in milliseconds. @param {string} text @returns {import('./tca.js').LatencyTarget} */
export function parseLatencyTarget(text) {
  const m = /^\s*p(\d+)\s*=\s*(.+)$/i.exec(String(text));
  const percentile = m ? Number(m[1]) : NaN;
  if (!m || !TARGET_PERCENTILES.includes(percentile)) {
    throw new UsageError(`--latency-target must be a percentile and a duration, such as p95=500ms (percentiles: ${TARGET_PERCENTILES.map((p) => `p${p}`).join(', ')}), got ${JSON.stringify(text)}`);
  }
  const ms = /^\s*\d+(?:\.\d+)?\s*$/.test(m[2]) ? Number(m[2]) : parseDuration(m[2], '--latency-target');
  if (!(ms > 0)) throw new UsageError(`--latency-target must be more than 0 ms, got ${JSON.stringify(text)}`);
  return { percentile, ms };
}

/** @param {string | number} text @param {string} flag @param {number} [min] */
export function parseWhole(text, flag, min = 1) {
  const value = /^\s*\d+\s*$/.test(String(text)) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value < min) throw new UsageError(`${flag} must be a whole number of at least ${min}, got ${JSON.stringify(text)}`);
  return value;
}

/** A clock in MHz may have decimals. @param {string | number} text @param {string} flag */
export function parsePositive(text, flag) {
  const value = /^\s*\d+(?:\.\d+)?\s*$/.test(String(text)) ? Number(text) : NaN;
  if (!(value > 0)) throw new UsageError(`${flag} must be a number greater than 0, got ${JSON.stringify(text)}`);
  return value;
}

/** An http URL's origin, checked: a capacity run sends load to it. @param {string} text @param {string} flag */
export function parseServerUrl(text, flag) {
  let url;
  try {
    url = new URL(String(text));
  } catch {
    throw new UsageError(`${flag} must be an absolute http:// or https:// URL, got ${JSON.stringify(text)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`${flag} must be an http:// or https:// URL, got ${JSON.stringify(text)}`);
  if (url.username || url.password) throw new UsageError(`${flag} must not carry a user name or password`);
  return url.origin;
}

/** @param {string} address */
function isLoopbackAddress(address) {
  if (net.isIPv4(address)) return address.startsWith('127.');
  const lower = address.toLowerCase();
  return lower === '::1' || lower.startsWith('::ffff:127.');
}

/** A name that resolves elsewhere, or not at all, is not loopback. @param {string} origin */
export async function isLoopback(origin) {
  const host = new URL(origin).hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host)) return isLoopbackAddress(host);
  try {
    const addresses = await lookup(host, { all: true });
    return addresses.length > 0 && addresses.every((a) => isLoopbackAddress(a.address));
  } catch {
    return false;
  }
}
