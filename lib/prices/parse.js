// @ts-check
/**
 * Parsers for price files. Both return rows for buildTable(); both throw a
 * plain Error with a line/position in the message on malformed input.
 */

/**
 * JSON: `{ "SKU": { "ZIP": "price text", "*": "default text" } }`.
 * @param {string} text
 */
export function parsePriceJson(text) {
  const data = JSON.parse(stripBom(text));
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new Error('expected an object { "SKU": { "ZIP": "price", "*": "default" } } at the top level');
  }
  /** @type {{ sku: unknown, zip: unknown, price: unknown, where: string }[]} */
  const rows = [];
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

/**
 * CSV: `sku,zip,price` per line (RFC 4180 quoting; an optional header line
 * `sku,zip,price`; `*` as the zip for the SKU's default; CRLF or LF).
 * @param {string} text
 */
export function parsePriceCsv(text) {
  const records = parseCsv(stripBom(text));
  /** @type {{ sku: unknown, zip: unknown, price: unknown, where: string }[]} */
  const rows = [];
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

/**
 * @param {string} text
 * @returns {{ fields: string[], line: number }[]}
 */
export function parseCsv(text) {
  /** @type {{ fields: string[], line: number }[]} */
  const records = [];
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

/** @param {string} text */
function stripBom(text) {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}
