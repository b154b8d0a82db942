// @ts-check
/**
 * htmlparser2's Tokenizer and Parser alone. Its package entry also loads domhandler, domutils and dom-serializer, which
 * prerender never uses, and every start and page thread paid for them (BENCHMARKS.md, "Decisions"). The two files are found
 * beside the entry; if a later htmlparser2 moves them, the entry is loaded instead.
 * @typedef {typeof import('htmlparser2')} Htmlparser2
 */

/** @param {string} entry the package entry's URL @returns {Promise<Pick<Htmlparser2, 'Tokenizer' | 'QuoteType' | 'Parser'>>} */
export async function loadParser(entry) {
  try {
    const [tokenizer, parser] = await Promise.all([import(new URL('Tokenizer.js', entry).href), import(new URL('Parser.js', entry).href)]);
    if (typeof tokenizer.default === 'function' && typeof parser.Parser === 'function' && tokenizer.QuoteType) {
      return { Tokenizer: tokenizer.default, QuoteType: tokenizer.QuoteType, Parser: parser.Parser };
    }
  } catch {
    // moved: the entry below
  }
  return import('htmlparser2');
}

export const { Tokenizer, QuoteType, Parser } = await loadParser(import.meta.resolve('htmlparser2'));
