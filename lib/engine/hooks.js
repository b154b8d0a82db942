// @ts-check
/**
 * The engine's hooks: the fixed points where features plug into the phases, registered when the run opens
 * (features.js). Handlers run in registration order. See ARCHITECTURE.md, "Hooks".
 * @typedef {import('./fetch-phase.js').PageInFlight} PageInFlight @typedef {import('../store/records.js').PageRecord} PageRecord
 * @typedef {import('../recrawl/state.js').StoredPage} StoredPage @typedef {import('./write-page.js').PassRun} PassRun
 * @typedef {{ output: Buffer | undefined, written: boolean, placeholders: import('../output/manifest/schema.js').ManifestPage['placeholders'] }} Made
 * @typedef {{
 *   beforeFetch: (page: PageInFlight) => Promise<boolean>,
 *   requestHeaders: (page: PageInFlight) => Record<string, string> | undefined,
 *   sameAs: (record: PageRecord, body: Buffer, before: StoredPage | undefined, sameBody: boolean) => Promise<boolean>,
 *   recorded: (record: PageRecord) => void,
 *   afterPage: (page: PageInFlight) => void,
 *   mustRemake: (pass: PassRun, stored: StoredPage) => boolean,
 *   afterWrite: (pass: PassRun, record: PageRecord, made: Made, stored: StoredPage | undefined) => Promise<void>,
 *   afterPass: () => Promise<void> | void,
 * }} Handlers
 *   beforeFetch: true settles the page without a request, and later handlers are not asked;
 *   sameAs: the new bytes count as the last copy's; mustRemake: a file the pass would reuse is made again.
 * @typedef {keyof Handlers} HookName
 */

/** @type {readonly HookName[]} */
export const HOOK_NAMES = Object.freeze(['beforeFetch', 'requestHeaders', 'sameAs', 'recorded', 'afterPage', 'mustRemake', 'afterWrite', 'afterPass']);

export class Hooks {
  /** @type {{ [name in HookName]: { feature: string, handler: Handlers[name] }[] }} */
  #lists = { beforeFetch: [], requestHeaders: [], sameAs: [], recorded: [], afterPage: [], mustRemake: [], afterWrite: [], afterPass: [] };

  /** @template {HookName} N @param {N} name @param {string} feature who registers, for `features()` @param {Handlers[N]} handler */
  on(name, feature, handler) {
    const list = this.#lists[name];
    if (!list) throw new TypeError(`no engine hook "${name}": the hooks are ${HOOK_NAMES.join(', ')}`);
    /** @type {{ feature: string, handler: Handlers[N] }[]} */ (list).push({ feature, handler });
  }

  /** For tests and --verbose. @returns {Record<string, string[]>} */
  features() {
    return Object.fromEntries(HOOK_NAMES.map((name) => [name, this.#lists[name].map((entry) => entry.feature)]));
  }

  /** @param {HookName} name */
  has(name) {
    return this.#lists[name].length > 0;
  }

  /** @param {PageInFlight} page */
  async beforeFetch(page) {
    for (const { handler } of this.#lists.beforeFetch) if (await handler(page)) return true;
    return false;
  }

  /** @param {PageInFlight} page @returns {Record<string, string> | undefined} */
  requestHeaders(page) {
    /** @type {Record<string, string> | undefined} */ let headers;
    for (const { handler } of this.#lists.requestHeaders) {
      const more = handler(page);
      if (more) headers = { ...headers, ...more };
    }
    return headers;
  }

  /** @param {PageRecord} record @param {Buffer} body @param {StoredPage | undefined} before @param {boolean} sameBody */
  async sameAs(record, body, before, sameBody) {
    let same = false;
    for (const { handler } of this.#lists.sameAs) if (await handler(record, body, before, sameBody)) same = true;
    return same;
  }

  /** @param {PageRecord} record */
  recorded(record) {
    for (const { handler } of this.#lists.recorded) handler(record);
  }

  /** @param {PageInFlight} page */
  afterPage(page) {
    for (const { handler } of this.#lists.afterPage) handler(page);
  }

  /** @param {PassRun} pass @param {StoredPage} stored */
  mustRemake(pass, stored) {
    return this.#lists.mustRemake.some(({ handler }) => handler(pass, stored));
  }

  /** @param {PassRun} pass @param {PageRecord} record @param {Made} made @param {StoredPage | undefined} stored */
  async afterWrite(pass, record, made, stored) {
    for (const { handler } of this.#lists.afterWrite) await handler(pass, record, made, stored);
  }

  async afterPass() {
    for (const { handler } of this.#lists.afterPass) await handler();
  }
}
