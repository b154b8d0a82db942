// @ts-check
/** Price file parsers: rows for buildTable(); malformed input throws an Error giving line or position. */

/** JSON: `{ "SKU": { "ZIP": "price text", "*": "default text" } }`. @param {string} text */
export function parsePriceJson(text) {
  const data = parseJsonNumbersAsText(stripBom(text));
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new Error('expected an object { "SKU": { "ZIP": "price", "*": "default" } } at the top level');
  }
  /** @type {{ sku: unknown, zip: unknown, price: unknown, where: string }[]} */ const rows = [];
  for (const [sku, byZip] of Object.entries(data)) {
    if (byZip === null || typeof byZip !== 'object' || Array.isArray(byZip)) {
      throw new Error(`SKU ${JSON.stringify(sku)}: expected an object of zip -> price text`);
    }
    for (const [zip, price] of Object.entries(byZip)) {
      rows.push({ sku, zip, price, where: `SKU ${JSON.stringify(sku)} zip ${JSON.stringify(zip)}` });
    }
  }
  return rows;
}

/** CSV: `sku,zip,price` lines (RFC 4180 quoting, optional header, `*` zip for the default, CRLF or LF). @param {string} text */
export function parsePriceCsv(text) {
  const records = parseCsv(stripBom(text));
  /** @type {{ sku: unknown, zip: unknown, price: unknown, where: string }[]} */ const rows = [];
  for (const { fields, line } of records) {
    if (fields.length === 1 && fields[0].trim() === '') continue; // blank line
    if (rows.length === 0 && line === 1 && fields.map((f) => f.trim().toLowerCase()).join(',') === 'sku,zip,price') continue;
    if (fields.length !== 3) {
      throw new Error(`line ${line}: expected 3 fields (sku,zip,price), found ${fields.length}`);
    }
    rows.push({ sku: fields[0].trim(), zip: fields[1].trim(), price: fields[2], where: `line ${line}` });
  }
  return rows;
}

/** @param {string} text @returns {{ fields: string[], line: number }[]} */
export function parseCsv(text) {
  /** @type {{ fields: string[], line: number }[]} */ const records = [];
  let fields = [];
  let field = '';
  let line = 1;
  let recordLine = 1;
  let i = 0;
  let quoted = false;
  let wasQuoted = false;
  while (i < text.length) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') { field += '"'; i += 2; continue; }
        quoted = false; i++; continue;
      }
      if (c === '\n') line++;
      field += c; i++; continue;
    }
    if (c === '"') {
      if (field.trim() !== '' || wasQuoted) throw new Error(`line ${line}: stray quote inside an unquoted field`);
      field = ''; quoted = true; wasQuoted = true; i++; continue;
    }
    if (c === ',') { fields.push(field); field = ''; wasQuoted = false; i++; continue; }
    if (c === '\r' && text[i + 1] === '\n') { i++; continue; }
    if (c === '\n') {
      fields.push(field); records.push({ fields, line: recordLine });
      fields = []; field = ''; wasQuoted = false; line++; recordLine = line; i++; continue;
    }
    if (wasQuoted && c.trim() !== '') throw new Error(`line ${line}: text after a closing quote`);
    field += c; i++;
  }
  if (quoted) throw new Error(`line ${recordLine}: unterminated quoted field`);
  if (field !== '' || fields.length > 0) { fields.push(field); records.push({ fields, line: recordLine }); }
  return records;
}

const JSON_NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** Numbers come back as written: prices are text to show ("12.50" stays so), never numbers to compute. @param {string} text @returns {any} */
export function parseJsonNumbersAsText(text) {
  const data = JSON.parse(text);
  return hasNumber(data) ? JSON.parse(quoteNumbers(text)) : data;
}

/** @param {unknown} value */
function hasNumber(value) {
  if (typeof value === 'number') return true;
  if (value === null || typeof value !== 'object') return false;
  for (const key in value) if (hasNumber(/** @type {Record<string, unknown>} */ (value)[key])) return true;
  return false;
}

/** Valid JSON text with each number quoted: outside strings, a digit or `-` only starts a number. @param {string} text */
function quoteNumbers(text) {
  /** @type {string[]} */ const parts = [];
  let from = 0;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      // To the closing quote: the first quote not preceded by an odd run of backslashes.
      for (;;) {
        const quote = text.indexOf('"', i + 1);
        let backslashes = 0;
        while (text.charCodeAt(quote - 1 - backslashes) === 92 /* \\ */) backslashes++;
        i = quote + 1;
        if (backslashes % 2 === 0) break;
        i = quote;
      }
      continue;
    }
    if (c === 45 /* - */ || (c >= 48 && c <= 57)) {
      JSON_NUMBER.lastIndex = i;
      JSON_NUMBER.test(text);
      const end = JSON_NUMBER.lastIndex;
      parts.push(text.slice(from, i), '"', text.slice(i, end), '"');
      from = i = end;
      continue;
    }
    i++;
  }
  parts.push(text.slice(from));
  return parts.join('');
}

/** @param {string} text */
function stripBom(text) {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}
