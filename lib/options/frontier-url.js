// @ts-check
/** The --frontier URL (or REDIS_URL): checked and shown only here. Loaded with the option table, so no ioredis import. */

/** ioredis takes `?password=…` as an option. */
const SECRET_QUERY = /([?&][^=&#]*pass[^=&#]*=)[^&#]*/gi;

/** Security: passwords masked for messages; text that is no valid URL is masked generously. @param {string} url */
export function redactUrl(url) {
  const text = String(url);
  try {
    const parsed = new URL(text);
    if (parsed.password) parsed.password = '***';
    if (parsed.search) parsed.search = parsed.search.replace(SECRET_QUERY, '$1***');
    return parsed.href.replace(/\/$/, '');
  } catch {
    const start = text.indexOf('//') + 2;
    let shown = text;
    const at = text.lastIndexOf('@');
    if (start >= 2 && at > start) {
      const colon = text.indexOf(':', start);
      if (colon !== -1 && colon < at) shown = `${text.slice(0, colon + 1)}***${text.slice(at)}`;
    }
    return shown.replace(SECRET_QUERY, '$1***');
  }
}

/** A config may give a list by mistake. @param {unknown} value @returns {unknown} */
export function redactValue(value) {
  if (typeof value === 'string') return redactUrl(value);
  if (Array.isArray(value)) return value.map(redactValue);
  if (value && typeof value === 'object') return '(an object)';
  return value;
}

/** As the end of "--frontier must be …", or null. @param {string} url @returns {string | null} */
export function frontierUrlProblem(url) {
  if (!/^rediss?:\/\//.test(url)) return 'a redis:// or rediss:// URL';
  /** @type {URL} */ let parsed;
  try {
    parsed = new URL(url);
  } catch {
    return 'a redis:// or rediss:// URL with a valid host and a numeric port (redis://[user:pass@]host:port/db)';
  }
  if (parsed.port !== '' && Number(parsed.port) === 0) return 'a redis:// or rediss:// URL with a port from 1 to 65535';
  const db = parsed.pathname === '' || parsed.pathname === '/' ? parsed.searchParams.get('db') : parsed.pathname.slice(1);
  if (db !== null && !/^\d{1,9}$/.test(db)) {
    return 'a redis:// or rediss:// URL whose database (the path, as in redis://host:6379/0) is a whole number from 0';
  }
  return null;
}

/** 0 when it names none. @param {string} url */
export function frontierDb(url) {
  const parsed = new URL(url);
  const db = parsed.pathname === '' || parsed.pathname === '/' ? parsed.searchParams.get('db') : parsed.pathname.slice(1);
  return db === null ? 0 : Number(db);
}

/** @param {string} url @param {string} [key] how the option is named */
export function frontierUrlError(url, key = '--frontier') {
  const problem = frontierUrlProblem(url);
  return problem ? `${key} must be ${problem}, got ${JSON.stringify(redactUrl(url))}` : null;
}
