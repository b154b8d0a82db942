// @ts-check

/**
 * Module resolution hooks (registered by no-puppeteer.js): puppeteer-core is not found.
 * @param {string} specifier
 * @param {unknown} context
 * @param {(specifier: string, context: unknown) => unknown} next
 */
export async function resolve(specifier, context, next) {
  if (specifier === 'puppeteer-core' || specifier.startsWith('puppeteer-core/')) {
    throw Object.assign(new Error(`Cannot find package '${specifier}'`), { code: 'ERR_MODULE_NOT_FOUND' });
  }
  return next(specifier, context);
}
