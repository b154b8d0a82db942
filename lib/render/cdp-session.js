// @ts-check
import { bounded } from './pool.js';
import { RenderError } from './render-errors.js';

/**
 * Calls a render makes on its tab's DevTools session.
 * @typedef {import('./tab.js').CDPSession} CDPSession
 */

/** A page's script that never yields leaves this long to answer a question about its state. */
const ASK_GRACE_MS = 1000;

/**
 * A command whose answer nobody awaits: a failure means the page is gone, which the render learns otherwise.
 * @param {CDPSession} session
 * @param {string} method
 * @param {Record<string, unknown>} [params]
 */
export function send(session, method, params) {
  session.send(/** @type {any} */ (method), /** @type {any} */ (params)).catch(() => {});
}

/**
 * Run a function (with one JSON argument) or an expression in the page, and return its value.
 * @param {CDPSession} session
 * @param {Function | string} code
 * @param {unknown} [arg]
 * @returns {Promise<any>}
 */
export async function evaluate(session, code, arg) {
  const expression = typeof code === 'string' ? code : `(${code})(${JSON.stringify(arg)})`;
  const answer = await session.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true });
  if (answer.exceptionDetails) {
    const text = answer.exceptionDetails.exception?.description ?? answer.exceptionDetails.text;
    throw new RenderError(`a script of the render failed in the page: ${text.split('\n')[0]}`);
  }
  return answer.result.value;
}

/**
 * An expression's value, or null when the page does not answer in time (its script is busy).
 * @param {CDPSession} session
 * @param {string} expression
 * @param {string} what the question, for the bound's error
 */
export function askBriefly(session, expression, what) {
  return bounded(evaluate(session, expression), ASK_GRACE_MS, what).catch(() => null);
}

/**
 * A wait running inside the page: it ends with the page's document (the
 * next navigation of the tab rejects it), when nobody listens any more.
 * @template T @param {Promise<T>} promise
 */
export function inPage(promise) {
  promise.catch(() => {});
  return promise;
}
