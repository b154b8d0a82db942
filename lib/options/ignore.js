// @ts-check
/**
 * One expression over a page's latin1 bytes: a non-ASCII character matches as written or as its UTF-8 bytes,
 * except inside a class or with backreferences or named groups. @param {string[]} patterns @returns {RegExp | null}
 */
export function ignoreRegExp(patterns) {
  if (patterns.length === 0) return null;
  const sources = patterns.flatMap((source) => {
    const utf8 = utf8Spelling(source);
    return utf8 === null ? [source] : [source, utf8];
  });
  return new RegExp(sources.map((source) => `(?:${source})`).join('|'), 'g');
}

/** One group per character, for quantifiers. @param {string} source @returns {string | null} */
function utf8Spelling(source) {
  if (!/[^\x00-\x7f]/.test(source)) return null;
  if (/\\[1-9k]|\(\?</.test(source.replace(/\(\?<[=!]/g, ''))) return null; // backreferences, named groups
  let out = '';
  let inClass = false;
  const chars = [...source];
  for (let i = 0; i < chars.length; i++) {
    const char = chars[i];
    if (char === '\\') {
      out += char + (chars[++i] ?? '');
      continue;
    }
    if (char === '[' && !inClass) inClass = true;
    else if (char === ']' && inClass) inClass = false;
    if ((char.codePointAt(0) ?? 0) < 0x80) {
      out += char;
      continue;
    }
    if (inClass) return null;
    out += `(?:${[...Buffer.from(char, 'utf8')].map((byte) => `\\x${byte.toString(16).padStart(2, '0')}`).join('')})`;
  }
  try {
    new RegExp(out, 'g');
    return out;
  } catch {
    return null;
  }
}
