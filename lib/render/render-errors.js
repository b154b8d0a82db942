// @ts-check
import { PrerenderError } from '../errors.js';

/** The page failed to render within --render-timeout. */
export class RenderTimeoutError extends PrerenderError {
  code = 'RENDER_TIMEOUT';
}

/** The page's renderer process crashed (or was killed): retried once. */
export class RendererCrashError extends PrerenderError {
  code = 'RENDERER_CRASHED';
  retryable = true;
}

/** The browser could not load the page at all. */
export class RenderError extends PrerenderError {
  code = 'RENDER';
}

/** The page went past --render-memory: its renderer was killed, or crashed at V8's heap limit. Not retried: it would do the same. */
export class RenderMemoryError extends PrerenderError {
  code = 'RENDER_MEMORY';
}
