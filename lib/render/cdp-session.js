// @ts-check
import { bounded } from './pool.js';
import { RenderError } from './render-errors.js';

/** Calls a render makes on its tab's DevTools session. @typedef {import('./tab.js').CDPSession} CDPSession */

/** A page's script that never yields leaves this long to answer a question about its state. */
const ASK_GRACE_MS = 1000;

/** Nobody awaits the answer: a failure means the page is gone, which the render learns otherwise. @param {CDPSession} session @param {string} method @param {Record<string, unknown>} [params] */
export function send(session, method, params) {
  session.send(/** @type {any} */ (method), /** @type {any} */ (params)).catch(() => {});
}

/** A function with one JSON argument, or an expression. @param {CDPSession} session @param {Function | string} code @param {unknown} [arg] @returns {Promise<any>} */
export async function evaluate(session, code, arg) {
  const expression = typeof code === 'string' ? code : `(${code})(${JSON.stringify(arg)})`;
  const answer = await session.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true });
  if (answer.exceptionDetails) {
    const text = answer.exceptionDetails.exception?.description ?? answer.exceptionDetails.text;
    throw new RenderError(`a script of the render failed in the page: ${text.split('\n')[0]}`);
  }
  return answer.result.value;
}

/** Null when the page's busy script does not answer in time. @param {CDPSession} session @param {string} expression @param {string} what for the bound's error */
export function askBriefly(session, expression, what) {
  return bounded(evaluate(session, expression), ASK_GRACE_MS, what).catch(() => null);
}

/** It ends with the page's document, when the tab's next navigation rejects it and nobody listens any more. @template T @param {Promise<T>} promise */
export function inPage(promise) {
  promise.catch(() => {});
  return promise;
}
