// @ts-check
/** Errors with stable codes; retryability comes from the class (`retryable`), never from message text. */

export class PrerenderError extends Error {
  /** @type {string} */ code = 'PRERENDER_ERROR';
  /** @type {boolean} */ retryable = false;
  /** @param {string} message @param {{ cause?: unknown, code?: string }} [options] */
  constructor(message, options = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    if (options.code) this.code = options.code;
  }
}

/** Bad command line or option value: exit 2. */
export class UsageError extends PrerenderError {
  code = 'USAGE';
}

/** Bad config file (unknown key, wrong type): exit 2. */
export class ConfigError extends PrerenderError {
  code = 'CONFIG';
}

/** A request failed at the network level (refused, reset, DNS). Retryable. */
export class FetchError extends PrerenderError {
  code = 'FETCH';
  retryable = true;
}

/** The origin answered with an error status. 5xx and 429 are retryable. */
export class HttpStatusError extends PrerenderError {
  code = 'HTTP_STATUS';
  /** @param {number} status @param {{ retryAfterMs?: number, why?: string }} [extra] why: said after the status */
  constructor(status, extra = {}) {
    super(`HTTP ${status}${extra.why ? ` ${extra.why}` : ''}`);
    this.status = status;
    this.retryAfterMs = extra.retryAfterMs;
    this.retryable = status >= 500 || status === 429;
  }
}

/** No answer within --timeout. Retryable. */
export class TimeoutError extends PrerenderError {
  code = 'TIMEOUT';
  retryable = true;
}

/** The body is larger than --max-page-bytes. Not retryable. */
export class PageTooLargeError extends PrerenderError {
  code = 'PAGE_TOO_LARGE';
}

/** A body prerender cannot decode; a cut-short compressed stream (`truncated`) is retryable like a short Content-Length. */
export class ContentEncodingError extends PrerenderError {
  code = 'CONTENT_ENCODING';
  /** @param {string} message @param {{ cause?: unknown, truncated?: boolean }} [options] */
  constructor(message, options = {}) {
    super(message, options);
    this.truncated = options.truncated === true;
    this.retryable = this.truncated;
  }
}

/** A name header (or a computed name) that would escape the output directory. */
export class UnsafeFileNameError extends PrerenderError {
  code = 'UNSAFE_FILE_NAME';
}

/** The run was aborted (Ctrl-C or the caller's AbortSignal). */
export class AbortError extends PrerenderError {
  code = 'ABORTED';
}

/** A `loader` answered something that is not a load result. Not retryable: it would answer the same. */
export class LoaderResultError extends PrerenderError {
  code = 'LOADER_RESULT';
}

/** An event listener threw: the crawl runs to its end, then `run()` rejects with this (`cause`, `result`). */
export class ListenerError extends PrerenderError {
  code = 'LISTENER';
  /** @param {string} message @param {{ cause: unknown, result: import('./crawler/index.js').CrawlResult }} options result: the crawl's summary */
  constructor(message, options) {
    super(message, { cause: options.cause });
    this.result = options.result;
  }
}

/** No usable browser for --render. */
export class BrowserError extends PrerenderError {
  code = 'BROWSER';
}

/** @param {unknown} error @returns {boolean} */
export function isRetryable(error) {
  return error instanceof PrerenderError && error.retryable;
}

/** The output directory (or its state) is unusable: disk full, no permission, link out, locked. Exit 2. */
export class OutputError extends PrerenderError {
  code = 'OUTPUT';
}

/** Another crawl holds the output directory's lock. */
export class LockedError extends OutputError {
  code = 'LOCKED';
}

/** A publish or deploy could not be done safely; `current` is never switched after one. */
export class DeployError extends PrerenderError {
  /**
   * @param {string} message @param {{ cause?: unknown, code?: string, detail?: string }} [options] code: one of DEPLOY_*;
   *   detail: a few lines of raw output (ssh's, tar's), shown with --verbose
   */
  constructor(message, options = {}) {
    super(message, options);
    this.code = options.code ?? 'DEPLOY';
    /** @type {string | undefined} */ this.detail = options.detail;
  }
}

/** The shared frontier (Redis) is unreachable, lost its state or holds another configuration. Exit 2. */
export class FrontierError extends PrerenderError {
  /** @param {string} message @param {{ cause?: unknown, code?: string }} [options] */
  constructor(message, options = {}) {
    super(message, { ...options, code: options.code ?? 'FRONTIER' });
  }
}
