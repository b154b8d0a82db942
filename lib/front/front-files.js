// @ts-check
/** The configurations `prerender front` writes into OUT: shipped by deploy with the release, never served. */
export const FRONT_FILES = Object.freeze(['prerender-front.nginx.conf', 'prerender-front.vcl']);
