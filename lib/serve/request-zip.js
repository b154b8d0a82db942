// @ts-check
/** The visitor's zip: the query parameter, then the cookie; an implausible value counts as absent. */
import { normalizeZip } from '../prices/zip.js';

/** @param {string} cookieHeader @param {string} name @returns {string | null} */
export function readCookie(cookieHeader, name) {
  let from = 0;
  while (from < cookieHeader.length) {
    let semi = cookieHeader.indexOf(';', from);
    if (semi === -1) semi = cookieHeader.length;
    const eq = cookieHeader.indexOf('=', from);
    if (eq !== -1 && eq < semi && cookieHeader.slice(from, eq).trim() === name) {
      let value = cookieHeader.slice(eq + 1, semi).trim();
      if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
      if (value.includes('%')) {
        try {
          value = decodeURIComponent(value);
        } catch {
          return null;
        }
      }
      return value;
    }
    from = semi + 1;
  }
  return null;
}

/** @param {string | undefined} url @param {string | undefined} cookieHeader @param {{ zipParam: string, zipCookie: string }} names @returns {string | null} normalised */
export function zipFromRequest(url, cookieHeader, names) {
  if (url !== undefined) {
    const q = url.indexOf('?');
    if (q !== -1) {
      const value = new URLSearchParams(url.slice(q + 1)).get(names.zipParam);
      const zip = value === null ? null : normalizeZip(value);
      if (zip !== null) return zip;
    }
  }
  if (cookieHeader) {
    const value = readCookie(cookieHeader, names.zipCookie);
    const zip = value === null ? null : normalizeZip(value);
    if (zip !== null) return zip;
  }
  return null;
}
